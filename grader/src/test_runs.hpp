// Running hidden tests under mpirun: the student's runner in the sandbox, the reference runner
// as the grader itself.
//
// Tests of one rank count run in one launch. When a launch dies or hangs, the tests it finished
// keep their outputs, the test it was in is failed (crash or timeout, with the log's tail), and
// the tests after it run again in a fresh launch: a hang or a crash costs only the test it
// happens in. A test that crashed after other tests in the same process is first run again
// alone, in a fresh launch, and charged only if it dies there too: earlier tests can leave the
// process broken (memory corrupted by another part's function).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "records.hpp"
#include "sandbox.hpp"
#include "test_case.hpp"

namespace dtk::grade {

struct TestRun {
  bool finished = false;          // every rank wrote the test's end
  std::vector<TestOutput> ranks;  // what each rank wrote, by rank
  std::string problem;            // when not finished: what happened
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
  int test_seconds = 0;   // the runner's watchdog
  int group_seconds = 0;  // one launch, at most
  // By graded function: the MPI calls and the Communicator calls the runner does not report in
  // its tests.
  std::map<std::string, std::set<std::string>> allowed_mpi, allowed_communicator;
  std::vector<std::string> hidden_paths;
};

// Runs `tests` on `ranks` MPI ranks (tests needing fewer ranks run on the first ones).
std::map<std::string, TestRun> run_tests(const Launcher& launcher,
                                         const std::vector<TestCase>& tests, int ranks);

}  // namespace dtk::grade
