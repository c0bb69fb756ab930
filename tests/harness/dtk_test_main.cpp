// The one main() of every dtk test program: MPI around a Catch2 session, output from rank 0
// only, a cross-rank verdict per test case, and a watchdog that turns a hang into a message.
// The listener below derives from Catch2's reporter interfaces (catch_session.cpp holds the rest).
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include "dtk_test.hpp"

#include "catch_session.hpp"

#include <dtk/freed_memory.hpp>
#include <dtk/rank_groups.hpp>
#include <dtk/rank_output.hpp>
#include <dtk/single_machine_mpi.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace dtk::testing {
namespace {

// The harness talks over its own copy of MPI_COMM_WORLD, so its messages can never be matched
// with a collective of the code under test.
MPI_Comm harness_comm = MPI_COMM_NULL;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// Each finding a rank sends rank 0 ends with this character (a finding spans lines).
constexpr char kEndOfFinding = '\x1e';

// A finding's first line: what differs, where, and the known mistake it is.
std::string first_line(const std::string& finding) { return finding.substr(0, finding.find('\n')); }

// One mistake tends to fail many checks alike: after a finding shown whole, this many more are
// shown by their first line, and the rest counted.
constexpr std::size_t kOneLineFindings = 8;

// Whether an earlier case of this program failed (on rank 0, which writes the reports).
bool a_case_failed = false;

// On rank 0: one report of every rank's findings (each ending with kEndOfFinding), identical ones
// merged and naming their ranks, in the order of the ranks that found them. The program's first
// failing case shows its first finding whole and the next ones by their first line; a later
// failing case is one line, its first finding's first line and how many more it has: run alone,
// it is the first and shows them.
std::string merge_reports(const std::vector<std::string>& per_rank) {
  std::vector<std::vector<std::string>> findings(per_rank.size());
  std::size_t most = 0;
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    std::istringstream text(per_rank[r]);
    for (std::string finding; std::getline(text, finding, kEndOfFinding);) {
      findings[r].push_back(finding);
    }
    most = std::max(most, findings[r].size());
  }
  // Round by round (every rank's first finding, then every rank's second, ...), identical ones
  // merged: the same check failing on several ranks is one finding.
  std::vector<RankGroup> groups;
  for (std::size_t i = 0; i < most; ++i) {
    std::vector<std::string> round(per_rank.size());
    for (std::size_t r = 0; r < per_rank.size(); ++r) {
      if (i < findings[r].size()) round[r] = findings[r][i];
    }
    for (const RankGroup& group : group_identical(round)) groups.push_back(group);
  }
  if (groups.empty()) return "";
  const auto line = [](const RankGroup& group, const std::string& text) {
    return "[" + rank_list(group.second) + "] " + text + "\n";
  };
  if (a_case_failed) {
    return line(groups[0], first_line(groups[0].first) +
                               (groups.size() > 1 ? " (and " + std::to_string(groups.size() - 1) +
                                                        " more: run this case alone to see them)"
                                                  : ""));
  }
  a_case_failed = true;
  std::string report = line(groups[0], groups[0].first);
  for (std::size_t g = 1; g < std::min(groups.size(), 1 + kOneLineFindings); ++g) {
    report += line(groups[g], first_line(groups[g].first));
  }
  if (groups.size() > 1 + kOneLineFindings) {
    const std::size_t more = groups.size() - 1 - kOneLineFindings;
    report +=
        "... and " + std::to_string(more) + (more == 1 ? " more finding\n" : " more findings\n");
  }
  return report;
}

std::string broadcast_from_root(std::string text) {
  unsigned long length = text.size();
  MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG, 0, harness_comm);
  text.resize(length);
  MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, harness_comm);
  return text;
}

std::string program_name = "<this test>";

// Ends the process if a test case runs longer than DTK_TEST_TIMEOUT seconds (default 60): the
// usual cause is a rank waiting in a collective that the other ranks never entered, or two
// ranks each blocked in a Send to the other.
class Watchdog {
 public:
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void arm(const std::string& test_case) {
    std::lock_guard<std::mutex> lock(mutex_);
    test_case_ = test_case;
    thrown_.clear();
    deadline_ = std::chrono::steady_clock::now() + limit();
    armed_ = true;
    if (!thread_.joinable()) thread_ = std::thread([this] { watch(); });
    wake_.notify_all();
  }

  void disarm() {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
  }

  // What this rank's code under test threw in the running case: a rank that threw goes on to
  // the harness's collective while the others may wait for its messages, so the case hangs
  // and the exception would never be shown.
  void note_thrown(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    thrown_ = what;
  }

 private:
  static std::chrono::seconds limit() {
    const char* text = std::getenv("DTK_TEST_TIMEOUT");
    const int seconds = text ? std::atoi(text) : 0;
    return std::chrono::seconds(seconds > 0 ? seconds : 60);
  }

  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      if (!armed_) {
        wake_.wait(lock);
      } else if (wake_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ &&
                 std::chrono::steady_clock::now() >= deadline_) {
        // One write per rank, the exception first: several ranks report at once.
        std::ostringstream report;
        if (!thrown_.empty()) {
          report << "\n[rank " << world_rank() << "] Its code threw: " << thrown_
                 << " (the other ranks may have waited for its messages since).";
        }
        report << "\n[rank " << world_rank() << "] test case \"" << test_case_
               << "\" is still running after " << limit().count()
               << " s: probably a rank is waiting in a collective the other ranks never "
                  "entered, or in a Send or Recv that no rank matches (or a loop never "
                  "ends). Stopping "
               << program_name << ".\n";
        const std::string text = report.str();
        std::fwrite(text.data(), 1, text.size(), stderr);
        std::fflush(stderr);
        std::_Exit(3);
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  std::string test_case_;
  std::string thrown_;
  std::chrono::steady_clock::time_point deadline_;
  bool armed_ = false;
  bool stopping_ = false;
};

Watchdog watchdog;

struct WatchdogListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(const Catch::TestCaseInfo& info) override { watchdog.arm(info.name); }
  void testCaseEnded(const Catch::TestCaseStats&) override { watchdog.disarm(); }
};
CATCH_REGISTER_LISTENER(WatchdogListener)

}  // namespace

void on_every_rank(int ranks, const std::function<void(Checks&)>& body) {
  int size = 0;
  MPI_Comm_size(harness_comm, &size);
  if (size != ranks) {
    FAIL("this test needs exactly " << ranks << " MPI ranks but runs on " << size
                                    << ": run it as  mpirun -n " << ranks << " " << program_name);
  }

  Checks checks(world_rank());
  try {
    body(checks);
  } catch (const std::exception& error) {
    checks.that(false, error.what());
    watchdog.note_thrown(error.what());
  } catch (...) {
    checks.that(false, "threw an exception that is not a std::exception");
    watchdog.note_thrown("an exception that is not a std::exception");
  }

  std::string mine;
  for (const std::string& failure : checks.failures()) mine += failure + kEndOfFinding;
  const std::string report =
      broadcast_from_root(merge_reports(gather_text(Communicator(harness_comm), mine)));
  if (!report.empty()) FAIL(report);
  SUCCEED("every rank passed");
}

}  // namespace dtk::testing

int main(int argc, char** argv) {
  dtk::keep_freed_memory();
  dtk::use_single_machine_mpi();
  MPI_Init(&argc, &argv);
  MPI_Comm_dup(MPI_COMM_WORLD, &dtk::testing::harness_comm);
  if (argc > 0) dtk::testing::program_name = argv[0];

  // Every rank runs the same cases to the same verdicts; rank 0 alone speaks for them.
  const int status =
      dtk::testing::run_catch_session(argc, argv, /*quiet=*/dtk::testing::world_rank() != 0);

  MPI_Comm_free(&dtk::testing::harness_comm);
  MPI_Finalize();
  return status;
}
