// Part 3: the naive model-parallel forward collectors. Every rank's slice is numbered (element
// (i, j) of data-parallel group g's full matrix is 1000 g + 100 i + j), so a misplaced value names
// its origin; the communicators come from Grid (never from get_info).
#include <algorithm>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "check_context.hpp"
#include "collector_shapes.hpp"

namespace dtk::grade {

namespace {

using namespace collectors;

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

void check_naive_collect_forward_input(CheckContext& context) {
  run_typed(context, naive_forward_case<float, naive_collect_forward_input<float>>,
            naive_forward_case<double, naive_collect_forward_input<double>>);
}

void check_naive_collect_forward_output(CheckContext& context) {
  run_typed(context, naive_forward_case<float, naive_collect_forward_output<float>>,
            naive_forward_case<double, naive_collect_forward_output<double>>);
}

}  // namespace

DTK_GRADE_CHECK(
    check_naive_collect_forward_input,
    {"naive_collect_forward_input", CaseKind::layout, /*collective=*/true, /*typed=*/true, {}});
DTK_GRADE_CHECK(
    check_naive_collect_forward_output,
    {"naive_collect_forward_output", CaseKind::layout, /*collective=*/true, /*typed=*/true, {}});

}  // namespace dtk::grade
