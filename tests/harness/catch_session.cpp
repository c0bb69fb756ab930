// Catch2's own code (CATCH_CONFIG_RUNNER: everything but a main) and the session of
// catch_session.hpp, which only this translation unit can declare.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_session.hpp"

namespace dtk::testing {

int run_catch_session(int argc, char** argv, bool quiet) {
  Catch::Session session;
  const int status = session.applyCommandLine(argc, argv);
  if (status != 0) return status;
  if (quiet) session.configData().outputFilename = "/dev/null";
  return session.run();
}

}  // namespace dtk::testing
