// A class's leaderboards (dtk-grade --batch): who is graded again alone, and what each entry's
// second grading says of the first.
#include <catch2/catch.hpp>

#include "class/leaderboards.hpp"

using namespace dtk::grade;
using nlohmann::json;

namespace {

GradebookRow row(const std::string& student, double mfu) {
  GradebookRow r;
  r.student = student;
  r.leaderboard = {{"Part 13: mean MFU", mfu, /*higher_is_better=*/true}};
  return r;
}

// Assignment 2's Part 7: my_allreduce's speed bonus puts its ratio on the leaderboard.
Manifest with_timed_leaderboard() {
  Manifest manifest;
  Part part;
  part.number = 7;
  SpeedBonus bonus;
  bonus.functions = {"my_allreduce"};
  bonus.leaderboard = true;
  part.speed_bonus = bonus;
  manifest.parts = {part};
  return manifest;
}

json results(const std::string& entry, double value, double bonus_points,
             const std::string& bonus_state = "timed") {
  return {{"leaderboard", {{{"name", entry}, {"value", value}}}},
          {"tests", {{{"name", "Part 7 | my_allreduce: speed bonus"}, {"score", bonus_points}}}},
          {"extra_data", {{"speed_bonus", bonus_state}}}};
}

}  // namespace

TEST_CASE("the best three of each leaderboard are graded again, each once", "[leaderboards]") {
  const std::vector<GradebookRow> rows = {row("ann", 0.1), row("ben", 0.6), row("cid", 0.5),
                                          row("dan", 0.6), row("eve", 0.2)};
  // 0.6 twice: ties by name, as the summary page ranks them.
  CHECK(leaderboard_leaders(rows) == std::vector<std::string>{"ben", "dan", "cid"});
  const auto boards = ranked_leaderboards(rows);
  REQUIRE(boards.size() == 1);
  CHECK(boards.at("Part 13: mean MFU").back().first->student == "ann");
}

TEST_CASE("a computed entry must come out the same when graded again", "[leaderboards]") {
  const Manifest manifest;  // no timed leaderboard
  const json first = {{"leaderboard", {{{"name", "Part 13: mean MFU"}, {"value", 0.61623}}}}};
  CHECK(compare_leaderboards(manifest, first, first).at("Part 13: mean MFU") == "verified");
  const json lower = {{"leaderboard", {{{"name", "Part 13: mean MFU"}, {"value", 0.5}}}}};
  CHECK(compare_leaderboards(manifest, first, lower).at("Part 13: mean MFU") ==
        "changed: 0.5000 alone");
  CHECK(compare_leaderboards(manifest, first, json::object()).at("Part 13: mean MFU") ==
        "changed: no entry when graded again alone");
}

TEST_CASE("a timed entry must earn the same bonus points when timed again", "[leaderboards]") {
  const Manifest manifest = with_timed_leaderboard();
  const std::string entry = "my_allreduce / MPI_Allreduce";
  const json first = results(entry, 0.95, 5);
  CHECK(compare_leaderboards(manifest, first, results(entry, 1.02, 5)).at(entry) ==
        "verified (1.0200 alone)");
  CHECK(compare_leaderboards(manifest, first, results(entry, 1.6, 2.5)).at(entry) ==
        "changed: 1.6000 alone, 2.5 bonus points, not 5");
  CHECK(compare_leaderboards(manifest, first, results(entry, 0, 0, "deferred")).at(entry) ==
        "not timed again: the machine was busy");
}

TEST_CASE("a speed bonus's state is read from results.json, whatever its shape", "[leaderboards]") {
  CHECK(speed_bonus_state(results("e", 1, 5, "deferred")) == "deferred");
  CHECK(speed_bonus_state(json::object()).empty());
  CHECK(speed_bonus_state({{"extra_data", "not an object"}}).empty());
  CHECK(speed_bonus_state(json::array()).empty());
}

TEST_CASE("the parts graded again are those with a leaderboard", "[leaderboards]") {
  Manifest manifest = with_timed_leaderboard();
  Part planner;
  planner.number = 13;
  planner.tiers["plan_training"] = Tiers{"mfu", {}, "Part 13: mean MFU"};
  Part unranked;
  unranked.number = 8;
  manifest.parts.push_back(unranked);
  manifest.parts.push_back(planner);
  CHECK(leaderboard_parts(manifest) == std::vector<int>{7, 13});
}
