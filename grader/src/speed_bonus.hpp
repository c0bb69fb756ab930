// The speed bonus (a part's "speed_bonus" in the manifest): a student's collective timed
// against MPI's own in one launch of its own, on no more ranks than the machine has cores.
//
// Oversubscribed timings measure the scheduler, not the code (the same ring on 4 ranks and 2
// cores ran 1.2x to 6x MPI's time from one run to the next), and so do timings taken while
// other launches run: the grader measures after every test has finished. A measurement whose
// timings spread too widely is taken again, and if it still does, the bonus is "not measured":
// never guessed.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "manifest.hpp"
#include "report.hpp"
#include "test_runs.hpp"

namespace dtk::grade {

struct SpeedMeasurement {
  std::optional<double> ratio;  // median of (student's time / MPI's time), if measured
  double spread = 0;            // of the ratios: interquartile range / median
  std::string problem;          // why there is no ratio, or why it earns nothing
};

// The functions of the part's bonus that earned all their points in `report`: only they are
// timed (a fast wrong function earns nothing).
std::vector<std::string> eligible_for_bonus(const Part& part, const Report& report);

// Function -> its measurement, for each of `functions`. `launcher` runs the student's runner
// (its test_seconds bound the whole measurement); `cores`: the machine's.
std::map<std::string, SpeedMeasurement> measure_speed(const SpeedBonus& bonus,
                                                      const std::vector<std::string>& functions,
                                                      const Launcher& launcher, int cores);

// Adds one test per function of the bonus ("Part 7 | my_allreduce: speed bonus", max_score 0)
// with the points its ratio earns (none for a function not measured, not eligible), and the
// ratios to the leaderboard when the manifest asks.
void score_speed_bonus(const Part& part, const std::map<std::string, SpeedMeasurement>& measured,
                       Report& report);

}  // namespace dtk::grade
