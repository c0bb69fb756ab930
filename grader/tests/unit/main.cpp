// The grader's unit tests: Catch2's main. No MPI, no processes, no sandbox: they exercise the
// grader's parsers and its judge on text and data built in memory.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
