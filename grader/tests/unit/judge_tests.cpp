// The judge: the student's records against the reference's, within the tolerances.
#include <catch2/catch.hpp>

#include <cmath>

#include "scoring/judge.hpp"

using namespace dtk::grade;
using Catch::Matchers::Contains;

namespace {

const Tolerances tolerances{1e-5, 1e-10, 1e-3};

Value tensor(std::vector<double> values, std::vector<std::size_t> shape, std::string dtype) {
  Value value;
  value.kind = Value::Kind::tensor;
  value.dtype = std::move(dtype);
  value.shape = std::move(shape);
  value.values = std::move(values);
  return value;
}

Value real(double number) {
  Value value;
  value.kind = Value::Kind::real;
  value.values = {number};
  return value;
}

// A finished run of `ranks` ranks, each holding the same values.
TestRun run(std::vector<std::pair<std::string, Value>> values, int ranks = 2) {
  TestRun result;
  result.finished = true;
  for (int r = 0; r < ranks; ++r) {
    TestOutput output;
    output.complete = true;
    output.notes = {"batch 2, slice width 2"};
    output.values = values;
    result.ranks.push_back(output);
  }
  return result;
}

const TestRun expected = run({{"out", tensor({1, 2, 3, 4}, {2, 2}, "double")}});

}  // namespace

TEST_CASE("equal results pass, with no feedback", "[judge]") {
  const Verdict verdict = judge(expected, expected, tolerances);
  CHECK(verdict.passed);
  CHECK(verdict.output.empty());
  CHECK(forbidden_calls(expected).empty());
  CHECK_THAT(configuration(expected), Contains("batch 2"));
}

TEST_CASE("differences within the tolerance pass, beyond it fail naming the value", "[judge]") {
  CHECK(judge(expected, run({{"out", tensor({1, 2, 3, 4 + 1e-12}, {2, 2}, "double")}}), tolerances)
            .passed);
  const Verdict wrong =
      judge(expected, run({{"out", tensor({1, 2, 3, 5}, {2, 2}, "double")}}), tolerances);
  CHECK_FALSE(wrong.passed);
  CHECK_THAT(wrong.output, Contains("out"));
}

TEST_CASE("a wrong shape, a missing value and a NaN fail", "[judge]") {
  CHECK_FALSE(
      judge(expected, run({{"out", tensor({1, 2, 3, 4}, {4, 1}, "double")}}), tolerances).passed);
  CHECK_FALSE(judge(expected, run({}), tolerances).passed);
  CHECK_FALSE(
      judge(expected, run({{"out", tensor({1, 2, 3, NAN}, {2, 2}, "double")}}), tolerances).passed);
}

TEST_CASE("the same infinity passes; a known mistake's NaN names it", "[judge]") {
  // An attention row over no key has lse -infinity.
  const TestRun empty_row = run({{"lse", tensor({0.5, -INFINITY}, {2, 1}, "double")}});
  CHECK(judge(empty_row, empty_row, tolerances).passed);
  for (double wrong : {double(INFINITY), -1e300, 0.0}) {
    CHECK_FALSE(judge(empty_row, run({{"lse", tensor({0.5, wrong}, {2, 1}, "double")}}), tolerances)
                    .passed);
  }
  const TestRun nan = run({{"lse", tensor({0.5, NAN}, {2, 1}, "double")}});
  CHECK_FALSE(judge(empty_row, nan, tolerances).passed);
  // 0 / 0 where both sides are empty: the mistake's NaN matches the student's.
  TestRun named = empty_row;
  for (TestOutput& rank : named.ranks) {
    rank.mistakes.push_back({"lse", "0 / 0", tensor({0.5, NAN}, {2, 1}, "double")});
  }
  const Verdict verdict = judge(named, nan, tolerances);
  CHECK_FALSE(verdict.passed);
  CHECK_THAT(verdict.output, Contains("This is exactly what 0 / 0 gives"));
}

TEST_CASE("reals are compared relatively, with the real tolerance", "[judge]") {
  const TestRun flops = run({{"num_tflops", real(1000.0)}}, 1);
  CHECK(judge(flops, run({{"num_tflops", real(1000.5)}}, 1), tolerances).passed);
  CHECK_FALSE(judge(flops, run({{"num_tflops", real(1002.0)}}, 1), tolerances).passed);
}

TEST_CASE("an exception, an unfinished run or a broken reference fails", "[judge]") {
  TestRun threw = expected;
  threw.ranks[1].values.clear();
  threw.ranks[1].errors = {"NotImplemented: dtk::get_info"};
  const Verdict not_implemented = judge(expected, threw, tolerances);
  CHECK_FALSE(not_implemented.passed);
  CHECK_THAT(not_implemented.output, Contains("NotImplemented"));

  TestRun hung;
  hung.problem = "did not finish: probably a deadlock";
  const Verdict timeout = judge(expected, hung, tolerances);
  CHECK_FALSE(timeout.passed);
  CHECK_THAT(timeout.output, Contains("deadlock"));

  TestRun broken;
  broken.problem = "reference crashed";
  CHECK_FALSE(judge(broken, expected, tolerances).passed);
}

TEST_CASE("forbidden calls seen at run time are reported once", "[judge]") {
  TestRun actual = expected;
  for (TestOutput& rank : actual.ranks) rank.forbidden = {"MPI_Bcast (called from dtk::f)"};
  CHECK(forbidden_calls(actual) == std::vector<std::string>{"MPI_Bcast (called from dtk::f)"});
}

TEST_CASE("a schedule reads as F0 F1 B0 ... and a known mistake is named", "[judge]") {
  // Forward(mb) is mb, backward(mb) is -1 - mb.
  TestRun right = run({{"stage 0", tensor({0, 1, -1, -2}, {4}, "step")}}, 1);
  TestRun wrong = run({{"stage 0", tensor({0, -1, 1, -2}, {4}, "step")}}, 1);
  right.ranks[0].mistakes.push_back(
      {"stage 0", "a warm-up one forward too short", tensor({0, -1, 1, -2}, {4}, "step")});
  const Verdict verdict = judge(right, wrong, tolerances);
  CHECK_FALSE(verdict.passed);
  CHECK_THAT(verdict.output, Contains("2 of 4 steps differ; first at step 1 (from 0): expected "
                                      "F1, got B0"));
  CHECK_THAT(verdict.output, Contains("expected F0 F1 B0 B1") && Contains("actual   F0 B0 F1 B1"));
  CHECK_THAT(verdict.output, Contains("This is exactly what a warm-up one forward too short"));
}

TEST_CASE("bytes not sent to the other ranks name the likely cause", "[judge]") {
  TestRun reference = run({{"out", tensor({1, 2, 3, 4}, {2, 2}, "double")}}, 1);
  reference.ranks[0].moved = 72;
  TestRun short_chunks = reference, nothing = reference, enough = reference;
  short_chunks.ranks[0].moved = 48;
  nothing.ranks[0].moved = 0;
  enough.ranks[0].moved = 60;  // the per-call estimates round down: a quarter less passes
  const std::string some = judge(reference, short_chunks, tolerances).output;
  CHECK_THAT(some, Contains("sent 48 bytes to the other ranks, where the reference sends 72 "
                            "bytes: some of the data never travelled"));
  CHECK_THAT(some, Contains("chunks or blocks cut too short"));
  CHECK_THAT(some, !Contains("files"));
  CHECK_THAT(judge(reference, nothing, tolerances).output,
             Contains("sent 0 bytes") && Contains("nothing went to them"));
  CHECK(judge(reference, enough, tolerances).passed);
}

TEST_CASE("a collective of one's own is judged by what its ranks sent together", "[judge]") {
  TestRun reference = expected, tree = expected, short_ring = expected;
  for (TestOutput& rank : reference.ranks) rank.moved = 40;  // a ring: 80 in all
  tree.ranks[0].moved = 80;                                  // a tree: one rank does the sending
  tree.ranks[1].moved = 0;
  short_ring.ranks[0].moved = 20;
  short_ring.ranks[1].moved = 20;
  CHECK(judge(reference, tree, tolerances, "", /*sending_shared=*/true).passed);
  CHECK_FALSE(judge(reference, tree, tolerances).passed);  // rank by rank, rank 1 sent nothing
  const Verdict verdict = judge(reference, short_ring, tolerances, "", true);
  CHECK_FALSE(verdict.passed);
  CHECK_THAT(verdict.output, Contains("[ranks 0-1] the ranks together sent 40 bytes to one "
                                      "another, where the reference's ranks send 80 bytes"));
}

TEST_CASE("a rank that received less from the others than its result needs fails", "[judge]") {
  TestRun reference = expected, actual = expected;
  for (TestOutput& rank : reference.ranks) rank.least_received = 16;  // the reference's record
  for (TestOutput& rank : actual.ranks) rank.received = 16;
  CHECK(judge(reference, actual, tolerances).passed);
  actual.ranks[1].received = 8;  // right values, but rank 1 did not get its data from the others
  const Verdict verdict = judge(reference, actual, tolerances);
  CHECK_FALSE(verdict.passed);
  CHECK_THAT(verdict.output, Contains("[rank 1] received 8 bytes from the other ranks"));
  CHECK_THAT(verdict.output, Contains("at least 16 bytes of theirs"));
}

TEST_CASE("without a least, a rank must receive about what the reference's receives", "[judge]") {
  TestRun reference = expected, actual = expected;
  for (TestOutput& rank : reference.ranks) rank.received = 100;  // no least stated: -1
  for (TestOutput& rank : actual.ranks) rank.received = 75;      // a quarter less passes
  CHECK(judge(reference, actual, tolerances).passed);
  actual.ranks[0].received = 74;
  const Verdict verdict = judge(reference, actual, tolerances);
  CHECK_FALSE(verdict.passed);
  CHECK_THAT(verdict.output, Contains("[rank 0] received 74 bytes from the other ranks during "
                                      "the call, where the reference's rank receives 100 bytes"));
}
