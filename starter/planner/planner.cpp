// Part 13 (optional): plan a training run.
// Declared, with its contract, in include/dtk/planner.hpp; the simulator that judges a plan is
// in include/dtk/planning/simulator.hpp and src/planning/simulator.cpp.
#include <dtk/planner.hpp>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtk {

// Helpers you write (the divisors of a number, the candidates of one dimension, ...) go in an
// anonymous namespace here, so that they stay private to this file:
// namespace {
// ...
// }  // namespace

// dtk:part 13
TrainingPlan plan_training(const std::string& model_config_path,
                           const std::string& cluster_config_path, double global_batch_tokens,
                           int seq_len) {
  // TODO (Part 13): search the layouts, let the simulator judge them.
  //  1. Read the model and the cluster: load_model_config(model_config_path) and
  //     load_cluster_config(cluster_config_path). The batch holds
  //     sequences = global_batch_tokens / seq_len sequences; throw std::invalid_argument when
  //     that is not a whole number >= 1 (or seq_len < 1).
  //  2. Enumerate candidates. The GPUs form a grid: tp * cp * pp * dp == cluster.gpus, so pick
  //     tp, cp and pp among the divisors of the GPU count and dp follows. The rules (the
  //     simulator's broken_rule lists them all): tp divides the attention heads and the
  //     key/value heads; 2 * cp divides seq_len (when cp > 1); pp <= the layers; dp *
  //     microbatches divides the sequences; ep divides the experts and dp (ep = 1 for a dense
  //     model). Then the micro-batches, zero_stage 0 to 3, recompute, sequence_parallel,
  //     and the schedule ("1f1b" or "gpipe").
  //  3. simulate_training_step(model, cluster, plan, global_batch_tokens, seq_len) for each;
  //     keep the valid plan (step.valid) with the highest step.mfu. An invalid plan still
  //     reports an MFU (what it would reach if it fitted): never choose it.
  //  4. Mind the time: the number of candidates is the product of every dimension's choices.
  //     Skip what cannot be valid before simulating, and think about which choices can never
  //     win (does GPipe ever beat 1F1B here? sequence parallelism ever lose?).
  throw NotImplemented("plan_training", "planner/planner.cpp");
}
// dtk:end

}  // namespace dtk
