// results.json: written, read back, and its speed bonus replaced by a later timing.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "report.hpp"

using namespace dtk::grade;

namespace {

TestResult test(const std::string& name, double score, double max_score) {
  return {name, "7.1", score, max_score, "feedback of " + name};
}

// A grading of Part 7 whose bonus is pending, as a batch's grading writes it.
Report graded() {
  Report report;
  report.visibility = "visible";
  report.parts = {{7, "your own collectives", 30, 30, 2, 2}};
  report.tests = {test("Part 7 | my_allreduce: ring", 12, 12),
                  test("Part 7 | my_alltoall: ring", 18, 18),
                  test("Part 7 | my_allreduce" + kSpeedBonusTest, 0, 0)};
  report.bonus_state = "pending";
  return report;
}

nlohmann::json read(const std::string& path) {
  std::ifstream file(path);
  return nlohmann::json::parse(file);
}

}  // namespace

TEST_CASE("a later timing replaces the speed bonus of a results.json, and only it", "[report]") {
  const std::string path = "report_tests-" + std::to_string(getpid()) + ".json";
  write_results_json(graded(), path);
  CHECK(read(path)["extra_data"]["speed_bonus"] == "pending");
  CHECK(read_results_tests(path).size() == 3);

  Report bonus;
  bonus.tests = {test("Part 7 | my_allreduce" + kSpeedBonusTest, 5, 0),
                 test("Part 7 | my_alltoall" + kSpeedBonusTest, 2.5, 0)};
  bonus.bonus = 7.5;
  bonus.leaderboard = {{"my_allreduce / MPI_Allreduce", 0.8}};
  bonus.bonus_state = "timed";
  replace_speed_bonus(path, bonus);
  nlohmann::json results = read(path);
  CHECK(results["score"] == 37.5);
  CHECK(results["extra_data"]["speed_bonus"] == "timed");
  CHECK(results["leaderboard"].size() == 1);
  const std::vector<TestResult> tests = read_results_tests(path);
  REQUIRE(tests.size() == 4);  // the two tests of the grading kept, the bonus's replaced
  CHECK(tests[0].name == "Part 7 | my_allreduce: ring");
  CHECK(tests[2].score == 5);
  CHECK(is_speed_bonus_test(tests[3].name));

  // Timed again and deferred this time: its points go, the score follows.
  bonus.tests = {test("Part 7 | my_allreduce" + kSpeedBonusTest, 0, 0)};
  bonus.bonus = 0;
  bonus.leaderboard.clear();
  bonus.bonus_state = "deferred";
  replace_speed_bonus(path, bonus);
  results = read(path);
  CHECK(results["score"] == 30);
  CHECK(results["extra_data"]["speed_bonus"] == "deferred");
  CHECK_FALSE(results.contains("leaderboard"));
  std::remove(path.c_str());
}

TEST_CASE("a file that is not a results.json is refused with its name", "[report]") {
  const std::string path = "report_tests-broken-" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << "{\"score\": 1}";
  CHECK_THROWS_WITH(read_results_tests(path), Catch::Contains(path));
  CHECK_THROWS_WITH(read_results_tests(path + ".missing"), Catch::Contains("cannot read"));
  std::remove(path.c_str());
}
