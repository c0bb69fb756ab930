// From test runs to points, by rubric item: each item of a function is judged on every case it
// lists and earns its points only if it is right on all of them, or, for a function scored by
// tiers (Part 13), the mean of its cases' shares (tiers.hpp); the feedback names the cases it
// fails on. Tiers with a leaderboard add the mean of the student's value to the report's. Code that
// calls something forbidden (seen by the symbol audit or at run time) costs all the points of its
// part, or of its function (the manifest's forbidden_call_costs).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "manifest.hpp"
#include "report.hpp"
#include "scoring/judge.hpp"

namespace dtk::grade {

// What happened to one case (a test id): the reference's run, and the student's run or why it
// could not run.
struct CaseOutcome {
  const TestRun* expected = nullptr;
  const TestRun* actual = nullptr;  // nullptr when it could not run
  std::string blocked;              // why it could not run
};

// Graded function -> the forbidden calls its code makes.
using ForbiddenCalls = std::map<std::string, std::set<std::string>>;

// `cases`: test id -> outcome, for the cases that were planned (an item's other cases are left
// out of it).
void score(const Manifest& manifest, const std::map<std::string, CaseOutcome>& cases,
           const ForbiddenCalls& forbidden, Report& report);

// "<who> gets no points: ... Its code calls:\n  MPI_Bcast (called from ...)\n". The rules it
// states (the allowed MPI and Communicator calls, the forbidden functions) are the part's.
std::string forbidden_text(const Manifest& manifest, const Part& part, const std::string& who,
                           const std::set<std::string>& calls);

// The forbidden calls that cost `function` its points: those of its own code, or of its whole
// part's code (the manifest's forbidden_call_costs).
std::set<std::string> forbidden_for(const Manifest& manifest, const Part& part,
                                    const std::string& function, const ForbiddenCalls& forbidden);

// What a forbidden call in the code of `function` costs: "Part 3" or "dtk::my_allreduce".
std::string forbidden_cost(const Manifest& manifest, const Part& part, const std::string& function);

}  // namespace dtk::grade
