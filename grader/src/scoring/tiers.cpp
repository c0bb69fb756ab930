#include "scoring/tiers.hpp"

#include <algorithm>
#include <cstdio>

#include "scoring/judge.hpp"
#include "text.hpp"

namespace dtk::grade {

namespace {

const Value* real_named(const TestRun& run, const std::string& name) {
  if (run.ranks.empty()) return nullptr;
  const Value* value = run.ranks.front().find(name);
  return value != nullptr && value->kind == Value::Kind::real ? value : nullptr;
}

// What the student's run said of its result.
std::string outcomes(const TestRun& actual) {
  std::string text;
  if (actual.ranks.empty()) return text;
  for (const std::string& outcome : actual.ranks.front().outcomes) text += "  " + outcome + "\n";
  return text;
}

}  // namespace

TieredCase judge_tiered(const Tiers& tiers, const TestRun& expected, const TestRun& actual,
                        const Tolerances& tolerances) {
  TieredCase result;
  const std::string problem = run_problem(expected, actual);
  if (!problem.empty()) {
    result.output = problem;
    return result;
  }
  const Value* reference = real_named(expected, tiers.value);
  if (reference == nullptr && !expected.ranks.empty() && !expected.ranks.front().values.empty()) {
    // A case with no figure of merit (arguments to refuse): right or wrong, as other items.
    const Verdict verdict = judge(expected, actual, tolerances);
    result.share = verdict.passed ? 1 : 0;
    result.output = verdict.output;
    result.counts_on_leaderboard = false;
    return result;
  }
  if (reference == nullptr || !(reference->values[0] > 0)) {
    result.output = "the reference solution has no " + tiers.value +
                    " on this test (a problem of the grading kit, not of the submission)\n";
    return result;
  }
  const Value* mine = real_named(actual, tiers.value);
  const double best = reference->values[0];
  const double value = mine != nullptr ? std::max(mine->values[0], 0.0) : 0;
  // The reference's search is exhaustive: nothing beats it unless the kit is wrong. Such a value
  // earns the full share and counts as the reference's (the leaderboard too), and says so.
  const bool beats = value > best * (1 + 1e-9);
  result.value = std::min(value, best);
  const double ratio = result.value / best;
  for (const TierLevel& level : tiers.levels) {
    if (ratio >= level.at_least) {
      result.share = level.share;
      break;
    }
  }
  std::string earned;
  if (result.share == 1) {
    earned = "all of this case's points";
  } else if (result.share > 0) {
    earned = formatted("%g", result.share) + " of this case's points";
  } else {
    earned = "nothing (the lowest tier asks for " + formatted("%g", tiers.levels.back().at_least) +
             " of the reference's)";
  }
  result.output = tiers.value + " " + formatted("%.4f", value) + ", " +
                  formatted("%.3f", value / best) + " of the reference's " +
                  formatted("%.4f", best) + ": " + earned + ".\n" +
                  (beats ? "  This beats the kit's exhaustive search, which should be "
                           "impossible: it counts as the reference's " +
                               formatted("%.4f", best) +
                               " (capped), and the course staff should hear of it (the "
                               "simulator or the search may be wrong).\n"
                         : "") +
                  outcomes(actual);
  return result;
}

}  // namespace dtk::grade
