// The manifest (grader/manifest.json): parts, points, hidden test cases, limits. Instructors
// edit it; dtk-grade validates it and says exactly what is wrong.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "limits.hpp"
#include "test_case.hpp"

namespace dtk::grade {

struct ManifestError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct PlannedTest {
  TestCase test;
  bool is_public = false;
};

// One thing a function must get right, worth a share of its part's points. It is checked on
// each of its cases and passes only if it is right on all of them. An item named after a part
// of the result its check records (CheckInfo::result_parts, e.g. "mp_comm: members and order")
// judges that part only; any other item judges the whole result.
struct RubricItem {
  std::string function;
  std::string name;
  double weight = 0;  // its share of the part's points: weight / the part's total weight
  std::vector<std::string> cases;  // test ids
  bool whole_result = true;
};

// Extra points for collectives of one's own as fast as MPI's: each function is timed against
// its MPI counterpart (CheckInfo::timed_against) in one launch on `ranks` ranks, alternating
// the two, and earns the points of the first tier its median time ratio is within.
struct SpeedTier {
  double within = 0;  // time / MPI's time at most this
  double points = 0;
};
struct SpeedBonus {
  std::vector<std::string> functions;
  std::size_t bytes = 0;  // message size timed
  int ranks = 0;          // never more than the machine's cores: else it is not measured
  int repetitions = 0;    // pairs of timings, after one warm-up pair
  double max_spread = 0;  // interquartile range / median of the pairs' ratios, or measured again
  double max_busy = 0;    // share of the machine's CPU time other programs may use, or deferred
  std::vector<SpeedTier> tiers;  // best first
  bool leaderboard = false;      // the ratios go to results.json's leaderboard
};

// Partial credit by a figure of merit the check records (a test's "tiers", Part 13's MFU): each
// case of the function's items earns a share of the item's points by the ratio of the student's
// value to the reference's (higher is better), the first level the ratio reaches; a case that
// fails otherwise (an exception, a crash, a timeout) earns nothing.
struct TierLevel {
  double at_least = 0;  // the student's value / the reference's, at least this
  double share = 0;     // of the case's points
};
struct Tiers {
  std::string value;              // the real the check records ("mfu")
  std::vector<TierLevel> levels;  // best first
  // The name of results.json's leaderboard entry: the student's value averaged over the
  // function's cases (0 where a case failed), higher is better; "" for none.
  std::string leaderboard;
};

struct Part {
  int number = 0;
  std::string title;
  double points = 0;
  std::string file;  // the student file that holds its functions
  bool optional = false;
  std::vector<std::string> functions;  // the student functions its tests check
  std::vector<PlannedTest> tests;      // every case any of its items is checked on, run once
  std::vector<RubricItem> rubric;
  std::map<std::string, Tiers> tiers;  // function -> its tiers, for functions scored by tiers
  // The rules of its code, its own or else the manifest's: the MPI functions it may call
  // itself, and the Communicator's calls it may make ("Allreduce", "Send", ...).
  std::set<std::string> allowed_mpi, allowed_communicator;
  std::optional<SpeedBonus> speed_bonus;
};

// Every limit and rule is the manifest's: each key is required, the C++ holds no default.
struct Manifest {
  int assignment = 0;  // whose student files are graded (starter/handin/assignment<N>.txt)
  int max_ranks = 0;
  Timeouts timeouts;
  SandboxLimits limits;
  BuildLimits build;
  Tolerances tolerances;
  std::string visibility;
  std::set<std::string> forbidden_symbols;
  // What a forbidden call costs: "part" (all of the part's points) or "function" (the points
  // of the function whose code makes it).
  std::string forbidden_call_costs;
  std::vector<Part> parts;  // enabled parts only, in manifest order
  // Parts with "enabled": false: not assigned, so never graded; the hand-in may lack their
  // functions (the release ships them as provided code).
  std::vector<int> disabled_parts;
};

// Throws ManifestError naming the file and the problem.
Manifest load_manifest(const std::string& path);

// Grades only the parts numbered in `numbers` (dtk-grade --parts): the others are left out of
// `manifest`, as if the assignment had only these. Throws std::invalid_argument naming the
// assignment's parts when one of `numbers` is not among them (or is disabled).
void keep_only_parts(Manifest& manifest, const std::set<int>& numbers);

}  // namespace dtk::grade
