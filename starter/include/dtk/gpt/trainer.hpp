// Training the GPT on tp × cp × dp × pp ranks, as gpt_train does (assignment 3; the pipeline,
// assignment 4).
//
// Ranks: tp fastest, then cp, then dp, then pp (tp_idx = rank % tp, cp_idx = (rank / tp) % cp,
// dp_idx = (rank / (tp · cp)) % dp, pp_idx = rank / (tp · cp · dp)); the expert-parallel groups
// (Part 12) are ep consecutive data-parallel ranks (ep_idx = dp_idx % ep). Every rank of a
// tensor-parallel group holds its slice of the same replica (Part 10: heads, MLP columns,
// vocabulary; with sequence parallelism S/tp positions of the residual stream); a
// context-parallel group splits every sequence's positions (Part 11); an expert-parallel group
// splits the experts (Part 12); the data-parallel ranks read their contiguous share of each
// step's global batch (batches.hpp); the pipeline's stages hold consecutive pieces of the model
// (the embedding, the blocks, the head: GptLayout), balanced by their FLOPs (Part 8.1), and run
// each data-parallel share as micro-batches on Part 8's schedules. Interleaved (Part 14), the
// model is cut into pp · V chunks and pipeline rank r holds the chunks r, r + pp, ...: each
// micro-batch goes round the stages V times. Every group but the pipeline's lies inside one
// stage.
//
// The model never calls the students' functions: gpt_train gives the trainer a GptParallelism
// that binds them (programs/gpt_train_parallelism.cpp), and the trainer builds the model's
// GptLayout and GptCommunication from it. The loss is the mean over the global batch's tokens,
// so every layout trains the same model: the same weights_l2 as one rank, up to rounding.
//
// A step: forward and backward of this rank's share (micro-batch after micro-batch on the
// pipeline's schedule), the gradient sums (each parameter over the ranks holding other tokens of
// the same tensor: Sharing, parameter.hpp), Adam (adam.hpp, with the learning rate warmed up
// linearly over the first steps and then decayed along a cosine to a tenth) or SGD; with ZeRO,
// sharded as model_states.hpp (stages 1, 2) or fully_sharded.hpp (stage 3) say.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "dtk/communicator.hpp"
#include "dtk/gpt/communication.hpp"
#include "dtk/gpt/config.hpp"
#include "dtk/gpt/corpus.hpp"
#include "dtk/gpt/fully_sharded.hpp"
#include "dtk/gpt/mixed_precision.hpp"
#include "dtk/pipeline.hpp"
#include "dtk/trace/timeline.hpp"

namespace dtk::gpt {

enum class Optimizer { Sgd, Adam };
// Part 8.3's two schedules, and Part 14.1's interleaved 1F1B.
enum class PipelineSchedule { GPipe, OneFOneB, Interleaved };

// The peak learning rates gpt_train uses unless told otherwise (--lr): what trains the default
// model on the Bible fastest without diverging.
constexpr double kAdamLearningRate = 2e-3;
constexpr double kSgdLearningRate = 0.3;

struct GptTrainOptions {
  GptConfig model;  // its vocab_size is the corpus's
  int tp = 1, cp = 1, dp = 1, ep = 1, pp = 1;
  bool sequence_parallel = false, zigzag = false;
  int microbatches = 1;  // per data-parallel rank and step: its batch_size / dp sequences cut in m
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  int virtual_stages = 1;  // model chunks per pipeline rank (V; above 1 with Interleaved only)
  int batch_size = 32;     // sequences in the global batch
  long steps = 500;
  double lr = kAdamLearningRate;  // the peak, after the warm-up
  Optimizer optimizer = Optimizer::Adam;
  std::uint32_t seed = 1234;    // the starting weights and the batches
  int eval_every = 0;           // steps between validation losses (0: steps / 10)
  int validation_windows = 32;  // of seq_len tokens, spread over the held-out text
  int sample_chars = 0;         // characters written with the trained model
  double temperature = 0.8;
  bool record_timeline = false;  // every step's forward, backward and Communicator calls
  // Above 0: the data-parallel gradient sum runs in buckets of this many MB during the backward
  // (Part 15's assign_buckets and GradientBuckets); 0: one sum after the backward.
  double bucket_mb = 0;
  // What the blocks keep for the backward (config.hpp's Recompute): the same weights, bit for
  // bit, whatever it is.
  Recompute recompute = Recompute::None;
  // ZeRO (model_states.hpp): 0 every rank keeps all its model states; 1 the optimizer's states
  // sharded over the ranks that sum each gradient; 2 the summed gradients too; 3 the parameters
  // too, gathered piece by piece while the model runs (fully_sharded.hpp).
  int zero_stage = 0;
  // A bf16 run (a float model, Part 16.2): parameters, gradients and the activations kept held
  // as bf16, the optimizer's master weights and moments in fp32 (mixed_precision.hpp,
  // bf16_store.hpp); at ZeRO stage 3 FSDP's fp32 shards, gathered into bf16 values
  // (fully_sharded.hpp). The same bits on every run of a layout, close to float's, not equal.
  bool bf16 = false;
};

// Why these options cannot train on `ranks` ranks with this corpus, in one sentence naming the
// numbers that disagree; "" when they can.
std::string gpt_options_problem(const GptTrainOptions& options, int ranks, const Corpus& corpus);

// The learning rate of step `step` (from 1) of `steps`: linear warm-up over the first
// min(100, steps / 10) steps, then a cosine from lr down to lr / 10.
double learning_rate(double lr, long step, long steps);

// Where this rank sits in the grid, and its communicators. Each group's ranks are ordered by
// world rank.
struct GptGrid {
  int tp = 1, cp = 1, dp = 1, ep = 1, pp = 1;
  int tp_idx = 0, cp_idx = 0, dp_idx = 0, ep_idx = 0, pp_idx = 0;
  bool sequence_parallel = false, zigzag = false;
  // Inside this rank's stage (the same pp_idx):
  Communicator tp_comm;  // same cp_idx and dp_idx: Part 10's tp_comm
  Communicator cp_comm;  // same tp_idx and dp_idx: Part 11's ring
  Communicator ep_comm;  // ep consecutive dp ranks, same tp_idx and cp_idx: Part 12's ep_comm
  // The gradient sums: every rank of the same tp_idx (dp · cp ranks: the other tokens of a
  // tensor-parallel slice), the replicas of this rank's experts (the same tp_idx and ep_idx), and
  // the whole stage (replicated parameters under sequence parallelism).
  Communicator replica_comm, expert_replica_comm, stage_comm;
  // A Llama with fewer key/value heads than tp: every rank of the stage holding this rank's
  // key/value heads (tp/kv tensor-parallel ranks, times dp · cp), which sum their K and V
  // columns' gradients. GptRun makes it from the layout; else it is replica_comm's ranks.
  Communicator key_value_replica_comm;
  // Across the stages: the pipeline (same tp_idx, cp_idx and dp_idx, ordered by pp_idx), and
  // every rank of the same tp_idx (the losses, which only the last stage computes, summed).
  Communicator pp_comm, loss_comm;
  // Sequences in the batch the model is running: the trainer sets it before every forward
  // (sequence parallelism's gathers reorder rows by sequence).
  int sequences = 1;
};

// The groups of the grid make_grid splits communicators for (the losses' aside).
enum class GptGroup { Tensor, Context, Expert, Replicas, ExpertReplicas, Stage, Pipeline };

// A grid laid out by code other than make_grid's own (the students' 14.3, bound by gpt_train):
// a world rank's coordinates {tp_idx, cp_idx, dp_idx, pp_idx, ep_idx} and the world ranks of
// each of its groups, in increasing order, for a grid of `sizes` (GptGrid's tp .. pp).
struct GridLayout {
  std::function<std::array<int, 5>(const GptGrid& sizes, int world_rank)> coordinates;
  std::function<std::vector<int>(const GptGrid& sizes, int world_rank, GptGroup group)> group;
};

// This rank's grid (collective over world: it splits the communicators), laid out by `layout`,
// or by make_grid itself in the same order when it is empty.
GptGrid make_grid(const GptTrainOptions& options, const Communicator& world,
                  const GridLayout& layout = {});

// A step's gradients summed over some ranks bucket by bucket, during the backward (Part 15's
// GradientBuckets): parameter i's gradient (sizes[i] elements, in double) handed over as soon as
// it is final, progress() between layers, finish() after the backward with every sum.
struct BucketedSum {
  std::function<void(int parameter, const xt::xtensor<double, 1>& gradient)> gradient_ready;
  std::function<void()> progress;
  std::function<std::vector<xt::xtensor<double, 1>>()> finish;
};

// The students' functions of Parts 10-12, bound by gpt_train (programs/gpt_train_parallelism.cpp):
// the trainer builds the model's layout and communication from them. Empty members are never
// called on a layout that does not need them (tp, cp, ep of 1).
template <class T>
struct GptParallelism {
  // 10.1: the QKV columns rank tp_idx of tp holds (qkv_columns, or gqa_qkv_columns for fewer
  // key/value heads than heads).
  std::function<std::vector<int>(int hidden, int heads, int kv_heads, int tp, int tp_idx)>
      qkv_columns;
  // 11.1: the positions rank cp_idx of cp holds of a sequence of seq_len.
  std::function<std::vector<int>(int seq_len, int cp, int cp_idx, bool zigzag)> cp_positions;
  // 12.1: the experts [begin, end) rank ep_idx of ep holds.
  std::function<std::pair<int, int>(int experts, int ep, int ep_idx)> local_experts;
  // 8.1: the boundaries of pp stages over the model's pieces, from each piece's cost.
  std::function<std::vector<int>(const std::vector<double>& costs, int stages)> partition;
  // 8.3: one stage's order of work in a step of m micro-batches.
  std::function<std::vector<PipeStep>(PipelineSchedule schedule, int stage, int stages, int m)>
      schedule;
  // 8.5: a stage's schedule run on pp_comm. Empty (as the two above) where gpt_train is built
  // without Part 8 (assignment 3's bundle): the trainer then runs no pipeline.
  std::function<void(PipelineStage<T>& stage, const std::vector<PipeStep>& steps,
                     Communicator& pp_comm)>
      run_schedule;
  // 14.3: the grid's coordinates and groups. Empty where gpt_train is built without Part 14:
  // make_grid then lays the grid out itself.
  GridLayout grid_layout;
  // 14.1 and 14.2: this pipeline rank's chunks (chunks[v]: the model's chunk v · pp + pp_idx) run
  // on the interleaved schedule of m micro-batches. Empty where gpt_train is built without Part
  // 14 (assignment 4): the trainer then runs no interleaved schedule.
  std::function<void(const std::vector<PipelineStage<T>*>& chunks, int m, Communicator& pp_comm)>
      run_interleaved;
  // 15.1 and 15.2: one step's gradient sum over `comm`, started during the backward. Empty where
  // gpt_train is built without Part 15 (assignment 4): --bucket_mb is then refused.
  std::function<BucketedSum(const std::vector<std::size_t>& sizes, std::size_t cap_bytes,
                            Communicator& comm)>
      bucketed_sum;
  // 9.3-9.5: ZeRO's gradient shards (stage 1's all-reduce, stage 2's reduce-scatter) and the
  // parameters gathered back. Empty where gpt_train is built without Part 9 (assignment 3's
  // bundle): --zero above 0 is then refused.
  std::function<xt::xtensor<T, 1>(const xt::xtensor<T, 1>&flat_grad, Communicator&comm)>
      zero1_grad_shard, zero2_grad_shard;
  std::function<xt::xtensor<T, 1>(const xt::xtensor<T, 1>& shard, std::size_t numel,
                                  Communicator& comm)>
      zero_gather_params;
  // 16.3: FSDP's blocks (ZeRO-3), the students' FullyShardedBlocks. Empty where gpt_train is
  // built without Part 16 (assignment 3's bundle): --zero 3 is then refused.
  MakeShardedBlocks<T> fully_sharded_blocks;
  // 16.1 and 16.2: a bf16 run's rounding (to_bf16) and optimizer (MixedPrecisionAdam). Empty
  // where gpt_train is built without Part 16: --dtype bf16 is then refused.
  Bf16Rounding to_bf16;
  MakeMixedPrecisionAdam mixed_precision_adam;
  // The model's communication on this grid (the grid outlives the model).
  std::function<GptCommunication<T>(GptGrid& grid)> communication;
};

// What one rank measured.
struct GptRankReport {
  int rank = 0, tp_idx = 0, cp_idx = 0, dp_idx = 0, ep_idx = 0, pp_idx = 0;
  // At most, on this stage (1 without a pipeline): forwards whose backward has not run, over all
  // of the rank's chunks.
  int microbatches_in_flight = 0;
  // Of those, the most the rank's first chunk held at once: its first block keeps that many
  // micro-batches' activations (all of the rank's, without interleaving).
  int first_chunk_in_flight = 0;
  // The pipeline's schedules, every step's: their wall time on this rank, and the part of it in
  // forwards and backwards (the rest is this rank's bubble).
  double pipeline_seconds = 0, pipeline_busy_seconds = 0;
  // Peak bytes: parameters, gradients and optimizer states (the model states, kept from step to
  // step), activations (kept from a forward to its backward), transient (everything else a
  // step holds: layer outputs, gradients of inputs, the flat vectors of the gradient sum and of
  // the optimizer).
  std::size_t parameters = 0, gradients = 0, optimizer = 0, activations = 0, transient = 0;
  std::size_t expert_parameters = 0;  // of the parameters, this rank's experts'
  std::size_t block_activations = 0;  // of the activations, the first block's
  // The training steps' attention cores (ring attention under cp): their wall time (a ring's
  // waits included), and the CPU time of the kernels inside (the work alone).
  double attention_seconds = 0, attention_cpu_seconds = 0;
  // The training steps' gradient sums after the backward, wall time: the data-parallel
  // communication nothing hid (the whole sum; with bucket_mb, what finish() still waited for).
  double exposed_sum_seconds = 0;
  // Bytes sent by the training steps (not the validation, not the sample), by group: tensor,
  // context and expert parallel are the model's communication, data parallel the gradient sums
  // (over dp · cp ranks, tp too for replicated parameters under sequence parallelism), pipeline
  // parallel the streams and their gradients between stages.
  std::uint64_t tensor_parallel_bytes = 0, context_parallel_bytes = 0, data_parallel_bytes = 0,
                expert_parallel_bytes = 0, pipeline_parallel_bytes = 0;
};

struct GptStepRecord {
  long step = 0;
  double loss = 0;      // mean cross-entropy of the global batch
  double aux_loss = 0;  // the load-balancing losses
  double lr = 0;
  double seconds = 0;  // since training began, at the end of the step
  // A mixture of experts: the (token, choice) rows of the global batch each expert got, block
  // after block (L · E values: block l's expert e at l · E + e). Empty for the dense model.
  std::vector<double> expert_rows;
};

struct GptValidation {
  long step = 0;
  double loss = 0;
};

struct GptTrainReport {
  long steps = 0;
  double tokens = 0;   // trained on, the global batches'
  double seconds = 0;  // training steps only (not validation, not sampling)
  double final_loss = 0;
  double val_loss = 0;
  double weights_l2 = 0;  // the L2 norm of all the model's parameters
  double tokens_per_second = 0;
  double flops_per_second = 0;  // training_flops over the steps' seconds
  double gemm_peak = 0;         // gemm_peak_flops of the ranks
  double mfu = 0;               // flops_per_second / gemm_peak
  double bigram_entropy = 0;    // of the training text, nats per character
  std::int64_t parameter_count = 0;
  std::vector<GptStepRecord> history;
  std::vector<GptValidation> validation;
  // The model's pipeline chunks (pp · V of them; one without a pipeline): chunk c holds the
  // pieces [chunk_cuts[c], chunk_cuts[c + 1]), on pipeline rank c % pp.
  std::vector<int> chunk_cuts;
  std::string sample;                   // sample_chars characters, with the prompt "\n" first
  std::vector<GptRankReport> ranks;     // world rank 0 only: every rank's, in rank order
  std::vector<TimelineEvent> timeline;  // world rank 0 only, with record_timeline
};

// Why `parallelism` cannot run these options in one sentence: the functions their pipeline (pp or
// micro-batches above 1, an interleaved schedule), their buckets (bucket_mb) or their ZeRO stage
// run on are not in this build (assignment 3's bundle holds no Part 8, 9, 14 or 15); "" when it
// can.
template <class T>
std::string build_problem(const GptTrainOptions& options, const GptParallelism<T>& parallelism);

// Collective over world (tp · cp · dp · pp ranks); the model in float or double, split as
// `parallelism` says. Rank 0 writes progress lines to `progress`. Throws std::invalid_argument
// when gpt_options_problem or build_problem says why.
template <class T>
GptTrainReport train_gpt(const GptTrainOptions& options, const Corpus& corpus,
                         const Communicator& world, const GptParallelism<T>& parallelism,
                         std::ostream& progress);

}  // namespace dtk::gpt
