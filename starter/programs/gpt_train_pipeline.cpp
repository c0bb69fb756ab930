// The students' functions of Part 8 (assignment 2) bound to gpt_train's pipeline (--pp,
// --microbatches): the stages' pieces (8.1), each stage's schedule (8.3) and its executor (8.5).
// Built where the tree has Part 8 (programs/gpt_train.cmake): the kit, and assignment 4's
// bundle (its reference, compiled); assignment 3's bundle runs no pipeline.
#include <dtk/pipeline.hpp>

#include "gpt_train.hpp"

namespace dtk::gpt_train {

template <class T>
void bind_pipeline(gpt::GptParallelism<T>& p) {
  p.partition = partition_layers;
  p.schedule = [](gpt::PipelineSchedule schedule, int stage, int stages, int m) {
    return schedule == gpt::PipelineSchedule::GPipe ? gpipe_schedule(stage, stages, m)
                                                    : one_f_one_b_schedule(stage, stages, m);
  };
  p.run_schedule = [](PipelineStage<T>& stage, const std::vector<PipeStep>& steps,
                      Communicator& pp_comm) { run_pipeline_schedule(stage, steps, pp_comm); };
}

template void bind_pipeline(gpt::GptParallelism<float>&);
template void bind_pipeline(gpt::GptParallelism<double>&);

}  // namespace dtk::gpt_train
