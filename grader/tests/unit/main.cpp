// The grader's unit tests: their main (Catch2's own code is the test harness's dtk_catch2). No
// MPI, no processes, no sandbox: they exercise the grader's parsers and its judge on text and data
// built in memory, with the hidden checks the runner registers (the build's checks.json), as
// dtk-grade sees them.
#include "catch_session.hpp"
#include "check_registry.hpp"

int main(int argc, char** argv) {
  dtk::grade::load_checks_json(DTK_GRADE_CHECKS_JSON);
  return dtk::testing::run_catch_session(argc, argv);
}
