// dtk-grade-runner --derive: what can only be judged from the outputs of every rank of a test,
// computed after its launch by the grader, as itself, in a process where no student code runs
// (the student library is never loaded here) — the MFU of a student's plan, say, which the
// student's own process could have faked.
//
//   dtk-grade-runner --derive DIR --configs DIR TEST_ID...
//
// DIR holds `key` (32 hex digits), `seed` (the grading's), and rank<R>.in for each rank: the
// records of the tests (records.hpp) as the grader read them from the launch, signed with that
// key. For each test, the check's derive function (check_context.hpp) records on each rank what
// it derives, into DIR/rank<R>.out (the same key); the grader adds those records to the rank's.
#pragma once

namespace dtk::grade {

int derive_main(int argc, char** argv);

}  // namespace dtk::grade
