#include "scoring/test_runs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <future>
#include <optional>
#include <set>
#include <stdexcept>

#include <dtk/single_machine_mpi.hpp>

#include "files.hpp"
#include "launch_file.hpp"

namespace dtk::grade {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxRankFile = 32 << 20;
constexpr std::size_t kLogLines = 15;

std::string last_lines(const std::string& text, std::size_t count) {
  std::size_t at = text.size();
  for (std::size_t n = 0; n <= count && at != std::string::npos && at > 0; ++n) {
    at = text.rfind('\n', at - 1);
  }
  return at == std::string::npos || at == 0 ? text : text.substr(at + 1);
}

std::vector<std::string> mpirun_command(const Launcher& launcher, const std::string& out_dir,
                                        const std::vector<TestCase>& tests, int ranks,
                                        int test_seconds) {
  std::vector<std::string> argv = {"mpirun", "--oversubscribe", "-n", std::to_string(ranks)};
  const bool as_root = geteuid() == 0 && !(launcher.sandboxed && launcher.sandbox->user().enabled);
  if (as_root) argv.push_back("--allow-run-as-root");
  // No seed here: the code under test could read it in /proc/self/cmdline (it is in the
  // launch's file, read and deleted before any test).
  argv.insert(argv.end(), {launcher.runner, "--out", out_dir, "--configs", launcher.configs_dir,
                           "--work", out_dir, "--test-seconds", std::to_string(test_seconds)});
  for (const auto& [option, rules] : {std::pair{"--allowed-mpi", &launcher.allowed_mpi},
                                      {"--allowed-communicator", &launcher.allowed_communicator}}) {
    for (const auto& [function, calls] : *rules) {
      std::string rule = function + "=";  // "get_info=MPI_Allreduce,MPI_Allgather,..."
      for (const std::string& call : calls) rule += (rule.back() == '=' ? "" : ",") + call;
      argv.insert(argv.end(), {option, rule});
    }
  }
  for (const TestCase& test : tests) argv.push_back(test.id());
  return argv;
}

// "MPI reported MPI_ERR_TRUNCATE: message truncated.\n" when the output holds an error MPI
// reported (its fatal error handler prints it in the middle of a long abort message, which the
// output's tail may not show), else "".
std::string mpi_error(const std::string& output) {
  const std::size_t at = output.find("MPI_ERR_");
  if (at == std::string::npos) return "";
  const std::size_t end = output.find('\n', at);
  return "MPI reported " + output.substr(at, end == std::string::npos ? end : end - at) + ".\n";
}

constexpr const char* kHangCauses =
    "probably a deadlock (ranks waiting for each other: in a collective the others never enter or "
    "call in another order, or in a Send or Recv no rank matches) or an endless loop";

std::string seconds_text(int seconds) { return std::to_string(seconds) + " s"; }

std::string unfinished_problem(const std::vector<TestOutput>& outputs, const Outcome& outcome,
                               const LaunchLimits& limits) {
  for (std::size_t r = 0; r < outputs.size(); ++r) {
    if (outputs[r].tampered) {
      return "rank " + std::to_string(r) +
             "'s record of this test was written to by the code under test (a second "
             "\"begin\" line): the test counts as failed";
    }
  }
  // A sandbox limit ended the launch: the verdict, whatever the ranks recorded as it ended
  // (a watchdog firing or a rank dying in the same moment is a race the load decides).
  if (outcome.over_limit == "memory") {
    return "ended: the test program's processes together used more memory than the grader "
           "allows (the manifest's total_memory_mb)";
  }
  if (outcome.over_limit == "disk") {
    return "ended: the test program wrote more to disk than the grader allows (the manifest's "
           "disk_mb)";
  }
  for (std::size_t r = 0; r < outputs.size(); ++r) {
    const std::string rank = "rank " + std::to_string(r);
    if (outputs[r].crash_signal != 0) {
      return rank + " crashed during this test: signal " + std::to_string(outputs[r].crash_signal) +
             " (" + strsignal(outputs[r].crash_signal) + "). " + mpi_error(outcome.output) +
             "The end of the output:\n" + last_lines(outcome.output, kLogLines);
    }
    if (outputs[r].exited) {
      return rank +
             "'s process ended during this test (exit() was called): every rank must "
             "return from the function";
    }
  }
  for (const TestOutput& output : outputs) {
    if (output.timed_out) {
      return "did not finish within " + seconds_text(limits.test_seconds) + ": " + kHangCauses +
             "\n";
    }
  }
  if (outcome.stopped_by_signal) {
    return "a process of the test program was stopped by a signal (SIGSTOP or SIGTSTP) and "
           "would never have gone on: counted as hung";
  }
  if (outcome.timed_out) {
    return "did not finish: its launch wrote no record for " + seconds_text(limits.group_seconds) +
           " (a deadlock, an endless loop or a sleep that ignores the watchdog)";
  }
  std::string text = "the test program stopped during this test (" + outcome.describe() +
                     "): a crash, an abort or an exit. " + mpi_error(outcome.output) +
                     "The end of its output:\n";
  return text + last_lines(outcome.output, kLogLines);
}

// Why a test that did not finish may not be the code's own fault, so that it is run again alone
// before it is charged: it ran out of time (past the watchdog, or in a launch that ran out of
// its group time: a busy machine slows every test down), or it died by itself (a signal, an
// exit, the program stopping), which can be the work of an earlier test in the same process
// (memory it corrupted, a thread it left running). Not when its records were tampered with, nor
// over a limit of the sandbox, nor stopped by a signal (counted as hung), nor when a rank
// crashed or exited and another ran out of time (waiting for it): that crash is its own.
std::optional<RetryCause> retry_cause(const std::vector<TestOutput>& outputs,
                                      const Outcome& outcome) {
  bool past_watchdog = false, dead = false;
  for (const TestOutput& output : outputs) {
    if (output.tampered) return std::nullopt;
    past_watchdog |= output.timed_out;
    dead |= output.crash_signal != 0 || output.exited;
  }
  if (!outcome.over_limit.empty() || outcome.stopped_by_signal) return std::nullopt;
  if (past_watchdog && dead) return std::nullopt;
  if (past_watchdog) return RetryCause::out_of_time;
  if (outcome.timed_out) return dead ? std::nullopt : std::optional{RetryCause::out_of_group_time};
  return RetryCause::died;
}

// Test `test`'s records in `per_rank`: finished when every rank of it wrote its verified end.
TestRun collect(const TestCase& test, const std::vector<RankOutput>& per_rank, bool& began) {
  TestRun run;
  run.finished = true;
  began = false;
  for (int r = 0; r < test.ranks(); ++r) {
    const auto found = per_rank[r].find(test.id());
    began |= found != per_rank[r].end();
    run.ranks.push_back(found == per_rank[r].end() ? TestOutput{} : found->second);
    run.finished &= run.ranks.back().complete && !run.ranks.back().tampered;
  }
  return run;
}

// What each rank of the runner must know but the code under test must not read elsewhere: a
// fresh key for its record hashes and its own input keys (launch_file.hpp), in
// <dir>/rank<R>.key, which that rank reads and deletes before any student code is loaded.
// Returns the record keys, by rank. The directory is new; O_EXCL and O_NOFOLLOW refuse anything
// another process of the sandbox user could have put there meanwhile; readable by the sandbox
// user whatever the umask.
std::vector<std::string> write_launch_files(const std::string& dir, int ranks,
                                            const std::vector<TestCase>& tests, std::uint64_t seed,
                                            bool judging) {
  std::vector<std::string> ids;
  for (const TestCase& test : tests) ids.push_back(test.id());
  std::vector<std::string> record_keys;
  for (int r = 0; r < ranks; ++r) {
    const LaunchFile file = launch_file_for(r, ids, seed, judging);
    const std::string text = file.text(), path = launch_file_path(dir, r);
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    const bool written = fd >= 0 && fchmod(fd, 0644) == 0 &&
                         write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    if (fd >= 0) close(fd);
    if (!written) throw std::runtime_error("cannot write " + path);
    record_keys.push_back(file.record_key);
  }
  return record_keys;
}

// How many groups (rank counts) `tests` hold.
int group_count(const std::vector<TestCase>& tests) {
  std::set<int> counts;
  for (const TestCase& test : tests) counts.insert(test.ranks());
  return std::max<int>(1, counts.size());
}

// The most ranks a test of `tests` needs (1 when there are none).
int largest_ranks(const std::vector<TestCase>& tests) {
  int ranks = 1;
  for (const TestCase& test : tests) ranks = std::max(ranks, test.ranks());
  return ranks;
}

// One launch of `tests`: the records of each rank, and how the launch ended.
struct Launch {
  std::vector<RankOutput> per_rank;
  Outcome outcome;
};

Launch launch(const Launcher& launcher, const std::vector<TestCase>& tests, int ranks,
              const LaunchLimits& limits) {
  // Launches are numbered across calls: a second run_tests on as many ranks (the speed bonus)
  // needs directories of its own.
  static std::atomic<int> launches{0};
  const std::string out_dir =
      launcher.runs_dir + "/r" + std::to_string(ranks) + "-launch" + std::to_string(launches++);
  if (launcher.sandboxed) {
    launcher.sandbox->make_directory(out_dir);  // runs_dir is the grader's: a fresh directory
  } else {
    fs::create_directories(out_dir);
  }
  const std::vector<std::string> keys =
      write_launch_files(out_dir, ranks, tests, launcher.seed, launcher.judging);
  Command command;
  command.argv = mpirun_command(launcher, out_dir, tests, ranks, limits.test_seconds);
  command.cwd = out_dir;
  // The launch goes on while its ranks write records (every test writes its own); it ends
  // after group_seconds without a record, and after group_seconds per group in all.
  command.idle_seconds = limits.group_seconds;
  command.timeout_seconds = limits.group_seconds * group_count(tests);
  command.progress = [&out_dir, ranks] {
    std::uintmax_t written = 0;
    for (int r = 0; r < ranks; ++r) {
      std::error_code error;
      const std::uintmax_t size = fs::file_size(rank_records_path(out_dir, r), error);
      if (!error) written += size;
    }
    return written;
  };
  command.sandboxed = launcher.sandboxed;
  command.hidden_paths = launcher.hidden_paths;
  command.env = {"OMPI_MCA_rmaps_base_oversubscribe=1",
                 "OMPI_MCA_btl_vader_single_copy_mechanism=none", "OPENBLAS_NUM_THREADS=1",
                 "OMP_NUM_THREADS=1"};
  if (launcher.nap_when_waiting) command.env.push_back("OMPI_MCA_mpi_yield_when_idle=1");
  // Every rank is on this machine: no network plugins, no scan of its PCI devices.
  for (const auto& [name, value] : dtk::single_machine_mpi_settings())
    command.env.push_back(name + "=" + value);
  // A session directory per launch: launches run side by side.
  command.env.insert(command.env.end(), {"HOME=" + out_dir, "TMPDIR=" + out_dir});
  std::optional<SegmentDirectory> segments;
  if (!launcher.sandboxed) {
    if (const auto setting = segments.emplace().setting()) command.env.push_back(*setting);
  }
  // Done when every rank has written the end of the last test it takes part in or asked for a
  // fresh process ("restart"), or one rank has died (its last words: "exited", "crashed" or the
  // watchdog's "timeout"); mpirun takes seconds to notice a death by itself.
  std::vector<std::string> last_end(ranks);
  for (const TestCase& test : tests) {
    for (int r = 0; r < test.ranks(); ++r) last_end[r] = "\nend " + test.id() + " ";
  }
  command.done = [&, ranks] {
    bool all_ended = true, all_restart = true;
    for (int r = 0; r < ranks; ++r) {
      const std::string path = rank_records_path(out_dir, r);
      for (const char* death : {"\nexited\n", "\ncrashed ", "\ntimeout "}) {
        if (file_tail_has(path, death)) return true;
      }
      all_ended &= last_end[r].empty() || file_tail_has(path, last_end[r]);
      all_restart &= file_tail_has(path, "\nrestart\n");
    }
    return all_ended || all_restart;
  };
  Launch result;
  result.outcome = launcher.sandbox->run(command);
  result.per_rank.resize(ranks);
  for (int r = 0; r < ranks; ++r) {
    std::string text, problem;
    if (read_regular_file(rank_records_path(out_dir, r), kMaxRankFile, text, problem)) {
      result.per_rank[r] = parse_rank_output(text, keys[r]);
    }
  }
  // What filled the disk goes at once, or every later launch would be over the limit too.
  if (result.outcome.over_limit == "disk") launcher.sandbox->remove_as_sandbox(out_dir);
  return result;
}

}  // namespace

SegmentDirectory::SegmentDirectory(const std::string& parent) {
  std::string name = parent + "/dtk-grade-launch-XXXXXX";
  if (mkdtemp(name.data()) != nullptr) path_ = name;
}

SegmentDirectory::~SegmentDirectory() {
  std::error_code ignored;
  if (!path_.empty()) fs::remove_all(path_, ignored);
}

std::optional<std::string> SegmentDirectory::setting() const {
  if (path_.empty()) return std::nullopt;
  return "OMPI_MCA_btl_vader_backing_directory=" + path_;
}

LaunchLimits retry_limits(const Launcher& launcher) {
  const int test_seconds =
      std::max(launcher.timeouts.retry_test_seconds, launcher.timeouts.test_seconds);
  return {test_seconds, test_seconds + std::max(0, launcher.timeouts.group_seconds -
                                                       launcher.timeouts.test_seconds)};
}

SettledLaunch settle_launch(const std::vector<TestCase>& tests,
                            const std::vector<RankOutput>& per_rank, const Outcome& outcome,
                            const LaunchLimits& limits, bool retry_for_time) {
  bool restarted = false;  // the runner asked for a fresh process after one of these tests
  for (const RankOutput& rank : per_rank) {
    for (const auto& [id, output] : rank) restarted |= output.restart_after;
  }
  SettledLaunch settled;
  for (std::size_t done = 0; done < tests.size(); ++done) {
    const TestCase& test = tests[done];
    bool began = false;
    TestRun run = collect(test, per_rank, began);
    if (run.finished) {
      settled.runs[test.id()] = std::move(run);
      continue;
    }
    settled.consumed = done;
    // A restart leaves this test and the rest to a fresh launch, charged nothing; only after a
    // test finished, so that every launch makes progress.
    if (restarted && done > 0) return settled;
    if (!began && done == 0) {
      // The program did not even start its first test: it would not start for any, unless it
      // ran out of time starting (8 ranks on a busy core), which only a re-run alone tells.
      settled.started = false;
      const std::string problem = "the test program did not start (" + outcome.describe() +
                                  "). The end of its output:\n" +
                                  last_lines(outcome.output, kLogLines);
      const std::optional<RetryCause> cause = retry_cause(run.ranks, outcome);
      const bool slow = retry_for_time && cause == RetryCause::out_of_group_time;
      for (std::size_t t = 0; t < (slow ? 1 : tests.size()); ++t)
        settled.runs[tests[t].id()].problem = problem;
      settled.consumed = slow ? 1 : tests.size();
      settled.retry = slow;
      settled.cause = RetryCause::not_started;
      return settled;
    }
    run.problem = unfinished_problem(run.ranks, outcome, limits);
    run.over_limit = !outcome.over_limit.empty();
    const std::optional<RetryCause> cause = retry_cause(run.ranks, outcome);
    // Only a death in a process of its own counts against a test (a Part 3 that corrupts
    // memory must not cost Part 6 its points), and only running out of time alone, with the
    // longer limit of a re-run (a busy machine must not cost points).
    if (cause && (*cause == RetryCause::died ? done > 0 : retry_for_time)) {
      settled.retry = true;
      settled.cause = *cause;
    }
    settled.runs[test.id()] = std::move(run);
    settled.consumed = done + 1;
    return settled;
  }
  settled.consumed = tests.size();
  return settled;
}

TestRun after_retry(TestRun again, RetryCause cause, const LaunchLimits& limits,
                    const LaunchLimits& retry) {
  // A death's re-run is about the process, not the time: its limit goes unsaid.
  const std::string alone = cause == RetryCause::died
                                ? "run again alone"
                                : "run again alone with " + seconds_text(retry.test_seconds);
  std::string first;
  switch (cause) {
    case RetryCause::out_of_time:
      first = "did not finish within " + seconds_text(limits.test_seconds) + " among other tests";
      break;
    case RetryCause::out_of_group_time:
      first = "was still running when its launch had written no record for " +
              seconds_text(limits.group_seconds) + " among other tests";
      break;
    case RetryCause::not_started:
      first = "the test program did not start within the " + seconds_text(limits.group_seconds) +
              " of its launch among other tests";
      break;
    case RetryCause::died:
      first = "died among other tests";
      break;
  }
  if (again.finished) {
    again.rerun =
        first + "; " + alone + ", in a fresh process, it passed: " +
        (cause == RetryCause::died ? "an earlier test's code can leave the process broken."
                                   : "the machine was probably busy.");
    return again;
  }
  // Hung again, unless a sandbox limit ended it: that is the verdict (its watchdog may have
  // fired in the same moment).
  const bool hung_again = cause != RetryCause::died && !again.over_limit &&
                          std::any_of(again.ranks.begin(), again.ranks.end(),
                                      [](const TestOutput& o) { return o.timed_out; });
  if (hung_again) {
    again.problem = first + ", nor within " + seconds_text(retry.test_seconds) +
                    " run again alone: " + kHangCauses + "\n";
  } else {
    again.problem = first + "; " + alone + ", in a fresh process, it " +
                    (cause == RetryCause::died ? "died again" : "failed again") + ": " +
                    again.problem;
  }
  return again;
}

std::map<std::string, TestRun> run_tests(const Launcher& launcher,
                                         const std::vector<TestCase>& tests) {
  const LaunchLimits limits{launcher.timeouts.test_seconds, launcher.timeouts.group_seconds};
  const LaunchLimits retry = retry_limits(launcher);
  // A test run again alone, and how that went.
  const auto run_again = [&](const TestCase& test, RetryCause cause) {
    const Launch again = launch(launcher, {test}, test.ranks(), retry);
    const SettledLaunch alone = settle_launch({test}, again.per_rank, again.outcome, retry, false);
    return std::pair{after_retry(alone.runs.at(test.id()), cause, limits, retry), alone.started};
  };
  std::map<std::string, TestRun> runs;
  // Re-runs of tests that did not finish go on beside the launches of the tests after them
  // (a submission that hangs in many tests waits for their watchdogs side by side).
  std::vector<std::pair<std::string, std::future<std::pair<TestRun, bool>>>> reruns;
  // The largest first: the ranks a test leaves out wait until the launch ends.
  std::vector<TestCase> remaining = tests;
  std::stable_sort(remaining.begin(), remaining.end(),
                   [](const TestCase& a, const TestCase& b) { return a.ranks() > b.ranks(); });
  while (!remaining.empty()) {
    const Launch first = launch(launcher, remaining, largest_ranks(remaining), limits);
    SettledLaunch settled = settle_launch(remaining, first.per_rank, first.outcome, limits,
                                          launcher.timeouts.retry_test_seconds > 0);
    if (settled.retry && settled.started) {
      const TestCase test = remaining[settled.consumed - 1];
      reruns.emplace_back(test.id(),
                          std::async(std::launch::async, run_again, test, settled.cause));
    } else if (settled.retry) {
      // Whether the program starts alone, with more time, decides what happens to the rest.
      const auto [run, started] = run_again(remaining.front(), settled.cause);
      settled.runs[remaining.front().id()] = run;
      if (!started) {  // it would not start for any
        for (const TestCase& rest : remaining) settled.runs[rest.id()] = run;
        settled.consumed = remaining.size();
      }
    }
    runs.merge(settled.runs);
    remaining.erase(remaining.begin(), remaining.begin() + settled.consumed);
  }
  for (auto& [id, rerun] : reruns) runs[id] = rerun.get().first;
  return runs;
}

}  // namespace dtk::grade
