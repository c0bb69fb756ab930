// The judge: the student's records against the reference's, within the tolerances.
#include <catch2/catch.hpp>

#include <cmath>

#include "judge.hpp"

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
