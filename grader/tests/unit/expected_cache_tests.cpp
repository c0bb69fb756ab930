// The reference's saved outputs (expected_cache.hpp): what is saved loads back whole, field by
// field, and a missing or broken file loads as nothing saved (the reference then runs).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "scoring/expected_cache.hpp"

using namespace dtk::grade;

namespace {

Value tensor(double first) {
  Value v;
  v.kind = Value::Kind::tensor;
  v.dtype = "float";
  v.shape = {2};
  v.values = {first, first + 1};
  v.part = "dx";
  return v;
}

// A rank's output with every field away from its default.
TestOutput every_field_set() {
  TestOutput o;
  o.complete = true;
  o.timed_out = true;
  o.crash_signal = 11;
  o.exited = true;
  o.tampered = true;
  o.restart_after = true;
  o.notes = {"4 ranks"};
  o.outcomes = {"plan 1: 0.42"};
  o.values = {{"y", tensor(1)}};
  o.errors = {"NotImplemented"};
  o.forbidden = {"MPI_Bcast (called from dtk::f)"};
  o.mistakes = {{"y", "rows swapped", tensor(3)}};
  o.evidence = {{"plan", tensor(5)}};
  o.moved = 7;
  o.received = 8;
  o.least_received = 9;
  return o;
}

void same_value(const Value& a, const Value& b) {
  CHECK(a.kind == b.kind);
  CHECK(a.dtype == b.dtype);
  CHECK(a.shape == b.shape);
  CHECK(a.values == b.values);
  CHECK(a.integer == b.integer);
  CHECK(a.part == b.part);
}

void same_values(const std::vector<std::pair<std::string, Value>>& a,
                 const std::vector<std::pair<std::string, Value>>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].first == b[i].first);
    same_value(a[i].second, b[i].second);
  }
}

struct ScratchDir {
  std::string path = std::filesystem::temp_directory_path() /
                     ("dtk-expected-cache-test-" + std::to_string(getpid()));
  ScratchDir() { std::filesystem::create_directories(path); }
  ~ScratchDir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("a saved run loads back with every field", "[expected_cache]") {
  ScratchDir dir;
  TestRun run;
  run.finished = true;
  run.problem = "out of time";
  run.rerun = "passed when run again alone";
  run.ranks = {every_field_set(), TestOutput{}};
  save_expected(dir.path, "assignment3-seed7", {{"moe_dispatch p=4", run}});

  const auto loaded = load_expected(dir.path, "assignment3-seed7");
  REQUIRE(loaded.size() == 1);
  const TestRun& back = loaded.at("moe_dispatch p=4");
  CHECK(back.finished);
  CHECK(back.problem == run.problem);
  CHECK(back.rerun == run.rerun);
  REQUIRE(back.ranks.size() == 2);
  const TestOutput &a = run.ranks[0], &b = back.ranks[0];
  CHECK(b.complete == a.complete);
  CHECK(b.timed_out == a.timed_out);
  CHECK(b.crash_signal == a.crash_signal);
  CHECK(b.exited == a.exited);
  CHECK(b.tampered == a.tampered);
  CHECK(b.restart_after == a.restart_after);
  CHECK(b.notes == a.notes);
  CHECK(b.outcomes == a.outcomes);
  same_values(b.values, a.values);
  CHECK(b.errors == a.errors);
  CHECK(b.forbidden == a.forbidden);
  REQUIRE(b.mistakes.size() == 1);
  CHECK(b.mistakes[0].value == "y");
  CHECK(b.mistakes[0].description == "rows swapped");
  same_value(b.mistakes[0].wrong, a.mistakes[0].wrong);
  same_values(b.evidence, a.evidence);
  CHECK(b.moved == 7);
  CHECK(b.received == 8);
  CHECK(b.least_received == 9);
  CHECK_FALSE(back.ranks[1].complete);
}

TEST_CASE("nothing saved loads as no runs: a missing, broken or other key's file",
          "[expected_cache]") {
  ScratchDir dir;
  CHECK(load_expected(dir.path, "assignment1-seed7").empty());
  save_expected(dir.path, "assignment1-seed7", {{"get_info mp=1 dp=1", TestRun{}}});
  CHECK(load_expected(dir.path, "assignment1-seed8").empty());
  std::ofstream(dir.path + "/expected-assignment1-seed7.json") << "{\"get_info";
  CHECK(load_expected(dir.path, "assignment1-seed7").empty());
}
