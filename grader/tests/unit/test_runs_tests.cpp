// What one launch of tests settles, from its ranks' records and how it ended (test_runs.hpp,
// without launching anything): which tests finished, which are charged, which are run again
// alone before they are charged (out of time, or dead after others), and which go to a fresh
// launch uncharged (the runner's "restart"); and where a launch outside the sandbox keeps
// its shared-memory segments.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "records.hpp"
#include "scoring/test_runs.hpp"

using namespace dtk::grade;
using Catch::Matchers::Contains;

namespace {

const std::string kKey = "00112233445566778899aabbccddeeff";  // the launch's key
const LaunchLimits kLimits{2, 10};                            // the manifest's
const LaunchLimits kRetry{10, 18};                            // a re-run alone

// Three tests on two ranks, in launch order.
const std::vector<TestCase>& three_tests() {
  static const std::vector<TestCase> tests = {parse_test_id("get_info mp=2 dp=1"),
                                              parse_test_id("get_info mp=1 dp=2"),
                                              parse_test_id("get_info mp=1 dp=1")};
  return tests;
}

// A test's block as the runner writes it: "begin", its records and its signed "end".
std::string finished(const TestCase& test, const std::string& after = "") {
  const std::string block = "begin " + test.id() + "\nint mp_idx\t0\n";
  return block + "end " + test.id() + " " + block_hash(kKey, block) + "\n" + after;
}

// A test's block without its end, with the rank's last words (or none).
std::string unfinished(const TestCase& test, const std::string& last_words = "") {
  return "begin " + test.id() + "\n" + last_words;
}

// Both ranks wrote the same file.
std::vector<RankOutput> both_ranks(const std::string& text) {
  return {parse_rank_output(text, kKey), parse_rank_output(text, kKey)};
}

Outcome exited(int code) {
  Outcome outcome;
  outcome.exit_code = code;
  return outcome;
}

}  // namespace

TEST_CASE("a launch that finished every test settles them all", "[test_runs]") {
  const auto& tests = three_tests();
  const SettledLaunch settled =
      settle_launch(tests, both_ranks(finished(tests[0]) + finished(tests[1]) + finished(tests[2])),
                    exited(0), kLimits, true);
  CHECK(settled.consumed == 3);
  CHECK_FALSE(settled.retry);
  for (const TestCase& test : tests) CHECK(settled.runs.at(test.id()).finished);
}

TEST_CASE("a test past its watchdog among others is run again alone before it is charged",
          "[test_runs]") {
  const auto& tests = three_tests();
  const auto ranks = both_ranks(finished(tests[0]) + unfinished(tests[1], "timeout 2\n"));
  const SettledLaunch settled = settle_launch(tests, ranks, exited(124), kLimits, true);
  CHECK(settled.runs.at(tests[0].id()).finished);
  CHECK(settled.consumed == 2);  // the third goes to a new launch
  CHECK(settled.retry);
  CHECK(settled.cause == RetryCause::out_of_time);
  CHECK_FALSE(settled.runs.at(tests[1].id()).finished);
  // Also when it was the first test of its launch: the machine was as busy.
  const SettledLaunch first = settle_launch(tests, both_ranks(unfinished(tests[0], "timeout 2\n")),
                                            exited(124), kLimits, true);
  CHECK(first.retry);
  CHECK(first.consumed == 1);
  // Without a re-run's limit (the reference, the speed bonus), it is charged at once.
  const SettledLaunch charged = settle_launch(tests, ranks, exited(124), kLimits, false);
  CHECK_FALSE(charged.retry);
  CHECK_THAT(charged.runs.at(tests[1].id()).problem,
             Contains("did not finish within 2 s: probably a deadlock"));
}

TEST_CASE("a test caught in a launch that ran out of its group time is run again alone",
          "[test_runs]") {
  const auto& tests = three_tests();
  Outcome out_of_time;
  out_of_time.timed_out = true;
  const SettledLaunch settled = settle_launch(
      tests, both_ranks(finished(tests[0]) + unfinished(tests[1])), out_of_time, kLimits, true);
  CHECK(settled.retry);
  CHECK(settled.cause == RetryCause::out_of_group_time);
  CHECK(settled.consumed == 2);
}

TEST_CASE("a launch that ran out of time before its program started retries its first test",
          "[test_runs]") {
  const auto& tests = three_tests();
  Outcome out_of_time;
  out_of_time.timed_out = true;
  const SettledLaunch slow = settle_launch(tests, both_ranks(""), out_of_time, kLimits, true);
  CHECK_FALSE(slow.started);
  CHECK(slow.retry);
  CHECK(slow.cause == RetryCause::not_started);
  CHECK(slow.consumed == 1);  // the others go to a new launch
  CHECK(slow.runs.size() == 1);
  // A program that dies before its first test would die before any: all charged at once.
  const SettledLaunch dead = settle_launch(tests, both_ranks(""), exited(1), kLimits, true);
  CHECK_FALSE(dead.started);
  CHECK_FALSE(dead.retry);
  CHECK(dead.consumed == 3);
  for (const TestCase& test : tests)
    CHECK_THAT(dead.runs.at(test.id()).problem, Contains("did not start (exit status 1)"));
  // Without a re-run's limit, running out of time starting charges them all too.
  CHECK(settle_launch(tests, both_ranks(""), out_of_time, kLimits, false).consumed == 3);
}

TEST_CASE("a test that died after others is run again alone; first in its launch, charged",
          "[test_runs]") {
  const auto& tests = three_tests();
  const SettledLaunch after_others =
      settle_launch(tests, both_ranks(finished(tests[0]) + unfinished(tests[1], "crashed 11\n")),
                    exited(1), kLimits, false);
  CHECK(after_others.retry);
  CHECK(after_others.cause == RetryCause::died);
  const SettledLaunch first = settle_launch(tests, both_ranks(unfinished(tests[0], "crashed 11\n")),
                                            exited(1), kLimits, true);
  CHECK_FALSE(first.retry);
  CHECK(first.consumed == 1);
  CHECK_THAT(first.runs.at(tests[0].id()).problem, Contains("crashed during this test: signal 11"));
}

TEST_CASE("tampering, a sandbox limit or a stopped process is charged without a re-run",
          "[test_runs]") {
  const auto& tests = three_tests();
  const auto hung = both_ranks(finished(tests[0]) + unfinished(tests[1], "timeout 2\n"));
  Outcome memory = exited(137);
  memory.over_limit = "memory";
  const SettledLaunch over_memory = settle_launch(tests, hung, memory, kLimits, true);
  CHECK_FALSE(over_memory.retry);
  // The sandbox's limit is the verdict, whichever rank's watchdog or crash record came first
  // as the launch was ended: on a busy machine the watchdog can win the race.
  CHECK_THAT(over_memory.runs.at(tests[1].id()).problem, Contains("total_memory_mb"));
  const auto crashed = both_ranks(finished(tests[0]) + unfinished(tests[1], "crashed 15\n"));
  CHECK_THAT(settle_launch(tests, crashed, memory, kLimits, true).runs.at(tests[1].id()).problem,
             Contains("total_memory_mb"));
  Outcome stopped = exited(137);
  stopped.stopped_by_signal = true;
  CHECK_FALSE(settle_launch(tests, hung, stopped, kLimits, true).retry);
  const std::string twice = finished(tests[0]) + "begin " + tests[0].id() + "\n";
  const SettledLaunch tampered = settle_launch(tests, both_ranks(twice), exited(0), kLimits, true);
  CHECK_FALSE(tampered.retry);
  CHECK_THAT(tampered.runs.at(tests[0].id()).problem, Contains("written to by the code under"));
}

TEST_CASE("after a restart, the tests a launch did not finish go to a fresh one, uncharged",
          "[test_runs]") {
  const auto& tests = three_tests();
  // The runner restarted after the first test; the second began on one rank only, then the
  // launch ended.
  const std::vector<RankOutput> ranks = {
      parse_rank_output(finished(tests[0], "restart\n"), kKey),
      parse_rank_output(finished(tests[0]) + unfinished(tests[1]), kKey)};
  const SettledLaunch settled = settle_launch(tests, ranks, exited(0), kLimits, true);
  CHECK(settled.consumed == 1);
  CHECK_FALSE(settled.retry);
  CHECK(settled.runs.count(tests[1].id()) == 0);  // neither charged nor settled
  CHECK(settled.runs.at(tests[0].id()).finished);
  // A test that finished after the restart point keeps its outputs.
  const SettledLaunch later = settle_launch(
      tests,
      both_ranks(finished(tests[0], "restart\n") + finished(tests[1]) + unfinished(tests[2])),
      exited(0), kLimits, true);
  CHECK(later.consumed == 2);
  CHECK(later.runs.count(tests[2].id()) == 0);
  // Restarted after its last test: nothing is left.
  CHECK(settle_launch(
            tests,
            both_ranks(finished(tests[0]) + finished(tests[1]) + finished(tests[2], "restart\n")),
            exited(0), kLimits, true)
            .consumed == 3);
}

TEST_CASE("a restart that does not follow a finished test changes nothing", "[test_runs]") {
  const auto& tests = three_tests();
  // Written before any test, after an unsigned end, or inside a block: no restart, and the
  // unfinished first test is charged as usual (every launch makes progress).
  for (const std::string& text :
       {"restart\n" + unfinished(tests[0], "crashed 11\n"),
        "begin " + tests[0].id() + "\nend " + tests[0].id() + " 0000000000000000\nrestart\n",
        unfinished(tests[0], "restart\ncrashed 11\n")}) {
    const SettledLaunch settled = settle_launch(tests, both_ranks(text), exited(1), kLimits, true);
    CHECK(settled.consumed == 1);
    CHECK_FALSE(settled.runs.at(tests[0].id()).finished);
    CHECK_FALSE(settled.runs.at(tests[0].id()).problem.empty());
  }
}

TEST_CASE("the feedback of a re-run says both limits, and why it passed", "[test_runs]") {
  const auto& tests = three_tests();
  const auto alone = [&](const std::string& text) {
    return settle_launch({tests[1]}, both_ranks(text), exited(0), kRetry, false)
        .runs.at(tests[1].id());
  };
  const TestRun passed =
      after_retry(alone(finished(tests[1])), RetryCause::out_of_time, kLimits, kRetry);
  CHECK(passed.finished);
  CHECK(passed.rerun ==
        "did not finish within 2 s among other tests; run again alone with 10 s, in a fresh "
        "process, it passed: the machine was probably busy.");
  const TestRun group =
      after_retry(alone(finished(tests[1])), RetryCause::out_of_group_time, kLimits, kRetry);
  CHECK_THAT(group.rerun, Contains("had written no record for 10 s among other tests"));
  CHECK(after_retry(alone(finished(tests[1])), RetryCause::not_started, kLimits, kRetry).rerun ==
        "the test program did not start within the 10 s of its launch among other tests; run "
        "again alone with 10 s, in a fresh process, it passed: the machine was probably busy.");
  const TestRun hung = after_retry(alone(unfinished(tests[1], "timeout 10\n")),
                                   RetryCause::out_of_time, kLimits, kRetry);
  CHECK_FALSE(hung.finished);
  CHECK_THAT(hung.problem, Contains("did not finish within 2 s among other tests, nor within 10 s "
                                    "run again alone: probably a deadlock"));
  // Past its watchdog again, but ended for memory as it fired: the memory is the verdict.
  Outcome memory = exited(137);
  memory.over_limit = "memory";
  const TestRun over_memory =
      after_retry(settle_launch({tests[1]}, both_ranks(unfinished(tests[1], "timeout 10\n")),
                                memory, kRetry, false)
                      .runs.at(tests[1].id()),
                  RetryCause::out_of_time, kLimits, kRetry);
  CHECK_THAT(over_memory.problem, Contains("run again alone with 10 s, in a fresh process, it "
                                           "failed again: ended: the test program's processes "
                                           "together used more memory"));
  const TestRun crashed = after_retry(alone(unfinished(tests[1], "crashed 11\n")),
                                      RetryCause::out_of_time, kLimits, kRetry);
  CHECK_THAT(crashed.problem, Contains("run again alone with 10 s, in a fresh process, it failed "
                                       "again: rank 0 crashed during this test"));
  const TestRun died_again =
      after_retry(alone(unfinished(tests[1], "crashed 11\n")), RetryCause::died, kLimits, kRetry);
  CHECK_THAT(died_again.problem, Contains("died among other tests; run again alone, in a fresh "
                                          "process, it died again: rank 0 crashed"));
}

TEST_CASE("a re-run's limits: its watchdog, and the launch's headroom beyond it", "[test_runs]") {
  Launcher launcher;
  launcher.timeouts.test_seconds = 2;
  launcher.timeouts.group_seconds = 10;
  launcher.timeouts.retry_test_seconds = 10;
  CHECK(retry_limits(launcher).test_seconds == 10);
  CHECK(retry_limits(launcher).group_seconds == 18);
  launcher.timeouts.retry_test_seconds =
      0;  // no re-run for time: a death's re-run keeps the limits
  CHECK(retry_limits(launcher).test_seconds == 2);
  CHECK(retry_limits(launcher).group_seconds == 10);
}

TEST_CASE(
    "a launch outside the sandbox keeps its shared-memory segments in a directory that "
    "goes with it") {
  namespace fs = std::filesystem;
  const fs::path parent = fs::temp_directory_path() / "dtk-segment-directory-test";
  fs::remove_all(parent);
  fs::create_directories(parent);
  std::string where;
  {
    const SegmentDirectory segments(parent.string());
    where = segments.path();
    REQUIRE(fs::is_directory(where));
    CHECK(fs::path(where).parent_path() == parent);
    CHECK(segments.setting() == "OMPI_MCA_btl_vader_backing_directory=" + where);
    // What a rank killed before MPI_Finalize leaves behind.
    std::ofstream(fs::path(where) / "vader_segment.host.1.0") << "segment";
  }
  CHECK_FALSE(fs::exists(where));
  CHECK(fs::is_empty(parent));

  // Nowhere to make it: no setting, and Open MPI keeps its default directory.
  const SegmentDirectory nowhere((parent / "missing").string());
  CHECK(nowhere.path().empty());
  CHECK_FALSE(nowhere.setting().has_value());
  fs::remove_all(parent);
}
