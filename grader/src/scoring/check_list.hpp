// dtk-grade --list-checks: every hidden check the runner registers, with where each assignment's
// manifest uses it (its part, its kind of case, the ranks its cases run on, its rubric items).
#pragma once

#include <ostream>

#include "compile/toolchain.hpp"

namespace dtk::grade {

void print_check_list(const Toolchain& toolchain, std::ostream& out);

}  // namespace dtk::grade
