// Scoring by tiers (a test's "tiers" in the manifest, see manifest.hpp): what one case earns
// when a figure of merit (Part 13's MFU) is compared with the reference's instead of values
// being checked for equality.
#pragma once

#include <string>

#include "manifest.hpp"
#include "scoring/judge.hpp"
#include "scoring/test_runs.hpp"

namespace dtk::grade {

struct TieredCase {
  double share = 0;  // of the case's points: the first level the ratio reaches, else 0
  double value = 0;  // the student's value (0 when the case failed), for the leaderboard
  bool counts_on_leaderboard = true;  // false for a case judged exactly (below)
  std::string output;                 // what the case earned and why, ending in a newline
};

// The student's run against the reference's: the ratio of their `tiers.value` (higher is
// better, capped at the reference's) decides the share. A run that could not be judged (see
// run_problem) or that has no such value earns nothing. The output quotes the student's run's
// outcomes (records.hpp), never the reference's. A case whose reference recorded other values
// but no `tiers.value` (arguments the function must refuse) is judged exactly, all or nothing,
// and is left off the leaderboard.
TieredCase judge_tiered(const Tiers& tiers, const TestRun& expected, const TestRun& actual,
                        const Tolerances& tolerances);

}  // namespace dtk::grade
