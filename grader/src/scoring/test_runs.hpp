// Running hidden tests under mpirun: the student's runner in the sandbox, the reference runner
// as the grader itself.
//
// A grading's tests run in one launch, on as many ranks as the largest needs; a launch that
// writes no record for group_seconds counts as hung. When a launch dies or hangs, the tests it
// finished keep their outputs, the test it was in is failed (crash or timeout, with the log's
// tail), and the tests after it run again in a fresh launch: a hang or a crash costs only the test
// it happens in. Before a test is charged for running out of time (past the runner's watchdog, or
// caught in a launch that went group_seconds without a record) or for dying after other tests in
// the same process, it is run again alone, in a fresh launch, with the longer limit of a re-run,
// and charged only if it fails there too: a busy machine slows a test down (load never costs
// points), and earlier tests can leave the process broken (memory corrupted by another part's
// function). A launch the runner restarted (records.hpp: "restart") sends the tests it did not
// finish to a fresh launch, charged nothing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "limits.hpp"
#include "records.hpp"
#include "sandbox/sandbox.hpp"
#include "test_case.hpp"

namespace dtk::grade {

struct TestRun {
  bool finished = false;          // every rank wrote the test's end
  std::vector<TestOutput> ranks;  // what each rank wrote, by rank
  std::string problem;            // when not finished: what happened
  bool over_limit = false;        // ended by a limit of the sandbox (the problem says which)
  // When it finished only when run again alone: why it was, one sentence for the feedback.
  std::string rerun;
};

struct Launcher {
  const Sandbox* sandbox = nullptr;
  bool sandboxed = true;
  // The reference's launch: its ranks are given the seed, to make every rank's inputs (the known
  // mistakes, check_context.hpp); a student's ranks get their own input keys only.
  bool judging = false;
  std::string runner;       // dtk-grade-runner, its libdtk_student.so beside it
  std::string runs_dir;     // the grader's: one subdirectory per launch is made here
  std::string configs_dir;  // named model configs
  std::uint64_t seed = 0;
  // Limits and rules, all from the manifest (the reference's limits are the grader's own).
  // The runner's watchdog, one launch at most, and the watchdog of a test run again alone;
  // retry_test_seconds 0: a test past its watchdog is charged at once (a test that died after
  // others is still run again alone, with the first two). compile_seconds is not used here.
  Timeouts timeouts;
  // By graded function: the MPI calls and the Communicator calls the runner does not report in
  // its tests.
  std::map<std::string, std::set<std::string>> allowed_mpi, allowed_communicator;
  std::vector<std::string> hidden_paths;
  // Whether a rank waiting for a message naps between polls (the runner's sched_yield) on any
  // number of ranks. Open MPI yields by itself only with more ranks than cores: a deadlocked test
  // of 2 ranks on 2 cores spun both until its watchdog ended it. Off for the speed bonus's
  // timings, which must measure the code, not naps.
  bool nap_when_waiting = true;
};

// Runs `tests`, the largest first, in a launch on as many MPI ranks as the largest needs (a test
// of fewer ranks runs on the first ones while the others wait asleep, so that each process pays
// Open MPI's start-up once); a launch that dies or hangs leaves the rest to a new launch.
std::map<std::string, TestRun> run_tests(const Launcher& launcher,
                                         const std::vector<TestCase>& tests);

// Open MPI's shared-memory segments (4 MB a rank) of a launch outside the sandbox (the
// reference's, or a grading with --no-sandbox), in a directory of their own under /dev/shm that
// goes with the launch. A launch ends as soon as every rank has written its records, without
// waiting for them to finalize: on a busy machine the segments of the ranks still finalizing
// would otherwise stay in /dev/shm for good (the sandbox gives its launches a private /dev/shm,
// gone with them).
class SegmentDirectory {
 public:
  explicit SegmentDirectory(const std::string& parent = "/dev/shm");
  SegmentDirectory(const SegmentDirectory&) = delete;
  SegmentDirectory& operator=(const SegmentDirectory&) = delete;
  ~SegmentDirectory();  // removes the directory and whatever the ranks left in it

  // The launch's environment setting that puts its segments there; none (Open MPI's default
  // directory) when no directory could be made.
  std::optional<std::string> setting() const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The time limits of one launch.
struct LaunchLimits {
  int test_seconds = 0;   // the runner's watchdog
  int group_seconds = 0;  // the launch without a record written; per group (rank count) in all
};

// The limits of a launch that runs one test again alone: the re-run's watchdog, and as much
// time beyond it for the launch as a launch among others has beyond its watchdog (mpirun's
// start); never less than a launch among others.
LaunchLimits retry_limits(const Launcher& launcher);

// Why a test is run again alone before it is charged: past its watchdog, in a launch that ran
// out of its group time while it ran or before the test program even started (mpirun's start
// of 8 ranks on a busy core), or dead after other tests.
enum class RetryCause { out_of_time, out_of_group_time, not_started, died };

// What one launch of `tests` (in launch order) settled, from its ranks' records and its outcome.
struct SettledLaunch {
  std::map<std::string, TestRun> runs;  // tests finished, or charged for good
  // The first `consumed` tests are settled (in `runs`) or to be run again alone; the rest go to
  // a new launch.
  std::size_t consumed = 0;
  bool retry = false;  // tests[consumed - 1] is to be run again alone (runs holds its first run)
  RetryCause cause = RetryCause::died;
  bool started = true;  // some rank began a test
};

// Decides what happened to each test of one launch (the launch loop of run_tests, without
// launching anything). `retry_for_time`: whether a test out of time is run again alone.
SettledLaunch settle_launch(const std::vector<TestCase>& tests,
                            const std::vector<RankOutput>& per_rank, const Outcome& outcome,
                            const LaunchLimits& limits, bool retry_for_time);

// The test run again alone (`again`, run with `retry`) after its first run `first` (with
// `limits`) failed for `cause`: `again` with the feedback saying both runs.
TestRun after_retry(TestRun again, RetryCause cause, const LaunchLimits& limits,
                    const LaunchLimits& retry);

}  // namespace dtk::grade
