// The students' functions of Part 14 (assignment 4) bound to gpt_train: its grid of ranks, each
// rank's coordinates and groups (14.3), and its interleaved pipeline (--schedule interleaved
// --virtual V): each pipeline rank's schedule (14.1) and its executor (14.2). Built where the
// tree has Parts 8 and 14 (programs/gpt_train.cmake).
#include <dtk/five_dimensional.hpp>

#include "gpt_train.hpp"

namespace dtk::gpt_train {

namespace {

GridShape shape_of(const gpt::GptGrid& sizes) {
  return {sizes.tp, sizes.cp, sizes.dp, sizes.pp, sizes.ep};
}

// The trainer's groups, as 14.3 names them.
GridGroup grid_group_of(gpt::GptGroup group) {
  switch (group) {
    case gpt::GptGroup::Tensor:
      return GridGroup::Tensor;
    case gpt::GptGroup::Context:
      return GridGroup::Context;
    case gpt::GptGroup::Expert:
      return GridGroup::Expert;
    case gpt::GptGroup::Replicas:
      return GridGroup::DenseGradients;
    case gpt::GptGroup::ExpertReplicas:
      return GridGroup::ExpertGradients;
    case gpt::GptGroup::Stage:
      return GridGroup::Stage;
    case gpt::GptGroup::Pipeline:
      return GridGroup::Pipeline;
  }
  throw std::logic_error("grid_group_of: no such group");
}

}  // namespace

template <class T>
void bind_five_dimensional(gpt::GptParallelism<T>& p) {
  p.grid_layout.coordinates = [](const gpt::GptGrid& sizes, int world_rank) {
    const GridCoordinates at = grid_coordinates(shape_of(sizes), world_rank);
    return std::array<int, 5>{at.tp, at.cp, at.dp, at.pp, at.ep};
  };
  p.grid_layout.group = [](const gpt::GptGrid& sizes, int world_rank, gpt::GptGroup group) {
    return grid_group(shape_of(sizes), world_rank, grid_group_of(group));
  };
  p.run_interleaved = [](const std::vector<PipelineStage<T>*>& chunks, int m,
                         Communicator& pp_comm) {
    const std::vector<ChunkStep> steps = interleaved_schedule(
        pp_comm.Get_rank(), pp_comm.Get_size(), static_cast<int>(chunks.size()), m);
    run_interleaved_schedule(chunks, steps, pp_comm);
  };
}

template void bind_five_dimensional(gpt::GptParallelism<float>&);
template void bind_five_dimensional(gpt::GptParallelism<double>&);

}  // namespace dtk::gpt_train
