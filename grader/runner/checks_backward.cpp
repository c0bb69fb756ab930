// Part 6: the collectors of Megatron's forward, of both backwards and of the data-parallel weight
// gradients, each rank on random values of its own; the communicators come from Grid (never from
// get_info).
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "check_context.hpp"
#include "collector_shapes.hpp"

namespace dtk::grade {

namespace {

using namespace collectors;

// A collector taking (tensor, mp_comm, mp_size), on a random (batch, width * width_factor)
// tensor of this rank's own; `collect` calls the student's.
template <class T, class Collect>
void per_rank_case(CheckContext& context, int width_factor, const std::string& what,
                   Collect collect) {
  Grid grid(context);
  context.out.note(describe(what));
  const xt::xtensor<T, 2> mine =
      random_matrix<T>(context.rng("data"), kBatch, kWidth * width_factor);
  record_tensor(context.out, "result",
                context.call([&] { return collect(mine, grid.mp_comm, grid.mp_size); }));
}

// The student's collectors of Part 6 that take (tensor, mp_comm, mp_size).
#define DTK_COLLECTOR(function)                                  \
  [](const xt::xtensor<T, 2>& x, Communicator& comm, int size) { \
    return function<T>(x, comm, size);                           \
  }

template <class T>
void megatron_forward_input_case(CheckContext& context) {
  per_rank_case<T>(context, 1, "input slice width", DTK_COLLECTOR(megatron_collect_forward_input));
}

template <class T>
void megatron_forward_output_case(CheckContext& context) {
  per_rank_case<T>(context, 1, "output width", DTK_COLLECTOR(megatron_collect_forward_output));
}

template <class T>
void naive_backward_x_case(CheckContext& context) {
  per_rank_case<T>(context, context.test.mp, "input slice width",
                   DTK_COLLECTOR(naive_collect_backward_x));
}

template <class T>
void megatron_backward_x_case(CheckContext& context) {
  per_rank_case<T>(context, 1, "input slice width", DTK_COLLECTOR(megatron_collect_backward_x));
}

// Backward output side: no communication; one process asks for every mp_group_idx, of a
// random gradient. `collect` calls the student's.
template <class T, class Collect>
void backward_output_case(CheckContext& context, Collect collect) {
  const int mp = context.test.mp;
  context.out.note(describe("output slice width") + "; the gradient drawn from the seed");
  const xt::xtensor<T, 2> output_grad =
      random_matrix<T>(context.rng("output gradient"), kBatch, kWidth * mp);
  for (int idx = 0; idx < mp; ++idx) {
    const std::string name = "mp_group_idx " + std::to_string(idx);
    record_tensor(context.out, name, context.call([&] { return collect(output_grad, idx, mp); }));
    // Naive takes one column block, Megatron the whole gradient: each is the other's mistake.
    context.judge([&](Judgement& judgement) {
      judgement.mistake(name, "the whole gradient", output_grad);
      for (int block = 0; block < mp; ++block) {
        judgement.mistake(
            name, "column block " + std::to_string(block) + " of the gradient",
            xt::xtensor<T, 2>(xt::view(output_grad, xt::all(), block_columns(block))));
      }
    });
  }
}

template <class T>
void naive_backward_output_case(CheckContext& context) {
  backward_output_case<T>(context, [](const xt::xtensor<T, 2>& grad, int idx, int size) {
    return naive_collect_backward_output<T>(grad, idx, size);
  });
}

template <class T>
void megatron_backward_output_case(CheckContext& context) {
  backward_output_case<T>(context, [](const xt::xtensor<T, 2>& grad, int idx, int size) {
    return megatron_collect_backward_output<T>(grad, idx, size);
  });
}

template <class T>
void collect_weight_grad_case(CheckContext& context) {
  Grid grid(context);
  const std::size_t rows = 3, cols = 4;
  context.out.note("grad_w (" + std::to_string(rows) + ", " + std::to_string(cols) +
                   "), grad_b (1, " + std::to_string(cols) + ")");
  Rng data = context.rng("data");
  const xt::xtensor<T, 2> grad_w = random_matrix<T>(data, rows, cols);
  const xt::xtensor<T, 2> grad_b = random_matrix<T>(data, 1, cols);
  const auto [total_w, total_b] =
      context.call([&] { return collect_weight_grad<T>(grad_w, grad_b, grid.dp_comm); });
  context.out.part("grad_w");
  record_tensor(context.out, "grad_w", total_w);
  context.out.part("grad_b");
  record_tensor(context.out, "grad_b", total_b);
}

void check_megatron_collect_forward_input(CheckContext& context) {
  run_typed(context, megatron_forward_input_case<float>, megatron_forward_input_case<double>);
}

void check_megatron_collect_forward_output(CheckContext& context) {
  run_typed(context, megatron_forward_output_case<float>, megatron_forward_output_case<double>);
}

void check_naive_collect_backward_output(CheckContext& context) {
  run_typed(context, naive_backward_output_case<float>, naive_backward_output_case<double>);
}

void check_naive_collect_backward_x(CheckContext& context) {
  run_typed(context, naive_backward_x_case<float>, naive_backward_x_case<double>);
}

void check_megatron_collect_backward_output(CheckContext& context) {
  run_typed(context, megatron_backward_output_case<float>, megatron_backward_output_case<double>);
}

void check_megatron_collect_backward_x(CheckContext& context) {
  run_typed(context, megatron_backward_x_case<float>, megatron_backward_x_case<double>);
}

void check_collect_weight_grad(CheckContext& context) {
  run_typed(context, collect_weight_grad_case<float>, collect_weight_grad_case<double>);
}

}  // namespace

DTK_GRADE_CHECK(
    check_megatron_collect_forward_input,
    {"megatron_collect_forward_input", CaseKind::layout, /*collective=*/true, /*typed=*/true, {}});
DTK_GRADE_CHECK(
    check_megatron_collect_forward_output,
    {"megatron_collect_forward_output", CaseKind::layout, /*collective=*/true, /*typed=*/true, {}});
DTK_GRADE_CHECK(
    check_naive_collect_backward_output,
    {"naive_collect_backward_output", CaseKind::layout, /*collective=*/false, /*typed=*/true, {}});
DTK_GRADE_CHECK(
    check_naive_collect_backward_x,
    {"naive_collect_backward_x", CaseKind::layout, /*collective=*/true, /*typed=*/true, {}});
DTK_GRADE_CHECK(check_megatron_collect_backward_output, {"megatron_collect_backward_output",
                                                         CaseKind::layout,
                                                         /*collective=*/false,
                                                         /*typed=*/true,
                                                         {}});
DTK_GRADE_CHECK(
    check_megatron_collect_backward_x,
    {"megatron_collect_backward_x", CaseKind::layout, /*collective=*/true, /*typed=*/true, {}});
DTK_GRADE_CHECK(check_collect_weight_grad, {"collect_weight_grad",
                                            CaseKind::layout,
                                            /*collective=*/true,
                                            /*typed=*/true,
                                            {"grad_w", "grad_b"}});

}  // namespace dtk::grade
