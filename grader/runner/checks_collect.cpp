// Parts 3 and 6: the collectors of model-parallel and data-parallel training. Collectors that
// move values around get numbered values, those that sum get random ones from the seed; the
// communicators come from Grid (never from get_info).
#include <algorithm>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

// Fixed shapes, chosen to expose the known mistakes: more than one row (a forgotten rearrangement
// after Allgather shows), slices wider than one column, and rows != columns.
constexpr std::size_t kBatch = 3, kWidth = 2;

std::string describe(const std::string& what) {
  return "batch " + std::to_string(kBatch) + ", " + what + " " + std::to_string(kWidth);
}

// The columns of block r of a (batch, parts * width) matrix.
auto block_columns(std::size_t r) { return xt::range(r * kWidth, (r + 1) * kWidth); }

// The (batch, blocks.size() * width) matrix with blocks[r] in column block r.
template <class T>
xt::xtensor<T, 2> side_by_side(const std::vector<xt::xtensor<T, 2>>& blocks) {
  xt::xtensor<T, 2> full({kBatch, blocks.size() * kWidth});
  for (std::size_t r = 0; r < blocks.size(); ++r) {
    xt::view(full, xt::all(), block_columns(r)) = blocks[r];
  }
  return full;
}

// What a naive forward collector returns after the known mistakes, from every rank's slice.
template <class T>
void record_gather_mistakes(CheckContext& context, const Grid& grid,
                            const std::vector<xt::xtensor<T, 2>>& group_slices,
                            const std::vector<xt::xtensor<T, 2>>& world_slices) {
  xt::xtensor<T, 2> interleaved({kBatch, group_slices.size() * kWidth});
  auto at = interleaved.begin();
  for (const auto& slice : group_slices) at = std::copy(slice.begin(), slice.end(), at);
  record_mistake(context.out, "result",
                 "Allgather's blocks kept as they land in memory (rows and columns interleaved)",
                 interleaved);
  record_mistake(context.out, "result", "the column blocks in reverse rank order",
                 side_by_side(std::vector(group_slices.rbegin(), group_slices.rend())));
  xt::xtensor<T, 2> sum = xt::zeros<T>({kBatch, kWidth});
  for (const auto& slice : group_slices) sum += slice;
  record_mistake(context.out, "result", "the slices summed instead of gathered", sum);
  if (grid.dp_size > 1) {
    record_mistake(context.out, "result",
                   "the slices of every rank gathered (the world communicator, not mp_comm)",
                   side_by_side(world_slices));
  }
}

// Naive forward: rank mp_idx of each model-parallel group holds column block mp_idx of its
// data-parallel group's matrix, whose element (i, j) is 1000 dp_idx + 100 i + j.
template <class T, xt::xtensor<T, 2> (*Collect)(const xt::xtensor<T, 2>&, Communicator&, int)>
void naive_forward_case(CheckContext& context) {
  Grid grid(context);
  context.out.note(describe("slice width") +
                   "; element (i, j) of the full matrix of data-parallel group g is "
                   "1000 g + 100 i + j");
  std::vector<xt::xtensor<T, 2>> group_slices, world_slices;
  for (int g = 0; g < grid.dp_size; ++g) {
    const xt::xtensor<T, 2> full = numbered_matrix<T>(kBatch, kWidth * grid.mp_size, g);
    for (int r = 0; r < grid.mp_size; ++r) {
      world_slices.push_back(xt::view(full, xt::all(), block_columns(r)));
      if (g == grid.dp_idx) group_slices.push_back(world_slices.back());
    }
  }
  const xt::xtensor<T, 2>& slice = group_slices[grid.mp_idx];
  record_tensor(context.out, "result", moved_through(context, grid.mp_comm, [&] {
                  return Collect(slice, grid.mp_comm, grid.mp_size);
                }));
  record_gather_mistakes(context, grid, group_slices, world_slices);
}

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

}  // namespace

DTK_GRADE_CHECK(naive_collect_forward_input, check_naive_collect_forward_input);
DTK_GRADE_CHECK(naive_collect_forward_output, check_naive_collect_forward_output);
DTK_GRADE_CHECK(megatron_collect_forward_input, check_megatron_collect_forward_input);
DTK_GRADE_CHECK(megatron_collect_forward_output, check_megatron_collect_forward_output);
DTK_GRADE_CHECK(naive_collect_backward_output, check_naive_collect_backward_output);
DTK_GRADE_CHECK(naive_collect_backward_x, check_naive_collect_backward_x);
DTK_GRADE_CHECK(megatron_collect_backward_output, check_megatron_collect_backward_output);
DTK_GRADE_CHECK(megatron_collect_backward_x, check_megatron_collect_backward_x);
DTK_GRADE_CHECK(collect_weight_grad, check_collect_weight_grad);

}  // namespace dtk::grade
