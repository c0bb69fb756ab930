// Part 3: the naive model-parallel forward collectors. Every rank draws its own slice from its
// own key; every rank's slices exist only in the reference's run, to name the known mistakes.
// The communicators come from Grid (never from get_info).
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
void record_gather_mistakes(Judgement& judgement, const Grid& grid,
                            const std::vector<xt::xtensor<T, 2>>& group_slices,
                            const std::vector<xt::xtensor<T, 2>>& world_slices) {
  xt::xtensor<T, 2> interleaved({kBatch, group_slices.size() * kWidth});
  auto at = interleaved.begin();
  for (const auto& slice : group_slices) at = std::copy(slice.begin(), slice.end(), at);
  judgement.mistake("result",
                    "Allgather's blocks kept as they land in memory (rows and columns interleaved)",
                    interleaved);
  judgement.mistake("result", "the column blocks in reverse rank order",
                    side_by_side(std::vector(group_slices.rbegin(), group_slices.rend())));
  xt::xtensor<T, 2> sum = xt::zeros<T>({kBatch, kWidth});
  for (const auto& slice : group_slices) sum += slice;
  judgement.mistake("result", "the slices summed instead of gathered", sum);
  if (grid.dp_size > 1) {
    judgement.mistake("result",
                      "the slices of every rank gathered (the world communicator, not mp_comm)",
                      side_by_side(world_slices));
  }
}

// Naive forward: rank mp_idx of each model-parallel group holds column block mp_idx of its
// data-parallel group's matrix, drawn from its own key. `collect` calls the student's collector.
template <class T, class Collect>
void naive_forward_case(CheckContext& context, Collect collect) {
  Grid grid(context);
  context.out.note(describe("slice width") + "; every rank's slice drawn from the seed");
  const xt::xtensor<T, 2> slice = random_matrix<T>(context.rng("slice"), kBatch, kWidth);
  record_tensor(context.out, "result",
                context.call([&] { return collect(slice, grid.mp_comm, grid.mp_size); }));
  context.judge([&](Judgement& judgement) {
    std::vector<xt::xtensor<T, 2>> group_slices, world_slices;
    for (int rank = 0; rank < grid.mp_size * grid.dp_size; ++rank) {
      world_slices.push_back(random_matrix<T>(judgement.rng_of(rank, "slice"), kBatch, kWidth));
      if (rank / grid.mp_size == grid.dp_idx) group_slices.push_back(world_slices.back());
    }
    record_gather_mistakes(judgement, grid, group_slices, world_slices);
  });
}

template <class T>
void forward_input_case(CheckContext& context) {
  naive_forward_case<T>(context, [](const xt::xtensor<T, 2>& x, Communicator& comm, int size) {
    return naive_collect_forward_input<T>(x, comm, size);
  });
}

template <class T>
void forward_output_case(CheckContext& context) {
  naive_forward_case<T>(context, [](const xt::xtensor<T, 2>& out, Communicator& comm, int size) {
    return naive_collect_forward_output<T>(out, comm, size);
  });
}

void check_naive_collect_forward_input(CheckContext& context) {
  run_typed(context, forward_input_case<float>, forward_input_case<double>);
}

void check_naive_collect_forward_output(CheckContext& context) {
  run_typed(context, forward_output_case<float>, forward_output_case<double>);
}

}  // namespace

DTK_GRADE_CHECK(
    check_naive_collect_forward_input,
    {"naive_collect_forward_input", CaseKind::layout, /*collective=*/true, /*typed=*/true, {}});
DTK_GRADE_CHECK(
    check_naive_collect_forward_output,
    {"naive_collect_forward_output", CaseKind::layout, /*collective=*/true, /*typed=*/true, {}});

}  // namespace dtk::grade
