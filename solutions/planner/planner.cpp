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

// dtk:part 13
namespace {

// The divisors of n, increasing.
std::vector<int> divisors(long long n) {
  std::vector<int> found;
  for (long long d = 1; d <= n; ++d) {
    if (n % d == 0) found.push_back(static_cast<int>(d));
  }
  return found;
}

}  // namespace

// Every layout the simulator accepts, but two choices that never win in it: GPipe (the time of
// 1F1B with more activations in flight) and tensor parallelism without sequence parallelism
// (the same bytes sent, more activations kept). Ties keep the first plan found.
TrainingPlan plan_training(const std::string& model_config_path,
                           const std::string& cluster_config_path, double global_batch_tokens,
                           int seq_len) {
  const ModelConfig model = load_model_config(model_config_path);
  const ClusterConfig cluster = load_cluster_config(cluster_config_path);
  if (seq_len < 1) throw std::invalid_argument("plan_training: seq_len must be >= 1");
  const double sequences = global_batch_tokens / seq_len;
  if (!(sequences >= 1) || sequences != static_cast<long long>(sequences))
    throw std::invalid_argument(
        "plan_training: global_batch_tokens must be a positive multiple of seq_len");
  const long long batch = static_cast<long long>(sequences);
  const int heads = static_cast<int>(std::gcd(model.heads, model.kv_heads));

  TrainingPlan best, smallest;
  double best_mfu = 0, least_memory = 0;
  TrainingPlan plan;
  for (int tp : divisors(cluster.gpus)) {
    if (heads % tp != 0) continue;
    plan.tp = tp;
    plan.sequence_parallel = tp > 1;
    for (int cp : divisors(cluster.gpus / tp)) {
      if (cp > 1 && seq_len % (2 * cp) != 0) continue;
      plan.cp = cp;
      for (int pp : divisors(cluster.gpus / (tp * cp))) {
        plan.dp = cluster.gpus / (tp * cp * pp);
        if (pp > model.layers || batch % plan.dp != 0) continue;
        plan.pp = pp;
        for (int ep : divisors(std::gcd(static_cast<long long>(plan.dp), model.experts))) {
          plan.ep = ep;
          for (int m : divisors(batch / plan.dp)) {
            plan.microbatches = m;
            for (int zero = 0; zero <= 3; ++zero) {
              plan.zero_stage = zero;
              for (bool recompute : {false, true}) {
                plan.recompute = recompute;
                const SimulatedStep step =
                    simulate_training_step(model, cluster, plan, global_batch_tokens, seq_len);
                if (step.valid && step.mfu > best_mfu) {
                  best = plan;
                  best_mfu = step.mfu;
                }
                if (step.step_seconds > 0 &&
                    (least_memory == 0 || step.peak_memory_gb < least_memory)) {
                  smallest = plan;
                  least_memory = step.peak_memory_gb;
                }
              }
            }
          }
        }
      }
    }
  }
  // Nothing fits: the plan that comes closest (it scores 0, as every plan would).
  return best_mfu > 0 ? best : smallest;
}
// dtk:end

}  // namespace dtk
