// The grader's unit tests: Catch2's main. No MPI, no processes, no sandbox: they exercise the
// grader's parsers and its judge on text and data built in memory, with the hidden checks the
// runner registers (the build's checks.json), as dtk-grade sees them.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "check_registry.hpp"

int main(int argc, char** argv) {
  dtk::grade::load_checks_json(DTK_GRADE_CHECKS_JSON);
  return Catch::Session().run(argc, argv);
}
