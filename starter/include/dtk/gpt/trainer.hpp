// Training the GPT on tp × cp × dp ranks, as gpt_train does (assignment 3).
//
// Ranks: tp fastest, then cp, then dp (tp_idx = rank % tp, cp_idx = (rank / tp) % cp, dp_idx =
// rank / (tp · cp)). This trainer runs data parallelism: every rank holds the whole model, reads
// its contiguous share of each step's global batch (batches.hpp), and the ranks' gradients are
// summed (one Allreduce of all of them, provided) before every rank takes the same optimizer
// step. The loss is the mean over the global batch's tokens, so any dp trains the same model:
// the same weights_l2 for dp = 1, 2, 3, 4 (up to rounding). Tensor, context and expert
// parallelism are Parts 10, 11 and 12: train_gpt refuses them until their trainers give the
// model their communication (GptCommunication).
//
// A step: forward and backward of this rank's share, the gradient sum, Adam (adam.hpp, with the
// learning rate warmed up linearly over the first steps and then decayed along a cosine to a
// tenth) or SGD.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "dtk/communicator.hpp"
#include "dtk/gpt/config.hpp"
#include "dtk/gpt/corpus.hpp"
#include "dtk/model/timeline.hpp"

namespace dtk::gpt {

enum class Optimizer { Sgd, Adam };

// The peak learning rates gpt_train uses unless told otherwise (--lr): what trains the default
// model on the Bible fastest without diverging.
constexpr double kAdamLearningRate = 2e-3;
constexpr double kSgdLearningRate = 0.3;

struct GptTrainOptions {
  GptConfig model;  // its vocab_size is the corpus's
  int tp = 1, cp = 1, dp = 1, ep = 1;
  bool sequence_parallel = false, zigzag = false;
  int batch_size = 32;  // sequences in the global batch
  long steps = 500;
  double lr = kAdamLearningRate;  // the peak, after the warm-up
  Optimizer optimizer = Optimizer::Adam;
  std::uint32_t seed = 1234;    // the starting weights and the batches
  int eval_every = 0;           // steps between validation losses (0: steps / 10)
  int validation_windows = 32;  // of seq_len tokens, spread over the held-out text
  int sample_chars = 0;         // characters written with the trained model
  double temperature = 0.8;
  bool record_timeline = false;  // every step's forward, backward and Communicator calls
};

// Why these options cannot train on `ranks` ranks with this corpus, in one sentence; "" when
// they can.
std::string gpt_options_problem(const GptTrainOptions& options, int ranks, const Corpus& corpus);

// The learning rate of step `step` (from 1) of `steps`: linear warm-up over the first
// min(100, steps / 10) steps, then a cosine from lr down to lr / 10.
double learning_rate(double lr, long step, long steps);

// What one rank measured.
struct GptRankReport {
  int rank = 0, tp_idx = 0, cp_idx = 0, dp_idx = 0;
  // Peak bytes: parameters, gradients and optimizer states (the model states, kept from step to
  // step), activations (kept from a forward to its backward), transient (everything else a
  // step holds: layer outputs, gradients of inputs, the flat vectors of the gradient sum and of
  // the optimizer).
  std::size_t parameters = 0, gradients = 0, optimizer = 0, activations = 0, transient = 0;
  // Bytes sent while training, by the group of its communicator.
  std::uint64_t tensor_parallel_bytes = 0, context_parallel_bytes = 0, data_parallel_bytes = 0,
                expert_parallel_bytes = 0;
};

struct GptStepRecord {
  long step = 0;
  double loss = 0;      // mean cross-entropy of the global batch
  double aux_loss = 0;  // the load-balancing losses
  double lr = 0;
  double seconds = 0;  // since training began, at the end of the step
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
  std::string sample;                   // sample_chars characters, with the prompt "\n" first
  std::vector<GptRankReport> ranks;     // world rank 0 only: every rank's, in rank order
  std::vector<TimelineEvent> timeline;  // world rank 0 only, with record_timeline
};

// Collective over world (tp · cp · dp ranks); the model in float or double. Rank 0 writes
// progress lines to `progress`. Throws std::invalid_argument when gpt_options_problem says why.
template <class T>
GptTrainReport train_gpt(const GptTrainOptions& options, const Corpus& corpus,
                         const Communicator& world, std::ostream& progress);

}  // namespace dtk::gpt
