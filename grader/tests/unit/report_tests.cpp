// results.json and totals.json: written, read back, and a later timing of the speed bonus.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "report.hpp"

using namespace dtk::grade;

namespace {

// Part 7's test of `function`'s `item` (": ring", or kSpeedBonusTest).
TestResult test(const std::string& function, const std::string& item, double score,
                double max_score) {
  const std::string name = "Part 7 | " + function + item;
  return {name, "7.1", score, max_score, "feedback of " + name, 7, function};
}

// A grading of Part 7 whose bonus is pending, as a batch's grading writes it.
Report graded() {
  Report report;
  report.visibility = "visible";
  report.parts = {{7, "your own collectives", 30, 30, 2, 2}};
  report.tests = {test("my_allreduce", ": ring", 12, 12), test("my_alltoall", ": ring", 18, 18),
                  test("my_allreduce", kSpeedBonusTest, 0, 0)};
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
  bonus.tests = {test("my_allreduce", kSpeedBonusTest, 5, 0),
                 test("my_alltoall", kSpeedBonusTest, 2.5, 0)};
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
  bonus.tests = {test("my_allreduce", kSpeedBonusTest, 0, 0)};
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

TEST_CASE("totals.json adds up the tests per part, per function and per speed bonus", "[report]") {
  CHECK(totals_path("results.json") == "totals.json");
  CHECK(totals_path("/autograder/results/results.json") == "/autograder/results/totals.json");
  CHECK(totals_path("out/results-28741244.json") == "out/results-28741244.totals.json");
  CHECK(totals_path("grades") == "grades.totals.json");

  const std::string path = "report_tests-totals-" + std::to_string(getpid()) + ".json";
  Report report = graded();
  report.tests.insert(report.tests.begin() + 1, test("my_allreduce", ": bytes", 0, 3));
  report.parts[0] = {7, "your own collectives", 30, 33, 2, 3};
  write_totals_json(report, path);
  nlohmann::json totals = read(path);
  CHECK(totals["parts"] == nlohmann::json::parse(R"({"7": {"score": 30.0, "max": 33.0}})"));
  CHECK(totals["functions"]["my_allreduce"] ==
        nlohmann::json::parse(R"({"part": 7, "score": 12.0, "max": 15.0})"));
  CHECK(totals["functions"]["my_alltoall"] ==
        nlohmann::json::parse(R"({"part": 7, "score": 18.0, "max": 18.0})"));
  CHECK(totals["functions"].size() == 2);  // the bonus apart
  CHECK(totals["bonus"] ==
        nlohmann::json::parse(R"({"my_allreduce": {"score": 0.0, "max": 0.0}})"));

  // A bonus timed later replaces the totals' bonus too, beside the results.
  const std::string results = "report_tests-totals-" + std::to_string(getpid()) + ".results.json";
  const std::string beside = totals_path(results);
  write_results_json(report, results);
  write_totals_json(report, beside);
  Report bonus;
  bonus.tests = {test("my_allreduce", kSpeedBonusTest, 5, 0)};
  bonus.bonus = 5;
  bonus.bonus_state = "timed";
  replace_speed_bonus(results, bonus);
  totals = read(beside);
  CHECK(totals["bonus"]["my_allreduce"]["score"] == 5.0);
  CHECK(totals["parts"]["7"]["score"] == 30.0);
  for (const std::string& file : {path, results, beside}) std::remove(file.c_str());
}

TEST_CASE("results.json says which parts --parts graded, and only then", "[report]") {
  const std::string path = "report_tests-parts-" + std::to_string(getpid()) + ".json";
  Report report = graded();
  report.bonus_state.clear();
  write_results_json(report, path);
  CHECK_FALSE(read(path).contains("extra_data"));
  report.graded_parts = {7};
  write_results_json(report, path);
  CHECK(read(path)["extra_data"]["graded_parts"] == nlohmann::json::parse("[7]"));
  std::ostringstream table;
  print_table(report, table);
  CHECK_THAT(table.str(), Catch::StartsWith("Graded: Part 7 only (--parts)\n"));
  std::remove(path.c_str());
}
