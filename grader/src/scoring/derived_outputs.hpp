// The outputs a check derives after its launch (DTK_GRADE_DERIVED_CHECK, check_context.hpp):
// what can only be judged from every rank's outputs, or must not be computed where student code
// runs (the MFU of a student's plan). dtk-grade writes the runs' outputs back out, signed with a
// fresh key, and runs the kit's runner with --derive, as itself (no student code is loaded
// there), then adds what it derived to each rank's outputs.
#pragma once

#include <map>
#include <string>

#include "scoring/test_runs.hpp"

namespace dtk::grade {

// Completes the finished runs of derived checks in `runs`, with the kit's runner of `reference`
// (its seed, configs and sandbox), working in `dir` (new, the grader's). A run whose derivation
// fails is left unfinished, with the problem said.
void add_derived_outputs(const Launcher& reference, std::map<std::string, TestRun>& runs,
                         const std::string& dir);

}  // namespace dtk::grade
