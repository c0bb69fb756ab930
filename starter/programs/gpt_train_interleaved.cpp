// The students' functions of Part 14 (assignment 4) bound to gpt_train's interleaved pipeline
// (--schedule interleaved --virtual V): each pipeline rank's schedule (14.1) and its executor
// (14.2). Built where the tree holds Part 14 (programs/assignment3.cmake).
#include <dtk/five_dimensional.hpp>

#include "gpt_train.hpp"

namespace dtk::gpt_train {

template <class T>
void bind_interleaved(gpt::GptParallelism<T>& p) {
  p.run_interleaved = [](const std::vector<PipelineStage<T>*>& chunks, int m,
                         Communicator& pp_comm) {
    const std::vector<ChunkStep> steps = interleaved_schedule(
        pp_comm.Get_rank(), pp_comm.Get_size(), static_cast<int>(chunks.size()), m);
    run_interleaved_schedule(chunks, steps, pp_comm);
  };
}

template void bind_interleaved(gpt::GptParallelism<float>&);
template void bind_interleaved(gpt::GptParallelism<double>&);

}  // namespace dtk::gpt_train
