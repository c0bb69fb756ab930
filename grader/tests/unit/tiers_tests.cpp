// Scoring by tiers (Part 13): a case's share of its item's points by the student's value over
// the reference's, and what the feedback says.
#include <catch2/catch.hpp>

#include "scoring/tiers.hpp"

using namespace dtk::grade;
using Catch::Matchers::Contains;

namespace {

// The manifest's tiers of Part 13.
const Tiers kTiers{"mfu", {{0.97, 1}, {0.9, 0.75}, {0.75, 0.5}, {0.5, 0.25}}, "mean MFU"};
const Tolerances kTolerances{1e-5, 1e-10, 1e-3};

// A finished one-rank run that recorded `mfu` (if >= 0) and the outcome `outcome`.
TestRun run(double mfu, const std::string& outcome = "") {
  TestOutput output;
  output.complete = true;
  output.notes = {"model m; cluster c"};
  if (!outcome.empty()) output.outcomes = {outcome};
  if (mfu >= 0) {
    Value value;
    value.kind = Value::Kind::real;
    value.values = {mfu};
    output.values = {{"mfu", value}};
  }
  TestRun result;
  result.finished = true;
  result.ranks = {output};
  return result;
}

const TestRun reference = run(0.5, "your plan tp=8 (the reference's)");

}  // namespace

TEST_CASE("each ratio to the reference's value earns the first tier it reaches", "[tiers]") {
  CHECK(judge_tiered(kTiers, reference, run(0.5), kTolerances).share == 1);
  CHECK(judge_tiered(kTiers, reference, run(0.52), kTolerances).share ==
        1);  // better than the search: capped
  CHECK(judge_tiered(kTiers, reference, run(0.485), kTolerances).share == 1);
  CHECK(judge_tiered(kTiers, reference, run(0.48), kTolerances).share == 0.75);
  CHECK(judge_tiered(kTiers, reference, run(0.40), kTolerances).share == 0.5);
  CHECK(judge_tiered(kTiers, reference, run(0.25), kTolerances).share == 0.25);
  const TieredCase low = judge_tiered(kTiers, reference, run(0.2), kTolerances);
  CHECK(low.share == 0);
  CHECK(low.value == 0.2);  // the leaderboard counts it
  CHECK_THAT(low.output, Contains("the lowest tier asks for 0.5 of the reference's"));
}

TEST_CASE("a value above the exhaustive search's is capped at it, and said", "[tiers]") {
  const TieredCase beats = judge_tiered(kTiers, reference, run(0.99), kTolerances);
  CHECK(beats.share == 1);
  CHECK(beats.value == 0.5);  // the leaderboard counts the reference's, not 0.99
  CHECK_THAT(beats.output, Contains("mfu 0.9900, 1.980 of the reference's 0.5000") &&
                               Contains("This beats the kit's exhaustive search") &&
                               Contains("capped"));
  CHECK_THAT(judge_tiered(kTiers, reference, run(0.5), kTolerances).output, !Contains("beats"));
}

TEST_CASE("a case that records no MFU (arguments to refuse) is judged exactly, off the board",
          "[tiers]") {
  TestRun refused;
  refused.finished = true;
  TestOutput output;
  output.complete = true;
  Value one;
  one.kind = Value::Kind::integer;
  one.integer = 1;
  output.values = {{"throws std::invalid_argument", one}};
  refused.ranks = {output};
  const TieredCase right = judge_tiered(kTiers, refused, refused, kTolerances);
  CHECK(right.share == 1);
  CHECK_FALSE(right.counts_on_leaderboard);
  TestRun returned = refused;
  returned.ranks[0].values[0].second.integer = 0;
  const TieredCase wrong = judge_tiered(kTiers, refused, returned, kTolerances);
  CHECK(wrong.share == 0);
  CHECK_THAT(wrong.output, Contains("throws std::invalid_argument: expected 1, got 0"));
}

TEST_CASE("the feedback gives both values and the student's outcome, never the reference's",
          "[tiers]") {
  const TieredCase half =
      judge_tiered(kTiers, reference, run(0.4, "your plan tp=2: valid"), kTolerances);
  CHECK_THAT(half.output, Contains("mfu 0.4000, 0.800 of the reference's 0.5000: 0.5 of this "
                                   "case's points") &&
                              Contains("your plan tp=2: valid"));
  CHECK(half.output.find("reference's)") == std::string::npos);
}

TEST_CASE("an invalid plan, an exception, a crash or a missing value earn nothing", "[tiers]") {
  CHECK(judge_tiered(kTiers, reference, run(0), kTolerances).share == 0);  // invalid plans record 0
  CHECK(judge_tiered(kTiers, reference, run(-1), kTolerances).share == 0);  // no value recorded
  TestRun threw = run(-1);
  threw.ranks[0].errors = {"NotImplemented: dtk::plan_training"};
  const TieredCase stub = judge_tiered(kTiers, reference, threw, kTolerances);
  CHECK(stub.share == 0);
  CHECK_THAT(stub.output, Contains("not implemented yet: NotImplemented: dtk::plan_training"));
  TestRun crashed;
  crashed.problem = "crashed with signal 11";
  CHECK_THAT(judge_tiered(kTiers, reference, crashed, kTolerances).output, Contains("signal 11"));
  CHECK_THAT(judge_tiered(kTiers, run(-1), run(0.5), kTolerances).output,
             Contains("a problem of the grading kit"));
}
