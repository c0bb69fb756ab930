#include "test_runs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <stdexcept>

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
                                        const std::vector<TestCase>& tests, int ranks) {
  std::vector<std::string> argv = {"mpirun", "--oversubscribe", "-n", std::to_string(ranks)};
  const bool as_root = geteuid() == 0 && !(launcher.sandboxed && launcher.sandbox->user().enabled);
  if (as_root) argv.push_back("--allow-run-as-root");
  // No seed here: the code under test could read it in /proc/self/cmdline (it is in the
  // launch's file, read and deleted before any test).
  argv.insert(argv.end(),
              {launcher.runner, "--out", out_dir, "--configs", launcher.configs_dir, "--work",
               out_dir, "--test-seconds", std::to_string(launcher.test_seconds)});
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

std::string unfinished_problem(const std::vector<TestOutput>& outputs, const Outcome& outcome,
                               const Launcher& launcher) {
  for (std::size_t r = 0; r < outputs.size(); ++r) {
    if (outputs[r].tampered) {
      return "rank " + std::to_string(r) +
             "'s record of this test was written to by the code under test (a second "
             "\"begin\" line): the test counts as failed";
    }
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
      return "did not finish within " + std::to_string(launcher.test_seconds) +
             " s: probably a deadlock (ranks waiting for each other: in a collective the others "
             "never enter or call in another order, or in a Send or Recv no rank matches) or an "
             "endless loop\n";
    }
  }
  if (outcome.over_limit == "memory") {
    return "ended: the test program's processes together used more memory than the grader "
           "allows (the manifest's total_memory_mb)";
  }
  if (outcome.over_limit == "disk") {
    return "ended: the test program wrote more to disk than the grader allows (the manifest's "
           "disk_mb)";
  }
  if (outcome.stopped_by_signal) {
    return "a process of the test program was stopped by a signal (SIGSTOP or SIGTSTP) and "
           "would never have gone on: counted as hung";
  }
  if (outcome.timed_out) {
    return "did not finish: its group of tests ran out of its " +
           std::to_string(launcher.group_seconds) +
           " s (a deadlock, an endless loop or a sleep that ignores the watchdog)";
  }
  std::string text = "the test program stopped during this test (" + outcome.describe() +
                     "): a crash, an abort or an exit. " + mpi_error(outcome.output) +
                     "The end of its output:\n";
  return text + last_lines(outcome.output, kLogLines);
}

// Whether a test that did not finish died by itself (a signal, an exit, the program stopping)
// rather than hanging, being tampered with or going over a limit. Such a death can be the work
// of an earlier test in the same process (memory it corrupted, a thread it left running), so
// the test is run again alone before it is charged.
bool died(const std::vector<TestOutput>& outputs, const Outcome& outcome) {
  for (const TestOutput& output : outputs) {
    if (output.tampered || output.timed_out) return false;
  }
  return outcome.over_limit.empty() && !outcome.stopped_by_signal && !outcome.timed_out;
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

}  // namespace

std::map<std::string, TestRun> run_tests(const Launcher& launcher,
                                         const std::vector<TestCase>& tests, int ranks) {
  std::map<std::string, TestRun> runs;
  std::vector<TestCase> remaining = tests;
  // Launches are numbered across calls: a second run_tests on as many ranks (the speed bonus)
  // needs directories of its own.
  static std::atomic<int> launches{0};
  while (!remaining.empty()) {
    const std::string out_dir =
        launcher.runs_dir + "/r" + std::to_string(ranks) + "-launch" + std::to_string(launches++);
    if (launcher.sandboxed) {
      launcher.sandbox->make_directory(out_dir);  // runs_dir is the grader's: a fresh directory
    } else {
      fs::create_directories(out_dir);
    }
    const std::vector<std::string> keys =
        write_launch_files(out_dir, ranks, remaining, launcher.seed, launcher.judging);
    Command command;
    command.argv = mpirun_command(launcher, out_dir, remaining, ranks);
    command.cwd = out_dir;
    command.timeout_seconds = launcher.group_seconds;
    command.sandboxed = launcher.sandboxed;
    command.hidden_paths = launcher.hidden_paths;
    command.env = {"OMPI_MCA_rmaps_base_oversubscribe=1",
                   "OMPI_MCA_btl_vader_single_copy_mechanism=none", "OPENBLAS_NUM_THREADS=1",
                   "OMP_NUM_THREADS=1"};
    // A session directory per launch: launches run side by side.
    command.env.insert(command.env.end(), {"HOME=" + out_dir, "TMPDIR=" + out_dir});
    // Done when every rank has written the end of the last test, or one rank has died (its
    // last words: "exited", "crashed" or the watchdog's "timeout"); mpirun takes seconds to
    // notice a death by itself.
    const std::string last_end = "\nend " + remaining.back().id() + " ";
    command.done = [&, ranks] {
      bool all_ended = true;
      for (int r = 0; r < ranks; ++r) {
        const std::string path = out_dir + "/rank" + std::to_string(r) + ".out";
        for (const char* death : {"\nexited\n", "\ncrashed ", "\ntimeout "}) {
          if (file_tail_has(path, death)) return true;
        }
        all_ended &= file_tail_has(path, last_end);
      }
      return all_ended;
    };
    const Outcome outcome = launcher.sandbox->run(command);

    std::vector<RankOutput> per_rank(ranks);
    for (int r = 0; r < ranks; ++r) {
      std::string text, problem;
      if (read_regular_file(out_dir + "/rank" + std::to_string(r) + ".out", kMaxRankFile, text,
                            problem)) {
        per_rank[r] = parse_rank_output(text, keys[r]);
      }
    }
    // What filled the disk goes at once, or every later launch would be over the limit too.
    if (outcome.over_limit == "disk") launcher.sandbox->remove_as_sandbox(out_dir);
    std::size_t done = 0;
    for (; done < remaining.size(); ++done) {
      const TestCase& test = remaining[done];
      TestRun& run = runs[test.id()];
      bool began = false;
      run.finished = true;
      for (int r = 0; r < test.ranks(); ++r) {
        const auto found = per_rank[r].find(test.id());
        began |= found != per_rank[r].end();
        run.ranks.push_back(found == per_rank[r].end() ? TestOutput{} : found->second);
        run.finished &= run.ranks.back().complete && !run.ranks.back().tampered;
      }
      if (run.finished) continue;
      run.problem = unfinished_problem(run.ranks, outcome, launcher);
      if (done > 0 && died(run.ranks, outcome)) {
        // Other tests ran before it in this process: only a death in a process of its own
        // counts against it (a Part 3 that corrupts memory must not cost Part 6 its points).
        TestRun alone = run_tests(launcher, {test}, ranks).at(test.id());
        if (!alone.finished) {
          alone.problem = "run again alone, in a fresh process, it died again: " + alone.problem;
        }
        run = std::move(alone);
      }
      if (!began && done == 0) {
        // The program did not even start its first test: it would not start for any.
        for (const TestCase& rest : remaining) {
          runs[rest.id()].problem = "the test program did not start (" + outcome.describe() +
                                    "). The end of its output:\n" +
                                    last_lines(outcome.output, kLogLines);
        }
        return runs;
      }
      ++done;
      break;
    }
    remaining.erase(remaining.begin(), remaining.begin() + done);
  }
  return runs;
}

}  // namespace dtk::grade
