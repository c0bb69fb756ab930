// Part 13: plan_training on (model, cluster, batch) cases whose configs live in grader/configs.
// The student's process only records the plan it returns (as evidence, records.hpp): the plan
// is judged after the launch by the provided simulator, the one the student reads, run in a
// process of the grader's from the kit's config files (derive_plan), so that nothing the
// student's code does to its own process changes the verdict. Its MFU ("mfu", 0 for an invalid
// plan) is what the manifest's tiers compare with the reference's (the kit's search). The
// student's plan and its simulation are the test's outcome, shown in its feedback; the
// reference's plan is never shown.
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <xtensor/xadapt.hpp>

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

// The configs of a case, by the test's names.
std::string model_path(const std::string& configs_dir, const TestCase& test) {
  return configs_dir + "/" + test.model + ".json";
}
std::string cluster_path(const std::string& configs_dir, const TestCase& test) {
  return configs_dir + "/" + test.cluster + ".json";
}

// A plan as evidence: its numbers, then its schedule's characters.
std::vector<std::int64_t> plan_fields(const TrainingPlan& plan) {
  std::vector<std::int64_t> fields = {plan.tp,
                                      plan.cp,
                                      plan.pp,
                                      plan.dp,
                                      plan.ep,
                                      plan.microbatches,
                                      plan.zero_stage,
                                      plan.sequence_parallel ? 1 : 0,
                                      plan.recompute ? 1 : 0};
  for (const unsigned char c : plan.schedule.substr(0, 64)) fields.push_back(c);
  return fields;
}

constexpr std::size_t kPlanNumbers = 9;

bool plan_of_fields(const std::vector<double>& fields, TrainingPlan& plan) {
  if (fields.size() < kPlanNumbers) return false;
  auto number = [&](std::size_t i) { return static_cast<int>(fields[i]); };
  plan.tp = number(0), plan.cp = number(1), plan.pp = number(2), plan.dp = number(3);
  plan.ep = number(4), plan.microbatches = number(5), plan.zero_stage = number(6);
  plan.sequence_parallel = number(7) != 0, plan.recompute = number(8) != 0;
  plan.schedule.clear();
  for (std::size_t i = kPlanNumbers; i < fields.size(); ++i)
    plan.schedule += static_cast<char>(static_cast<unsigned char>(number(i)));
  return true;
}

void check_plan_training(CheckContext& context) {
  const TestCase& test = context.test;
  const std::string model = model_path(context.configs_dir, test);
  const std::string cluster = cluster_path(context.configs_dir, test);
  context.out.note(model_text(load_model_config(model)));
  context.out.note(cluster_text(test.cluster, load_cluster_config(cluster)));
  char batch[128];
  std::snprintf(batch, sizeof batch, "batch %.0f tokens = %.0f sequences of %d", test.tokens,
                test.tokens / test.seq, test.seq);
  context.out.note(batch);
  if (test.seq < 1 || test.tokens < test.seq || std::fmod(test.tokens, test.seq) != 0) {
    // No plan can train it: the contract asks for std::invalid_argument. Judged exactly (a
    // case of a tiered function that records no MFU, tiers.hpp).
    record_refusal(context, "a batch that is not a positive multiple of seq_len",
                   [&] { plan_training(model, cluster, test.tokens, test.seq); });
    return;
  }
  const TrainingPlan plan =
      context.call([&] { return plan_training(model, cluster, test.tokens, test.seq); });
  const std::vector<std::int64_t> fields = plan_fields(plan);
  record_evidence(context.out, "plan",
                  xt::xtensor<std::int64_t, 1>(xt::adapt(fields, {fields.size()})));
}

// The plan's step, simulated from the kit's configs: its MFU (0 if invalid) and, as the test's
// outcome, the plan and its simulation.
void derive_plan(DeriveContext& context) {
  const TestCase& test = context.test;
  const Value* evidence = context.evidence(0, "plan");
  if (evidence == nullptr) return;  // a batch to refuse: nothing to simulate
  TrainingPlan plan;
  RecordWriter& out = *context.out[0];
  if (!plan_of_fields(evidence->values, plan)) {
    out.outcome("no plan was returned");
    out.real("mfu", 0);
    return;
  }
  const ClusterConfig cluster = load_cluster_config(cluster_path(context.configs_dir, test));
  const SimulatedStep step =
      simulate_training_step(load_model_config(model_path(context.configs_dir, test)), cluster,
                             plan, test.tokens, test.seq);
  out.outcome("your plan " + plan_text(plan) + ": " + step_summary(step, cluster));
  out.real("mfu", step.valid ? step.mfu : 0);
}

}  // namespace

DTK_GRADE_DERIVED_CHECK(check_plan_training, derive_plan,
                        {"plan_training", CaseKind::plan, /*collective=*/false, /*typed=*/false});

}  // namespace dtk::grade
