// The reference's outputs, computed once for gradings that share a seed and a manifest: a batch's
// hand-ins (every one is graded with the same seed and manifest), or the grader's self-tests. A
// grading loads the tests it needs that are saved, runs the reference for the others only and
// saves them beside the rest. The cache lives in a directory only the grader can read (the
// expected outputs must stay out of the submissions' reach), one file per key (grading.cpp: the
// assignment, the seed, and the reference build it came from).
#pragma once

#include <map>
#include <string>

#include "scoring/test_runs.hpp"

namespace dtk::grade {

// Test id -> its saved run, for every test saved for `key` under `dir` (none if the file is
// missing or unreadable).
std::map<std::string, TestRun> load_expected(const std::string& dir, const std::string& key);

// Saves `runs` for `key` under `dir`, in place of what was saved (written to a temporary file,
// then renamed: a grading that loads at the same time sees the whole file or none; of two
// gradings saving at once, the last one's file stays, and the tests it lacks are run again
// by the next grading that needs them).
void save_expected(const std::string& dir, const std::string& key,
                   const std::map<std::string, TestRun>& runs);

}  // namespace dtk::grade
