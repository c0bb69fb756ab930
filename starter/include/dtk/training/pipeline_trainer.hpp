// Training a deep MLP on mp_size x dp_size x pp_size ranks (assignment 2), as unified_train does
// with --pp_size, --microbatches, --schedule, --optimizer or --zero: pipeline parallel across
// stages, data parallel (with ZeRO) inside each stage, and optionally tensor parallel inside
// each replica of a stage (3-D), your functions doing every communication.
//
// Ranks follow get_pipeline_info's layout (Part 8.4): mp_idx = rank % mp_size, dp_idx = (rank /
// mp_size) % dp_size, pp_idx = rank / (mp_size * dp_size). A step:
//   1. the global batch (batch_size images, the same in every layout for a given seed) is cut
//      into dp_size contiguous parts, one per replica, each cut into num_microbatches
//      micro-batches;
//   2. every rank runs its stage's schedule (gpipe_schedule or one_f_one_b_schedule, 8.3) with
//      run_pipeline_schedule (8.5) on an MlpStage of its layers (partition_layers, 8.1, cuts
//      the layers by parameter count; with mp_size > 1, the pairs of layers that
//      tensor_parallel_split.hpp splits over the model-parallel group);
//   3. ShardedOptimizer sums the gradients over the stage's data-parallel ranks and updates the
//      weights (ZeRO stage 0 to 3, Part 9).
// Any layout, schedule, micro-batch count and ZeRO stage computes the same step: the weights
// after N steps are those of one rank (up to float rounding).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "dtk/communicator.hpp"
#include "dtk/data/mnist.hpp"
#include "dtk/mlp/layer_split.hpp"
#include "dtk/mlp/loss.hpp"
#include "dtk/mlp/mlp.hpp"
#include "dtk/trace/timeline.hpp"
#include "dtk/training/progress_line.hpp"
#include "dtk/training/sharded_optimizer.hpp"
#include "dtk/training/trainer.hpp"

namespace dtk {

enum class Schedule { GPipe, OneFOneB };

struct PipelineTrainOptions {
  std::vector<int> widths = {784, 256, 10};  // input, hidden..., classes
  int pp_size = 1;
  int dp_size = 1;
  int mp_size = 1;        // tensor parallel inside each replica of a stage (needs tensor_parallel)
  bool megatron = false;  // Megatron's split of each pair of layers, else naive
  // Splits a stage's layers over its model-parallel group: split_stage_layers, where the build
  // holds assignment 1's functions (a bundle of assignment 2 alone does not: nullptr).
  TensorParallelSplitter tensor_parallel = nullptr;
  int num_microbatches = 1;
  Schedule schedule = Schedule::OneFOneB;
  OptimizerKind optimizer = OptimizerKind::Sgd;
  int zero_stage = 0;
  TrainOptions train;  // epochs, global batch_size, learning rate, max_steps, progress lines
  std::uint32_t seed = MLP::kDefaultSeed;  // the weights and the order of the training images
  // Record what every rank does in every training step (forward and backward passes, and
  // every Communicator call) for PipelineTrainReport::timeline.
  bool record_timeline = false;
};

// "784-256-256-10": the MLP with these widths.
std::string model_name(const std::vector<int>& widths);

// The refusals of train_pipeline, checked before any rank starts: "" when the options can run
// on `ranks` ranks with a training set of `train_images`, else why not, in one sentence.
std::string pipeline_options_problem(const PipelineTrainOptions& options, int ranks,
                                     std::size_t train_images);

// What one rank measured.
struct RankMeasurements {
  int rank = 0, pp_idx = 0, dp_idx = 0, mp_idx = 0;
  int first_layer = 0, last_layer = 0;    // its stage's layers [first, last)
  std::size_t stage_parameters = 0;       // Ψ of its stage: what its data-parallel group shards
  ModelStateBytes states;                 // held between steps, after the last step
  std::size_t peak_activation_bytes = 0;  // stashed activations
  std::size_t peak_stashed_microbatches = 0;  // micro-batches stashed at once
  std::size_t peak_transient_bytes = 0;
  double bubble_fraction = 0;  // idle share of run_pipeline_schedule's time, median of the steps
  // Bytes it sent while training, by its pipeline, data-parallel and model-parallel
  // communicators.
  std::uint64_t pipeline_bytes = 0, data_parallel_bytes = 0, tensor_parallel_bytes = 0;
  std::uint64_t bytes_sent() const {
    return pipeline_bytes + data_parallel_bytes + tensor_parallel_bytes;
  }
};

struct PipelineTrainReport {
  long steps = 0;
  std::int64_t images = 0;  // trained on, over all replicas
  double seconds = 0;       // training, without the evaluation
  BatchStats last_epoch;    // loss and accuracy over the last epoch's steps
  double test_accuracy = 0;
  double weights_l2 = 0;                // the L2 norm of every weight and bias of the model
  std::vector<RankMeasurements> ranks;  // world rank 0 only: every rank's, in rank order
  // World rank 0 only, with record_timeline: every rank's events of every training step (not of
  // the evaluation), F<mb> and B<mb> and the Communicator's calls.
  std::vector<TimelineEvent> timeline;
};

// Collective over world (mp_size * dp_size * pp_size ranks). Trains on data.train, then measures
// the accuracy on data.test; rank 0 writes progress lines to `progress`. Throws what the students'
// functions throw, and std::runtime_error when one returns something the trainer cannot use.
PipelineTrainReport train_pipeline(const PipelineTrainOptions& options, const Mnist& data,
                                   const Communicator& world, std::ostream& progress);

}  // namespace dtk
