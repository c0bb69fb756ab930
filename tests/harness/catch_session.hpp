// Catch2's session, run from a main() of one's own. Catch2's code is compiled once, in
// catch_session.cpp (the largest translation unit of the build, about 20 s), for the harness's
// main (dtk_test_main.cpp) and the grader's unit tests alike.
#pragma once

namespace dtk::testing {

// Runs the test cases the command line selects and returns the process's exit status; with
// `quiet`, their report goes to /dev/null.
int run_catch_session(int argc, char** argv, bool quiet = false);

}  // namespace dtk::testing
