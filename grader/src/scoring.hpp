// From verdicts to points: partial credit per test, and no points at all for a part whose code
// calls something forbidden (seen by the symbol audit or at run time).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "judge.hpp"
#include "manifest.hpp"
#include "report.hpp"

namespace dtk::grade {

struct JudgedTest {
  const Part* part;
  TestCase test;
  std::string number;         // "3.4"
  std::string configuration;  // from the reference's notes
  Verdict verdict;
};

// `forbidden`: part number -> the forbidden calls its code makes.
void score(const Manifest& manifest, const std::vector<JudgedTest>& tests,
           const std::map<int, std::set<std::string>>& forbidden, Report& report);

// "Part 3 gets no points: ... its code calls:\n  MPI_Bcast (called from ...)\n". The rules it
// states (the allowed MPI calls, the forbidden functions) are the manifest's.
std::string forbidden_text(const Manifest& manifest, int part, const std::set<std::string>& calls);

}  // namespace dtk::grade
