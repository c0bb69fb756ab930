// Part 8 (assignment 2): pipeline parallelism. The model's layers are cut into num_stages
// consecutive stages, one per pipeline rank; a batch is cut into micro-batches that flow through
// the stages forward and back. You implement these functions in pipeline/pipeline.cpp.
//
// Conventions used throughout:
//   - stages are numbered 0 .. num_stages - 1 (stage 0 holds the first layers), micro-batches
//     0 .. num_microbatches - 1; the letters p and m in comments are num_stages and
//     num_microbatches;
//   - an activation is a (rows, width) tensor: one micro-batch's rows through a stage's last
//     layer; its gradient has the same shape;
//   - a bad argument (a count below 1, a stage outside 0 .. p - 1, ...) throws
//     std::invalid_argument with a message naming the function and the argument.
#pragma once

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "dtk/communicator.hpp"
#include "dtk/not_implemented.hpp"  // what the stubs throw until you write them

namespace dtk {

// ---------------------------------------------------------------------------------------------
// 8.1 Balancing the stages
// ---------------------------------------------------------------------------------------------

// Cuts the layers, with costs layer_costs[0 .. n - 1] (n = layer_costs.size(), every cost
// finite and >= 0), into num_stages contiguous stages. Returns num_stages + 1 boundaries b with
// b[0] = 0 and b[num_stages] = n: stage s owns layers [b[s], b[s + 1]), at least one layer each.
// The cost of a stage is the sum of its layers' costs; the largest stage cost must be as small
// as possible (when several partitions reach it, any of them is right).
// Example: costs {1, 2, 3, 4, 5}, 2 stages -> {0, 3, 5}: stages {1, 2, 3} and {4, 5}, cost 9.
// Requires 1 <= num_stages <= n.
std::vector<int> partition_layers(const std::vector<double>& layer_costs, int num_stages);

// ---------------------------------------------------------------------------------------------
// 8.2 GPipe's clock
// ---------------------------------------------------------------------------------------------

// The forward pass of GPipe on a clock: at tick k, stage j runs micro-batch i exactly when
// i + j == k. Returns num_microbatches + num_stages - 1 ticks; tick k lists its (microbatch,
// stage) pairs in increasing microbatch. Example, 2 micro-batches on 2 stages:
//   {{(0, 0)}, {(0, 1), (1, 0)}, {(1, 1)}}
// Requires num_microbatches >= 1 and num_stages >= 1.
std::vector<std::vector<std::pair<int, int>>> gpipe_clock_cycles(int num_microbatches,
                                                                 int num_stages);

// ---------------------------------------------------------------------------------------------
// 8.3 One stage's order of work in one training step
// ---------------------------------------------------------------------------------------------

enum class PipeOp { Forward, Backward };

// One unit of work of one stage: the forward or the backward pass of one micro-batch.
struct PipeStep {
  PipeOp op;
  int microbatch;
};

// Every schedule below lists each micro-batch's Forward once and its Backward once (2m steps),
// the Backwards in micro-batch order. Requires num_stages >= 1, 0 <= stage < num_stages and
// num_microbatches >= 1.

// GPipe: all forwards, then all backwards: F0 F1 ... F(m-1) B0 B1 ... B(m-1), on every stage.
std::vector<PipeStep> gpipe_schedule(int stage, int num_stages, int num_microbatches);

// 1F1B (PipeDream-Flush, non-interleaved): stage s runs min(num_stages - s - 1, m) warm-up
// forwards, then alternates one forward and one backward while forwards remain, then runs the
// remaining backwards. Example, stage 1 of 4 with 6 micro-batches (2 warm-up forwards):
//   F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5
std::vector<PipeStep> one_f_one_b_schedule(int stage, int num_stages, int num_microbatches);

// ---------------------------------------------------------------------------------------------
// 8.4 Where this rank sits in the 3-D grid
// ---------------------------------------------------------------------------------------------

// Megatron-LM's rank layout: model-parallel fastest, pipeline slowest.
//     mp_idx = rank % mp_size
//     dp_idx = (rank / mp_size) % dp_size
//     pp_idx = rank / (mp_size * dp_size)
struct PipelineInfo {
  int pp_idx;               // this rank's pipeline stage
  Communicator pp_comm;     // the pp_size ranks with this rank's (mp_idx, dp_idx), ordered by
                            // pp_idx: this rank's pipeline, rank s in it runs stage s
  Communicator stage_comm;  // the mp_size * dp_size ranks with this pp_idx, ordered by world
                            // rank: everyone working on this stage
};

// comm: all mp_size * dp_size * pp_size ranks; rank: this rank in it, always
// comm.Get_rank() (the trainer and the tests pass exactly that; it is an argument, as in
// Part 2's get_info, because the layout's formulas are written in it). Compute everything from
// it: Split places the process that calls it, so another rank's number would put this process
// in that rank's groups. Build both communicators with comm.Split(color, key) (every rank
// calls Split, in the same order).
// Requires every size >= 1 and comm.Get_size() == mp_size * dp_size * pp_size.
PipelineInfo get_pipeline_info(const Communicator& comm, int rank, int mp_size, int dp_size,
                               int pp_size);

// ---------------------------------------------------------------------------------------------
// 8.5 Running a schedule
// ---------------------------------------------------------------------------------------------

// Provided interface of one pipeline stage: the kit's model code implements it, and tests
// implement it too. One object per training step. T is float or double.
template <class T>
class PipelineStage {
 public:
  virtual ~PipelineStage() = default;
  virtual bool is_first() const = 0;  // pp_idx == 0: takes its inputs from the data
  virtual bool is_last() const = 0;   // pp_idx == pp_size - 1: computes the loss
  // Shape of the activation this stage receives for micro-batch mb (not the first stage); the
  // gradient it sends back has the same shape.
  virtual std::array<std::size_t, 2> input_shape(int mb) const = 0;
  // Shape of the activation this stage sends for micro-batch mb (not the last stage); the
  // gradient it receives has the same shape.
  virtual std::array<std::size_t, 2> output_shape(int mb) const = 0;
  // Micro-batch mb of the data (first stage only).
  virtual xt::xtensor<T, 2> input_microbatch(int mb) const = 0;
  // Runs the stage's layers on `input` and returns their output; keeps what backward(mb) needs.
  virtual xt::xtensor<T, 2> forward(int mb, const xt::xtensor<T, 2>& input) = 0;
  // The gradient of the loss with respect to the output of forward(mb) (last stage only, after
  // forward(mb)).
  virtual xt::xtensor<T, 2> loss_grad(int mb) const = 0;
  // Takes the gradient of the loss with respect to forward(mb)'s output, accumulates the
  // layers' weight gradients and returns the gradient with respect to forward(mb)'s input.
  virtual xt::xtensor<T, 2> backward(int mb, const xt::xtensor<T, 2>& output_grad) = 0;
};

// Runs `schedule` (one stage's steps, e.g. from gpipe_schedule or one_f_one_b_schedule) on
// `stage`, the stage of rank pp_idx = pp_comm.Get_rank() of the pipeline pp_comm. Every rank
// of pp_comm calls it with its own stage's schedule. For each step:
//   Forward(mb):  input = is_first() ? input_microbatch(mb) : received from rank pp_idx - 1;
//                 output = forward(mb, input); unless is_last(), output goes to rank pp_idx + 1.
//   Backward(mb): grad = is_last() ? loss_grad(mb) : received from rank pp_idx + 1;
//                 input_grad = backward(mb, grad); unless is_first(), it goes to rank pp_idx - 1.
// Data moves with pp_comm's blocking Send, Recv and Sendrecv only, and the run must never
// deadlock, whatever the activations' size, for both schedules above.
template <class T>
void run_pipeline_schedule(PipelineStage<T>& stage, const std::vector<PipeStep>& schedule,
                           Communicator& pp_comm);

}  // namespace dtk
