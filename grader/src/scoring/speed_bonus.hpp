// The speed bonus (a part's "speed_bonus" in the manifest): a student's collective timed
// against MPI's own in one launch of its own, on no more ranks than the machine has cores.
//
// The bonus must be a property of the code, never of the machine's load: oversubscribed
// timings measure the scheduler (the same ring on 4 ranks and 2 cores ran 1.2x to 6x MPI's
// time from one run to the next), and so do timings taken while other programs run. So the
// grader times after every test of the grading has finished (a batch: after all its gradings,
// one at a time), only when the machine is idle just before and just after (other programs used
// at most the manifest's max_busy of its CPU time), and takes a measurement whose timings spread
// too widely again. When the machine is busy, or the timings still spread, the bonus is
// deferred: said so, and timed again later (dtk-grade --bonus-only), never a lower tier.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "manifest.hpp"
#include "report.hpp"
#include "scoring/test_runs.hpp"

namespace dtk::grade {

struct SpeedMeasurement {
  enum class Outcome {
    timed,     // `ratio` holds the median of (student's time / MPI's time)
    refused,   // no bonus, whatever the load: a wrong result, an exception, ... (`problem`)
    deferred,  // the machine was too busy to time it (`problem` says how): to be timed again
    pending,   // not timed yet: a batch times it after its gradings
  };
  Outcome outcome = Outcome::pending;
  std::optional<double> ratio;
  double spread = 0;               // of the ratios: interquartile range / median
  std::pair<double, double> load;  // busy_share just before and just after the timing
  std::string problem;             // why there is no ratio
};

// The share of the CPU time of the CPUs this process may run on (a workstation's all, a Slurm
// task's own) that went to any program during the next `seconds`, from /proc/stat: the grader
// itself idle meanwhile, it is the other programs' load.
double busy_share(double seconds);

// The functions of the part's bonus that earned all their points in `report`: only they are
// timed (a fast wrong function earns nothing).
std::vector<std::string> eligible_for_bonus(const Part& part, const Report& report);

// Function -> its measurement, for each of `functions`. `launcher` runs the student's runner
// (its test_seconds bound the whole measurement); `cores`: the machine's.
std::map<std::string, SpeedMeasurement> measure_speed(const SpeedBonus& bonus,
                                                      const std::vector<std::string>& functions,
                                                      const Launcher& launcher, int cores);

// Function -> pending, for each of `functions`: what a batch's grading records (the batch times
// them after all its gradings).
std::map<std::string, SpeedMeasurement> pending_speed(const std::vector<std::string>& functions);

// Adds one test per function of the bonus ("Part 7 | my_allreduce: speed bonus", max_score 0)
// with the points its ratio earns (none for a function not timed, not eligible), the ratios
// to the leaderboard when the manifest asks, and the bonus's state to report.bonus_state:
// "pending" or "deferred" when some function still has to be timed, else "timed".
void score_speed_bonus(const Part& part, const std::map<std::string, SpeedMeasurement>& measured,
                       Report& report);

}  // namespace dtk::grade
