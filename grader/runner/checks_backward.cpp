// Part 6: the collectors of Megatron's forward, of both backwards and of the data-parallel weight
// gradients. Collectors that move values around get numbered values, those that sum get random
// ones from the seed; the communicators come from Grid (never from get_info).
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "check_context.hpp"
#include "collector_shapes.hpp"

namespace dtk::grade {

namespace {

using namespace collectors;

// A collector taking (tensor, mp_comm, mp_size), on a random (batch, width * width_factor)
// tensor of this rank's own.
template <class T, xt::xtensor<T, 2> (*Collect)(const xt::xtensor<T, 2>&, Communicator&, int)>
void per_rank_case(CheckContext& context, int width_factor, const std::string& what) {
  Grid grid(context);
  context.out.note(describe(what));
  Rng data = context.rng("data rank=" + std::to_string(grid.rank));
  const xt::xtensor<T, 2> mine = random_matrix<T>(data, kBatch, kWidth * width_factor);
  record_tensor(context.out, "result", moved_through(context, grid.mp_comm, [&] {
                  return Collect(mine, grid.mp_comm, grid.mp_size);
                }));
}

template <class T>
void megatron_forward_input_case(CheckContext& context) {
  per_rank_case<T, megatron_collect_forward_input<T>>(context, 1, "input slice width");
}

template <class T>
void megatron_forward_output_case(CheckContext& context) {
  per_rank_case<T, megatron_collect_forward_output<T>>(context, 1, "output width");
}

template <class T>
void naive_backward_x_case(CheckContext& context) {
  per_rank_case<T, naive_collect_backward_x<T>>(context, context.test.mp, "input slice width");
}

template <class T>
void megatron_backward_x_case(CheckContext& context) {
  per_rank_case<T, megatron_collect_backward_x<T>>(context, 1, "input slice width");
}

// Backward output side: no communication; one process asks for every mp_group_idx, of a
// gradient whose element (i, j) is 100 i + j.
template <class T, xt::xtensor<T, 2> (*Collect)(const xt::xtensor<T, 2>&, int, int)>
void backward_output_case(CheckContext& context) {
  const int mp = context.test.mp;
  context.out.note(describe("output slice width") +
                   "; element (i, j) of the gradient is 100 i + j");
  const xt::xtensor<T, 2> output_grad = numbered_matrix<T>(kBatch, kWidth * mp);
  for (int idx = 0; idx < mp; ++idx) {
    const std::string name = "mp_group_idx " + std::to_string(idx);
    record_tensor(context.out, name, Collect(output_grad, idx, mp));
    // Naive takes one column block, Megatron the whole gradient: each is the other's mistake.
    record_mistake(context.out, name, "the whole gradient", output_grad);
    for (int block = 0; block < mp; ++block) {
      record_mistake(context.out, name,
                     "column block " + std::to_string(block) + " of the gradient",
                     xt::xtensor<T, 2>(xt::view(output_grad, xt::all(), block_columns(block))));
    }
  }
}

template <class T>
void collect_weight_grad_case(CheckContext& context) {
  Grid grid(context);
  const std::size_t rows = 3, cols = 4;
  context.out.note("grad_w (" + std::to_string(rows) + ", " + std::to_string(cols) +
                   "), grad_b (1, " + std::to_string(cols) + ")");
  Rng data = context.rng("data rank=" + std::to_string(grid.rank));
  const xt::xtensor<T, 2> grad_w = random_matrix<T>(data, rows, cols);
  const xt::xtensor<T, 2> grad_b = random_matrix<T>(data, 1, cols);
  const auto [total_w, total_b] = moved_through(
      context, grid.dp_comm, [&] { return collect_weight_grad<T>(grad_w, grad_b, grid.dp_comm); });
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
  run_typed(context, backward_output_case<float, naive_collect_backward_output<float>>,
            backward_output_case<double, naive_collect_backward_output<double>>);
}

void check_naive_collect_backward_x(CheckContext& context) {
  run_typed(context, naive_backward_x_case<float>, naive_backward_x_case<double>);
}

void check_megatron_collect_backward_output(CheckContext& context) {
  run_typed(context, backward_output_case<float, megatron_collect_backward_output<float>>,
            backward_output_case<double, megatron_collect_backward_output<double>>);
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
