// From test runs to points, by rubric item: each item of a function is judged on every case it
// lists and earns its points only if it is right on all of them; the feedback names the cases
// it fails on. A part whose code calls something forbidden (seen by the symbol audit or at run
// time) gets no points at all.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "judge.hpp"
#include "manifest.hpp"
#include "report.hpp"

namespace dtk::grade {

// What happened to one case (a test id): the reference's run, and the student's run or why it
// could not run.
struct CaseOutcome {
  const TestRun* expected = nullptr;
  const TestRun* actual = nullptr;  // nullptr when it could not run
  std::string blocked;              // why it could not run
};

// `cases`: test id -> outcome, for the cases that were planned (an item's other cases are left
// out of it); `forbidden`: part number -> the forbidden calls its code makes.
void score(const Manifest& manifest, const std::map<std::string, CaseOutcome>& cases,
           const std::map<int, std::set<std::string>>& forbidden, Report& report);

// "Part 3 gets no points: ... its code calls:\n  MPI_Bcast (called from ...)\n". The rules it
// states (the allowed MPI calls, the forbidden functions) are the manifest's.
std::string forbidden_text(const Manifest& manifest, int part, const std::set<std::string>& calls);

}  // namespace dtk::grade
