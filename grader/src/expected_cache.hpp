// The reference's outputs of one batch, computed once: every hand-in of a batch is graded with
// the same seed and manifest, so the expected outputs are the same for all of them. The first
// grading to compute them saves them; the others load them instead of running the reference.
// The cache lives in a directory only the grader can read (the expected outputs must stay out
// of the submissions' reach), one file per seed and test selection.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "test_runs.hpp"

namespace dtk::grade {

// The runs saved for `key` under `dir`, if there are any and they hold every test of `ids`.
std::optional<std::map<std::string, TestRun>> load_expected(const std::string& dir,
                                                            const std::string& key,
                                                            const std::vector<std::string>& ids);

// Saves `runs` for `key` under `dir` (written to a temporary file, then renamed: a grading that
// loads at the same time sees the whole file or none).
void save_expected(const std::string& dir, const std::string& key,
                   const std::map<std::string, TestRun>& runs);

}  // namespace dtk::grade
