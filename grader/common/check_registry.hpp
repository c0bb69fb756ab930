// The hidden checks the kit has: what the grader and the runner both need to know of each.
//
// A check is registered once, beside its code, in the runner (DTK_GRADE_CHECK in
// grader/runner/check_context.hpp): the runner therefore knows every check. The build writes
// them to checks.json (dtk-grade-runner --write-checks), which dtk-grade loads with its
// toolchain (load_checks_json), so that a family of checks is added by adding its file only.
#pragma once

#include <string>
#include <vector>

namespace dtk::grade {

// How a check's case texts read (test_case.hpp lists them).
enum class CaseKind { layout, config, budget, buffer, pipeline, zero, fields, plan };

struct CheckInfo {
  std::string function;  // the student function, e.g. "get_info"
  CaseKind kind = CaseKind::fields;
  bool collective = false;  // runs on several ranks; otherwise one process plays every rank
  bool typed = false;       // has a float and a double version (buffer: and an int32 one)
  // The parts of the result the check records under names of their own ("mp_comm: members and
  // order"): a rubric item of the same name is judged on that part only (see manifest.hpp).
  std::vector<std::string> result_parts = {};
  bool reduces = false;  // buffer checks: takes an MPI_Op (sum, min or max)
  // The MPI collective a speed bonus times it against ("" if it cannot be timed).
  std::string timed_against = "";
  // fields checks: the keys ("heads" for "heads=4") and plain words ("zigzag") its case texts
  // may use besides p=P and the type; a manifest case using another is refused.
  std::vector<std::string> case_words = {};
  // Part 7: a collective of one's own may share the sending unevenly (a tree, say), so the
  // bytes its ranks sent are judged summed over the ranks, not rank by rank.
  bool sending_shared = false;
  // Set by the registration of a check with a derive function (check_context.hpp): part of
  // its outputs is derived after the launch, outside the processes that ran student code.
  bool derived = false;
};

// Adds a check; throws std::logic_error when its function is registered already.
void register_check(CheckInfo check);
// Every check registered, in registration order.
const std::vector<CheckInfo>& all_checks();
// nullptr if no check has that name.
const CheckInfo* find_check(const std::string& function);

const char* kind_name(CaseKind kind);

// checks.json: every registered check, as the runner writes it and dtk-grade reads it.
std::string checks_json();
// Registers the checks of a checks.json; throws std::runtime_error naming the file and the
// problem when it is missing or malformed.
void load_checks_json(const std::string& path);

}  // namespace dtk::grade
