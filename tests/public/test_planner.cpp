// Part 13 public tests: plan_training on the two public cases, judged by the provided simulator
// as the grader judges them, with the simulator's answer shown. One rank:
//   ./build/tests/test_planner
// The grader runs the same check on held-out models and clusters (handout, Part 13): each case
// scores by the plan's MFU over the MFU of the kit's own search, in tiers; these two are
// among its cases.
#include "dtk_test.hpp"

#include <dtk/planner.hpp>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace {

constexpr int kRanks = 1;  // serial; tests/public/CMakeLists.txt reads the rank count here

const std::string kConfigs = std::string(DTK_STARTER_DIR) + "/src/planning/configs/";

struct PublicCase {
  const char* what;
  std::string model, cluster;
  double tokens;
  int seq_len;
  double best_mfu;  // what the kit's search reaches (the grader's reference)
};

const PublicCase kLlama{"Llama-3-8B on 64 H100s, 4M tokens in sequences of 8192",
                        kConfigs + "llama3_8b.json",
                        kConfigs + "h100_80gb_x64.json",
                        4194304,
                        8192,
                        0.668};
const PublicCase kMixtral{"Mixtral-8x7B on 32 A100s, 2M tokens in sequences of 4096",
                          kConfigs + "mixtral_8x7b.json",
                          kConfigs + "a100_80gb_x32.json",
                          2097152,
                          4096,
                          0.705};

// Full marks on a case take at least this share of the search's MFU (the manifest's first tier).
constexpr double kFullMarks = 0.97;

// How the grader scores the step: an invalid plan scores 0, whatever MFU it would reach (with
// `why`, the simulator's reason); a valid one by its MFU over the search's.
std::string verdict(const dtk::SimulatedStep& step, const PublicCase& c, bool why) {
  if (!step.valid) {
    return why ? "your plan is not valid (" + step.why_invalid +
                     "), and an invalid plan scores 0 whatever MFU it would reach"
               : "an invalid plan scores 0 whatever MFU it would reach";
  }
  char text[96];
  std::snprintf(text, sizeof text, "yours, MFU %.3f, is %.3f of it", step.mfu,
                step.mfu / c.best_mfu);
  return text;
}

// Plans the case and returns its step; with `print`, prints the plan and what the simulator says
// of it (once per case: the MFU test prints, the validity test does not repeat it).
dtk::SimulatedStep plan_and_simulate(const PublicCase& c, bool print) {
  const auto start = std::chrono::steady_clock::now();
  const dtk::TrainingPlan plan = dtk::plan_training(c.model, c.cluster, c.tokens, c.seq_len);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const dtk::ClusterConfig cluster = dtk::load_cluster_config(c.cluster);
  const dtk::SimulatedStep step = dtk::simulate_training_step(dtk::load_model_config(c.model),
                                                              cluster, plan, c.tokens, c.seq_len);
  if (!print) return step;
  std::printf(
      "%s:\n  your plan %s (found in %.2f s here; the grader compiles planner.cpp at -O0 and "
      "allows 2 s)\n  %s\n  the kit's search reaches MFU %.3f: %s\n",
      c.what, dtk::plan_text(plan).c_str(), seconds, dtk::step_summary(step, cluster).c_str(),
      c.best_mfu, verdict(step, c, /*why=*/false).c_str());
  return step;
}

void check_valid(dtk::testing::Checks& check, const PublicCase& c) {
  const dtk::SimulatedStep step = plan_and_simulate(c, /*print=*/false);
  check.that(step.valid, std::string(c.what) + ": the plan is not valid: " + step.why_invalid);
}

void check_mfu(dtk::testing::Checks& check, const PublicCase& c) {
  const dtk::SimulatedStep step = plan_and_simulate(c, /*print=*/true);
  char mfu[160];
  std::snprintf(mfu, sizeof mfu, "MFU %.3f, %.3f of the kit's search's %.3f (full marks from %.2f)",
                step.mfu, step.mfu / c.best_mfu, c.best_mfu, kFullMarks);
  check.that(step.valid && step.mfu >= kFullMarks * c.best_mfu,
             c.what + std::string(": ") + (step.valid ? mfu : verdict(step, c, /*why=*/true)));
}

}  // namespace

TEST_CASE("Part 13 | plan_training: Llama-3-8B on 64 H100s: a valid plan", "[part13]") {
  dtk::testing::on_every_rank(kRanks,
                              [](dtk::testing::Checks& check) { check_valid(check, kLlama); });
}

TEST_CASE("Part 13 | plan_training: Llama-3-8B on 64 H100s: MFU within 0.97 of the kit's search",
          "[part13]") {
  dtk::testing::on_every_rank(kRanks,
                              [](dtk::testing::Checks& check) { check_mfu(check, kLlama); });
}

TEST_CASE("Part 13 | plan_training: Mixtral-8x7B on 32 A100s: a valid plan", "[part13]") {
  dtk::testing::on_every_rank(kRanks,
                              [](dtk::testing::Checks& check) { check_valid(check, kMixtral); });
}

TEST_CASE("Part 13 | plan_training: Mixtral-8x7B on 32 A100s: MFU within 0.97 of the kit's search",
          "[part13]") {
  dtk::testing::on_every_rank(kRanks,
                              [](dtk::testing::Checks& check) { check_mfu(check, kMixtral); });
}

TEST_CASE(
    "Part 13 | plan_training: a batch that is not whole sequences throws "
    "std::invalid_argument",
    "[part13]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    bool threw = false;
    try {
      dtk::plan_training(kLlama.model, kLlama.cluster, 8192 * 3 + 1, 8192);
    } catch (const std::invalid_argument&) {
      threw = true;
    }
    check.that(threw, "25,577 tokens in sequences of 8192: expected std::invalid_argument");
  });
}

TEST_CASE("Part 13 | plan_training: a missing config throws std::runtime_error", "[part13]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    bool threw = false;
    try {
      dtk::plan_training(kConfigs + "no_such_model.json", kLlama.cluster, 4194304, 8192);
    } catch (const std::runtime_error&) {
      threw = true;
    }
    check.that(threw, "a model config that does not exist: expected std::runtime_error");
  });
}
