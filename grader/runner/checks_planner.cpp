// Part 13: plan_training on (model, cluster, batch) cases whose configs live in grader/configs.
// The student's plan is judged here by the provided simulator, the one the student reads: its
// MFU ("mfu", 0 for an invalid plan) is what the manifest's tiers compare with the reference's
// (the kit's search). The student's plan and its simulation are the test's outcome, shown in
// its feedback; the reference's plan is never shown.
#include <cstdio>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

std::string model_text(const ModelConfig& m) {
  const ParameterCounts params = parameter_counts(m);
  char text[256];
  std::snprintf(text, sizeof text,
                "model %s: %.3g B parameters, %lld layers, hidden %lld, %lld heads (%lld "
                "key/value), vocabulary %lld",
                m.name.c_str(), params.total / 1e9, static_cast<long long>(m.layers),
                static_cast<long long>(m.hidden), static_cast<long long>(m.heads),
                static_cast<long long>(m.kv_heads), static_cast<long long>(m.vocab));
  std::string result = text;
  if (m.mixture_of_experts()) {
    std::snprintf(text, sizeof text, ", %lld experts (top %lld, %.3g B active)",
                  static_cast<long long>(m.experts), static_cast<long long>(m.experts_per_token),
                  params.active / 1e9);
    result += text;
  }
  return result;
}

std::string cluster_text(const std::string& name, const ClusterConfig& c) {
  char text[256];
  std::snprintf(text, sizeof text,
                "cluster %s: %d GPUs, %d per node, %g TFLOP/s and %g GB each, %g GB/s within a "
                "node, %g GB/s between nodes",
                name.c_str(), c.gpus, c.gpus_per_node, c.peak_tflops, c.memory_gb,
                c.intra_node_gbps, c.inter_node_gbps);
  return text;
}

void check_plan_training(CheckContext& context) {
  const TestCase& test = context.test;
  const std::string model_path = context.configs_dir + "/" + test.model + ".json";
  const std::string cluster_path = context.configs_dir + "/" + test.cluster + ".json";
  const ModelConfig model = load_model_config(model_path);
  const ClusterConfig cluster = load_cluster_config(cluster_path);
  context.out.note(model_text(model));
  context.out.note(cluster_text(test.cluster, cluster));
  char batch[128];
  std::snprintf(batch, sizeof batch, "batch %.0f tokens = %.0f sequences of %d", test.tokens,
                test.tokens / test.seq, test.seq);
  context.out.note(batch);
  const TrainingPlan plan = plan_training(model_path, cluster_path, test.tokens, test.seq);
  const SimulatedStep step = simulate_training_step(model, cluster, plan, test.tokens, test.seq);
  context.out.outcome("your plan " + plan_text(plan) + ": " + step_summary(step, cluster));
  context.out.real("mfu", step.valid ? step.mfu : 0);
}

}  // namespace

DTK_GRADE_CHECK(check_plan_training, {"plan_training", CaseKind::plan, /*collective=*/false,
                                      /*typed=*/false});

}  // namespace dtk::grade
