// Judging one test: the student's outputs against the reference's, with tolerances. Only
// results are compared, never how they were computed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "limits.hpp"
#include "scoring/test_runs.hpp"

namespace dtk::grade {

struct Verdict {
  bool passed = false;
  std::string output;  // what failed and why (empty when passed)
};

// Judges one case: every value, or with `result_part` only the values of that part of the
// result. On every rank the student's calls must also have sent about as many bytes to the
// other ranks as the reference's (at least three quarters of them; with `sending_shared`, all
// ranks together), and received what their result needs from the other ranks (records.hpp).
Verdict judge(const TestRun& expected, const TestRun& actual, const Tolerances& tolerances,
              const std::string& result_part = "", bool sending_shared = false);

// Why a case cannot be judged at all, ending in a newline: the reference failed on it (a problem
// of the kit), the student's run did not finish (crash, timeout), or the student's call threw
// on some rank. "" when both ran to the end.
std::string run_problem(const TestRun& expected, const TestRun& actual);

// The forbidden MPI calls the student's ranks recorded, each once.
std::vector<std::string> forbidden_calls(const TestRun& actual);

// Blocks of feedback joined up to about `max_chars`: the first always whole, then as many as
// fit; `left_out(n)` is the line that counts the n blocks that did not.
std::string fitted(const std::vector<std::string>& blocks, std::size_t max_chars,
                   const std::function<std::string(std::size_t)>& left_out);

// The reference's description of the test's configuration ("batch 3, slice width 2").
std::string configuration(const TestRun& expected);

}  // namespace dtk::grade
