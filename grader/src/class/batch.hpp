// dtk-grade --batch DIR: a whole class. Each hand-in is graded by a dtk-grade process of its own
// (exactly a single grading, same seed, so the scores are the same), `--jobs` at a time, each
// job slot with its own sandbox user. The results go to <out>/<student>/; a batch that was
// interrupted goes on where it stopped (the hand-ins it graded are kept unless --regrade),
// with the seed of its first run (<out>/batch.json). At the end: the gradebook CSV and the
// summary page, over every student graded so far.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cli.hpp"
#include "compile/toolchain.hpp"
#include "manifest.hpp"
#include "report.hpp"

namespace dtk::grade {

// One student's line of the gradebook.
struct GradebookRow {
  std::string student;
  std::map<int, double> parts;  // part number -> points (the bonus left out)
  double total = 0, bonus = 0;
  std::uint64_t seed = 0;
  double seconds = 0;
  std::string status;  // "graded", or what went wrong with the grader
  // The failed tests: name -> the feedback (for the summary page).
  std::map<std::string, std::string> failed;
  std::vector<LeaderboardEntry> leaderboard;  // results.json's (the summary page ranks by them)
  // Entry name -> what grading it again alone said (class/leaderboards.hpp), for the best.
  std::map<std::string, std::string> leaderboard_check;
};

// Returns dtk-grade's exit status: 0 when every hand-in was graded, 1 when the grader failed
// on some (their rows say how), 2 for bad usage. Progress goes to `log`.
int grade_batch(const Options& options, const Manifest& manifest, const Toolchain& toolchain,
                std::ostream& log);

}  // namespace dtk::grade
