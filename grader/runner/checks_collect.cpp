// Parts 3 and 6: the collectors of model-parallel and data-parallel training. Every rank holds
// random data of random shape; the communicators come from Grid (never from get_info).
#include <xtensor/xview.hpp>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

struct Shape {
  std::size_t batch, width;  // width: the per-rank slice of the split dimension
};

Shape random_shape(const CheckContext& context) {
  Rng rng = context.rng("shape");
  const std::size_t batch = rng.uniform_int(1, 4);
  return {batch, static_cast<std::size_t>(rng.uniform_int(1, 4))};
}

std::string describe(const Shape& shape, const std::string& what) {
  return "batch " + std::to_string(shape.batch) + ", " + what + " " + std::to_string(shape.width);
}

// Naive forward: rank mp_idx of each model-parallel group holds column block mp_idx of a matrix
// of its data-parallel group.
template <class T, xt::xtensor<T, 2> (*Collect)(const xt::xtensor<T, 2>&, Communicator&, int)>
void naive_forward_case(CheckContext& context) {
  Grid grid(context);
  const Shape shape = random_shape(context);
  context.out.note(describe(shape, "slice width"));
  Rng data = context.rng("data dp_idx=" + std::to_string(grid.dp_idx));
  const xt::xtensor<T, 2> full = random_matrix<T>(data, shape.batch, shape.width * grid.mp_size);
  const xt::xtensor<T, 2> slice = xt::view(
      full, xt::all(), xt::range(grid.mp_idx * shape.width, (grid.mp_idx + 1) * shape.width));
  record_tensor(context.out, "result", Collect(slice, grid.mp_comm, grid.mp_size));
}

// A collector taking (tensor, mp_comm, mp_size), on a random (batch, width * mp_size) tensor
// of this rank's own (width_factor 1: (batch, width)).
template <class T, xt::xtensor<T, 2> (*Collect)(const xt::xtensor<T, 2>&, Communicator&, int)>
void per_rank_case(CheckContext& context, int width_factor, const std::string& what) {
  Grid grid(context);
  const Shape shape = random_shape(context);
  context.out.note(describe(shape, what));
  Rng data = context.rng("data rank=" + std::to_string(grid.rank));
  const xt::xtensor<T, 2> mine = random_matrix<T>(data, shape.batch, shape.width * width_factor);
  record_tensor(context.out, "result", Collect(mine, grid.mp_comm, grid.mp_size));
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

// Backward output side: no communication; one process asks for every mp_group_idx.
template <class T, xt::xtensor<T, 2> (*Collect)(const xt::xtensor<T, 2>&, int, int)>
void backward_output_case(CheckContext& context) {
  const int mp = context.test.mp;
  const Shape shape = random_shape(context);
  context.out.note(describe(shape, "output slice width"));
  Rng data = context.rng("data");
  const xt::xtensor<T, 2> output_grad = random_matrix<T>(data, shape.batch, shape.width * mp);
  for (int idx = 0; idx < mp; ++idx) {
    record_tensor(context.out, "mp_group_idx " + std::to_string(idx),
                  Collect(output_grad, idx, mp));
  }
}

template <class T>
void collect_weight_grad_case(CheckContext& context) {
  Grid grid(context);
  Rng rng = context.rng("shape");
  const std::size_t rows = rng.uniform_int(1, 4), cols = rng.uniform_int(1, 4);
  context.out.note("grad_w (" + std::to_string(rows) + ", " + std::to_string(cols) +
                   "), grad_b (1, " + std::to_string(cols) + ")");
  Rng data = context.rng("data rank=" + std::to_string(grid.rank));
  const xt::xtensor<T, 2> grad_w = random_matrix<T>(data, rows, cols);
  const xt::xtensor<T, 2> grad_b = random_matrix<T>(data, 1, cols);
  const auto [total_w, total_b] = collect_weight_grad<T>(grad_w, grad_b, grid.dp_comm);
  record_tensor(context.out, "grad_w", total_w);
  record_tensor(context.out, "grad_b", total_b);
}

}  // namespace

void check_naive_collect_forward_input(CheckContext& context) {
  run_typed(context, naive_forward_case<float, naive_collect_forward_input<float>>,
            naive_forward_case<double, naive_collect_forward_input<double>>);
}

void check_naive_collect_forward_output(CheckContext& context) {
  run_typed(context, naive_forward_case<float, naive_collect_forward_output<float>>,
            naive_forward_case<double, naive_collect_forward_output<double>>);
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

}  // namespace dtk::grade
