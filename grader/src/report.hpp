// The grading's results: Gradescope's results.json, a table for the terminal, Autolab's line.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace dtk::grade {

// The name of a speed bonus's test ends so: "Part 7 | my_allreduce: speed bonus".
inline const std::string kSpeedBonusTest = ": speed bonus";
bool is_speed_bonus_test(const std::string& name);

struct TestResult {
  std::string name;    // "Part 3 | naive_collect_forward_input: column block r from ..."
  std::string number;  // "3.4"
  double score = 0, max_score = 0;
  std::string output;    // what failed and why
  int part = 0;          // 3
  std::string function;  // "naive_collect_forward_input"
};

struct PartResult {
  int number = 0;
  std::string title;
  double score = 0, max_score = 0;
  int passed = 0, total = 0;
};

struct LeaderboardEntry {
  std::string name;
  double value = 0;
  bool higher_is_better = false;  // Gradescope's "order": "desc" (else "asc")
};

struct Report {
  std::vector<TestResult> tests;
  std::vector<PartResult> parts;
  double bonus = 0;  // extra points, beyond the parts' (speed bonuses)
  std::vector<LeaderboardEntry> leaderboard;
  // The speed bonus: "" (none), "timed", or "pending" / "deferred" while some function still
  // has to be timed (results.json's extra_data.speed_bonus, which a batch reads).
  std::string bonus_state;
  std::string output;  // the summary shown above the tests
  std::string visibility;
  std::vector<int> graded_parts;  // --parts: the only parts graded (empty: all of them)
  double execution_time = 0;

  double score() const;  // the parts', bonus not included
  double max_score() const;
};

// Gradescope's format (score with the bonus, execution_time, output, visibility, tests[], and
// leaderboard when there is one), every text valid UTF-8 with control characters other than
// newlines and tabs escaped, and shown by Gradescope as plain text (output_format "text"). A
// link or other file planted at `path` is replaced, never written through. Throws
// std::runtime_error when the file cannot be written.
void write_results_json(const Report& report, const std::string& path);

// totals.json, written beside results.json: what the report's tests add up to, per part, per
// function and per speed bonus, for the kit's own tests to compare (instead of adding up
// results.json's tests again): {"parts": {"10": {"score": 3.5, "max": 7}, ...}, "functions":
// {"qkv_columns": {"part": 10, "score": .., "max": ..}, ...}, "bonus": {"my_allreduce":
// {"score": 5, "max": 0}}}, for what was graded only. `totals_path`: results.json -> totals.json,
// and a results file of another name, NAME.json (or NAME), -> NAME.totals.json, in the same
// directory.
std::string totals_path(const std::string& results_path);
void write_totals_json(const Report& report, const std::string& path);

// The tests of a results.json this grader wrote (name, number, score, max_score, output), for
// dtk-grade --bonus-only to see which functions earned all their points. Throws
// std::runtime_error naming the problem when it cannot read them.
std::vector<TestResult> read_results_tests(const std::string& path);

// Replaces the speed bonus in the results.json at `path` (its bonus tests, the leaderboard,
// the bonus in the score, extra_data.speed_bonus) with `bonus`'s: a Report of the bonus tests
// only; and the bonus of the totals.json beside it, if there is one. Throws std::runtime_error
// when it cannot.
void replace_speed_bonus(const std::string& path, const Report& bonus);

// What results.json holds when the grader itself fails: score 0 and the error.
Report internal_error_report(const std::string& error);

// The summary, the failed tests and the per-part table, for the terminal. Like results.json,
// every text is shown with its control characters escaped and invalid UTF-8 replaced.
void print_feedback(const Report& report, std::ostream& out);

void print_table(const Report& report, std::ostream& out);

// Autolab reads the last line of the output: {"scores": {"Part 1": 10, ...}, "scoreboard": [...]}.
std::string autolab_line(const Report& report);

}  // namespace dtk::grade
