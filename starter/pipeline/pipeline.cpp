// Part 8: pipeline parallelism.
// Declared, with the exact contract of every function, in include/dtk/pipeline.hpp.
// In run_pipeline_schedule only pp_comm.Send, pp_comm.Recv and pp_comm.Sendrecv may move data.
#include <dtk/pipeline.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dtk {

// Helpers you write (argument checks, the cost of a range of layers, where a step's input comes
// from, ...) go in an anonymous namespace here, so that they stay private to this file:
// namespace {
// ...
// }  // namespace

// ----------------------------------- 8.1 --------------------------------------------------------

std::vector<int> partition_layers(const std::vector<double>& layer_costs, int num_stages) {
  // TODO (Part 8.1): the linear partition problem.
  //  1. Reject bad input with std::invalid_argument: num_stages < 1, num_stages greater than
  //     the number of layers n, a cost that is negative or not finite.
  //  2. best[k][i] = the smallest possible largest stage cost when the first i layers form k
  //     stages. best[1][i] is the cost of layers [0, i); for k > 1, try every start j of the
  //     last stage: best[k][i] = min over j of max(best[k - 1][j], cost of layers [j, i)).
  //     Remember which j won, for every (k, i).
  //  3. best[num_stages][n] is the answer's cost; walk the remembered j's back from (num_stages,
  //     n) to get the boundaries. Every stage needs at least one layer: j ranges over k - 1 ..
  //     i - 1.
  //  (Binary search on the answer with a greedy check works too, but is harder to make exact
  //  with double costs.)
  throw NotImplemented("partition_layers", "pipeline/pipeline.cpp");
}

// ----------------------------------- 8.2 --------------------------------------------------------

std::vector<std::vector<std::pair<int, int>>> gpipe_clock_cycles(int num_microbatches,
                                                                 int num_stages) {
  // TODO (Part 8.2): tick k holds every (microbatch i, stage j) with i + j == k, in increasing
  // i, for k = 0 .. num_microbatches + num_stages - 2. Which i are possible at tick k? Both
  // 0 <= i < num_microbatches and 0 <= k - i < num_stages must hold. Reject counts below 1.
  throw NotImplemented("gpipe_clock_cycles", "pipeline/pipeline.cpp");
}

// ----------------------------------- 8.3 --------------------------------------------------------

std::vector<PipeStep> gpipe_schedule(int stage, int num_stages, int num_microbatches) {
  // TODO (Part 8.3): F0 .. F(m-1), then B0 .. B(m-1); e.g. {PipeOp::Forward, 0}. Check the
  // arguments (see pipeline.hpp) first: the same checks serve one_f_one_b_schedule.
  throw NotImplemented("gpipe_schedule", "pipeline/pipeline.cpp");
}

std::vector<PipeStep> one_f_one_b_schedule(int stage, int num_stages, int num_microbatches) {
  // TODO (Part 8.3): with m = num_microbatches,
  //  1. warm-up: the forwards F0 .. F(w-1), w = min(num_stages - stage - 1, m);
  //  2. steady state: while forwards remain, one forward then one backward (the oldest
  //     micro-batch still waiting for its backward);
  //  3. cool-down: the remaining backwards, in order.
  //  The last stage has no warm-up: F0 B0 F1 B1 ...; stage 0 of 4 has 3 warm-up forwards.
  throw NotImplemented("one_f_one_b_schedule", "pipeline/pipeline.cpp");
}

// ----------------------------------- 8.4 --------------------------------------------------------

PipelineInfo get_pipeline_info(const Communicator& comm, int rank, int mp_size, int dp_size,
                               int pp_size) {
  // TODO (Part 8.4):
  //  1. Check the sizes: each >= 1, and their product == comm.Get_size().
  //  2. pp_idx = rank / (mp_size * dp_size).
  //  3. pp_comm: the ranks with this rank's (mp_idx, dp_idx), i.e. with the same
  //     rank % (mp_size * dp_size), ordered by pp_idx: comm.Split(color, key).
  //  4. stage_comm: the ranks with this pp_idx, ordered by rank.
  throw NotImplemented("get_pipeline_info", "pipeline/pipeline.cpp");
}

// ----------------------------------- 8.5 --------------------------------------------------------

template <class T>
void run_pipeline_schedule(PipelineStage<T>& stage, const std::vector<PipeStep>& schedule,
                           Communicator& pp_comm) {
  // TODO (Part 8.5): run the steps in order; pp_idx = pp_comm.Get_rank().
  //  1. A step's input: Forward(mb) takes stage.input_microbatch(mb) on the first stage, else
  //     an activation received from pp_idx - 1 into a tensor of shape stage.input_shape(mb)
  //     (xt::xtensor<T, 2>::from_shape(shape)). Backward(mb) takes stage.loss_grad(mb) on the
  //     last stage, else a gradient received from pp_idx + 1, of shape stage.output_shape(mb).
  //  2. Run it: stage.forward(mb, input) or stage.backward(mb, grad).
  //  3. Send its result: a forward's output to pp_idx + 1 (not on the last stage), a backward's
  //     input gradient to pp_idx - 1 (not on the first stage).
  //  4. The deadlock: large messages make Send wait for the matching Recv. In 1F1B's steady
  //     state, stage s sends an activation to s + 1 while s + 1 sends a gradient to s; two Sends
  //     towards each other wait forever. When the next step's input comes from the neighbour
  //     you are sending to, send and receive in ONE pp_comm.Sendrecv, and keep what it received
  //     as the next step's input. The handout (8.5) draws the timeline.
  throw NotImplemented("run_pipeline_schedule", "pipeline/pipeline.cpp");
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests link against exactly these.
// -------------------------------------------------------------------------------------------
template void run_pipeline_schedule<float>(PipelineStage<float>&, const std::vector<PipeStep>&,
                                           Communicator&);
template void run_pipeline_schedule<double>(PipelineStage<double>&, const std::vector<PipeStep>&,
                                            Communicator&);

}  // namespace dtk
