// Part 13 (provided, read it: it is the lesson): what one training step of a plan costs.
//
// simulate_training_step puts together the cost models of the earlier parts, each term
// commented in simulator.cpp with the Part it comes from:
//   - compute: Part 4's FLOPs (matrix products only), forward + backward (twice the forward)
//     + a recomputed forward, at the cluster's GEMM rate, split over tp and cp, ceil(L / pp)
//     layers per stage, the output head on the last stage;
//   - communication: Part 7's α–β cost of ring collectives, on the link a group uses (within a
//     node when its ranks all sit on one, else between nodes): tensor parallelism's 4
//     all-reduces of the activations per layer and micro-batch (Part 10; with sequence
//     parallelism a reduce-scatter and an all-gather each, the same bytes), context
//     parallelism's key/value blocks passed around the ring (Part 11), expert parallelism's
//     dispatch and combine all-to-alls (Part 12), the pipeline's activations and gradients
//     sent between stages (Part 8), and the data-parallel gradients once per step (Parts 6
//     and 9; ZeRO-2 reduce-scatters them per micro-batch, ZeRO-3 also gathers the
//     parameters twice per micro-batch). Nothing overlaps: a lower bound on real frameworks'
//     MFU, which hide some communication behind computation;
//   - the pipeline's bubble (Part 8): m micro-batches on p stages take (m - 1) times the
//     slowest stage plus one pass through all of them, i.e. (m + p - 1) stage times when the
//     stages are equal;
//   - memory per GPU, on the fullest stage: the model states of Part 9 (2 bytes of parameter,
//     2 of gradient and 12 of optimizer state per parameter; ZeRO shards them over the cp · dp
//     ranks holding the same weights), the activations of Korthikanti et al. (Part 10: s · b ·
//     h · 34 bytes per layer and micro-batch, divided by tp with sequence parallelism, by cp
//     with context parallelism (Part 11); the attention's scores, 5 · a · s more per token, are
//     never stored, as in FlashAttention; only each layer's input kept with recomputation)
//     times the micro-batches in flight (Part 8: min(p, m) on the first stage of 1F1B, all m
//     with GPipe), and the transient buffers (the last stage's logits, ZeRO-3's gathered
//     layers).
// A plan is valid when its sizes fit the model and the cluster (each rule below) and its
// memory fits the GPU's.
#pragma once

#include <string>

#include "dtk/planning/cluster_config.hpp"
#include "dtk/planning/model_config.hpp"
#include "dtk/planning/training_plan.hpp"

namespace dtk {

// Where one step's time goes, in seconds, on the slowest pipeline stage: the terms add up to
// the step's time.
struct StepTime {
  double compute = 0;           // forward, backward and recomputed passes (Part 4)
  double tensor_parallel = 0;   // Part 10: activations all-reduced within the tp group
  double context_parallel = 0;  // Part 11: key/value blocks around the cp ring
  double expert_parallel = 0;   // Part 12: dispatch and combine
  double pipeline = 0;          // Part 8: activations and gradients sent between stages
  double bubble = 0;            // Part 8: waiting for the other stages
  double data_parallel = 0;     // Parts 6 and 9: gradients summed, ZeRO's gathers
};

// The memory of the fullest GPU (the first or the last pipeline stage), in GB (10⁹ bytes).
struct StepMemory {
  double parameters = 0, gradients = 0, optimizer = 0;  // Part 9's model states
  double activations = 0;  // kept from forward to backward, every micro-batch in flight
  double transient = 0;    // the logits (last stage), ZeRO-3's gathered layers
  double total() const { return parameters + gradients + optimizer + activations + transient; }
};

struct SimulatedStep {
  bool valid = false;
  // Why not, one sentence naming the rule ("pp = 5 does not divide ..." or the memory it needs).
  std::string why_invalid;
  // One step on global_batch_tokens. A plan over the GPU's memory still gets its time and MFU
  // (what it would reach if it fit: see what recomputation or ZeRO would buy), but it is not
  // valid: it cannot run. A plan that breaks a rule of the layout gets zeros.
  double step_seconds = 0;
  double peak_memory_gb = 0;  // memory.total()
  double mfu = 0;  // model FLOPs per second over the GPUs' peak: training_flops / (step_seconds ·
                   // gpus · peak_tflops)
  StepTime time;
  StepMemory memory;
};

// The step of `plan` training `model` on `cluster` with a global batch of global_batch_tokens
// tokens in sequences of seq_len. Deterministic, and fast (under a microsecond for a valid
// plan): a search may call it hundreds of thousands of times. Throws std::invalid_argument when
// no plan could train this batch (seq_len < 1, the tokens not a positive multiple of seq_len, a
// GPT-2 sequence longer than its learned positions).
SimulatedStep simulate_training_step(const ModelConfig& model, const ClusterConfig& cluster,
                                     const TrainingPlan& plan, double global_batch_tokens,
                                     int seq_len);

// Part 10's activations (Korthikanti et al., 2022): the bytes one layer keeps for its backward
// pass on one GPU, for a micro-batch of `sequences` sequences of seq_len tokens, under the plan's
// tp, sequence parallelism and cp: s · b · h · (34 + 5 · a · s / h) on one GPU with 2-byte
// values, the 34 divided by tp with sequence parallelism (10 + 24 / tp without), the scores'
// 5 · a · s by tp, all of it by cp. keep_scores = false leaves out the scores (5 · a · s per
// token), which FlashAttention never stores: the simulator's attention, and the GPT's kernels.
// A mixture of experts keeps its MLP's activations for each of a token's k experts.
double layer_activation_bytes(const ModelConfig& model, const TrainingPlan& plan, double sequences,
                              int seq_len, int value_bytes, bool keep_scores);

// One line: "valid: step 2.31 s, 71.2 of 80 GB per GPU, MFU 0.412", or "invalid: <why>".
std::string step_summary(const SimulatedStep& step, const ClusterConfig& cluster);

}  // namespace dtk
