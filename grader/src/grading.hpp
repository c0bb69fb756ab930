// The steps of grading one submission, from the files to the report.
#pragma once

#include <cstdint>
#include <ostream>

#include "cli.hpp"
#include "compile/toolchain.hpp"
#include "manifest.hpp"
#include "report.hpp"

namespace dtk::grade {

struct Grading {
  Options options;
  Toolchain toolchain;
  Manifest manifest;
  std::uint64_t seed = 0;
};

// Grades options.submission. Progress goes to `log`. Throws std::runtime_error only when the
// grader itself cannot work (no scratch space, the reference does not link, ...).
Report grade_submission(const Grading& grading, std::ostream& log);

// dtk-grade --bonus-only: times the speed bonus of options.submission, already graded in
// options.results (which says the functions that earned all their points), and returns a
// report of the bonus tests only, for replace_speed_bonus.
Report time_speed_bonus(const Grading& grading, std::ostream& log);

}  // namespace dtk::grade
