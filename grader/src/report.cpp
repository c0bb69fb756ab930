#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "files.hpp"
#include "text.hpp"

namespace dtk::grade {

namespace {

// Totals with at most four decimals (a sum of thirds prints as 15, not 15.000000000000002).
double rounded(double value) { return std::round(value * 10000) / 10000; }

std::string fixed(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

}  // namespace

double Report::score() const {
  double total = 0;
  for (const PartResult& part : parts) total += part.score;
  return total;
}

double Report::max_score() const {
  double total = 0;
  for (const PartResult& part : parts) total += part.max_score;
  return total;
}

namespace {

nlohmann::json test_json(const TestResult& test, const std::string& visibility) {
  return {{"name", shown_name(test.name)},
          {"number", test.number},
          {"score", test.score},
          {"max_score", test.max_score},
          {"status", test.score >= test.max_score ? "passed" : "failed"},
          {"output", shown_text(test.output)},
          {"visibility", visibility}};
}

nlohmann::json leaderboard_json(const std::vector<LeaderboardEntry>& leaderboard) {
  nlohmann::json board = nlohmann::json::array();
  for (const LeaderboardEntry& entry : leaderboard) {
    board.push_back({{"name", shown_name(entry.name)},
                     {"value", rounded(entry.value)},
                     {"order", entry.higher_is_better ? "desc" : "asc"}});
  }
  return board;
}

// Written by write_file: never through a link or file planted where results.json goes.
void write_json_file(const nlohmann::json& results, const std::string& path) {
  // Every text is valid UTF-8 by now; replacing what is not anyway means dump() cannot throw.
  write_file(path, results.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot read " + path);
  try {
    nlohmann::json results = nlohmann::json::parse(file);
    if (results.is_object() && results.contains("tests") && results["tests"].is_array())
      return results;
  } catch (const nlohmann::json::exception&) {
  }
  throw std::runtime_error(path + " is not a results.json of dtk-grade's");
}

}  // namespace

bool is_speed_bonus_test(const std::string& name) {
  return name.size() >= kSpeedBonusTest.size() &&
         name.compare(name.size() - kSpeedBonusTest.size(), kSpeedBonusTest.size(),
                      kSpeedBonusTest) == 0;
}

void write_results_json(const Report& report, const std::string& path) {
  nlohmann::json tests = nlohmann::json::array();
  for (const TestResult& test : report.tests) tests.push_back(test_json(test, report.visibility));
  nlohmann::json results = {{"score", rounded(report.score() + report.bonus)},
                            {"execution_time", rounded(report.execution_time)},
                            {"output", shown_text(report.output)},
                            // Our feedback is plain text laid out with newlines and indentation
                            // (expected and actual values aligned): shown as text, never read
                            // as Markdown or HTML, where `*`, `_`, `<` and indentation mean
                            // something else.
                            {"output_format", "text"},
                            {"test_output_format", "text"},
                            {"test_name_format", "text"},
                            {"visibility", report.visibility},
                            {"stdout_visibility", "hidden"},
                            {"tests", tests}};
  if (!report.leaderboard.empty()) results["leaderboard"] = leaderboard_json(report.leaderboard);
  if (!report.bonus_state.empty()) results["extra_data"]["speed_bonus"] = report.bonus_state;
  if (!report.graded_parts.empty()) results["extra_data"]["graded_parts"] = report.graded_parts;
  write_json_file(results, path);
}

namespace {

nlohmann::json total(double score, double max) { return {{"score", score}, {"max", max}}; }

// The speed bonus's tests, by function: {"my_allreduce": {"score": 5, "max": 0}}.
nlohmann::json bonus_totals(const Report& report) {
  nlohmann::json bonus = nlohmann::json::object();
  for (const TestResult& test : report.tests) {
    if (is_speed_bonus_test(test.name)) bonus[test.function] = total(test.score, test.max_score);
  }
  return bonus;
}

}  // namespace

std::string totals_path(const std::string& results_path) {
  const std::filesystem::path results(results_path);
  if (results.filename() == "results.json") return results.parent_path() / "totals.json";
  std::filesystem::path totals = results;
  if (totals.extension() == ".json") totals.replace_extension();
  return totals.string() + ".totals.json";
}

void write_totals_json(const Report& report, const std::string& path) {
  nlohmann::json parts = nlohmann::json::object(), functions = nlohmann::json::object();
  for (const PartResult& part : report.parts)
    parts[std::to_string(part.number)] = total(part.score, part.max_score);
  for (const TestResult& test : report.tests) {
    if (is_speed_bonus_test(test.name)) continue;
    nlohmann::json& sums = functions[test.function];
    if (sums.is_null()) sums = {{"part", test.part}, {"score", 0.0}, {"max", 0.0}};
    sums["score"] = sums["score"].get<double>() + test.score;
    sums["max"] = sums["max"].get<double>() + test.max_score;
  }
  write_json_file({{"parts", parts}, {"functions", functions}, {"bonus", bonus_totals(report)}},
                  path);
}

std::vector<TestResult> read_results_tests(const std::string& path) {
  std::vector<TestResult> tests;
  const nlohmann::json results = read_json_file(path);
  for (const nlohmann::json& test : results["tests"]) {
    if (!test.is_object()) continue;
    TestResult result;
    result.name = test.value("name", "");
    result.number = test.value("number", "");
    result.score = test.value("score", 0.0);
    result.max_score = test.value("max_score", 0.0);
    result.output = test.value("output", "");
    tests.push_back(result);
  }
  return tests;
}

void replace_speed_bonus(const std::string& path, const Report& bonus) {
  nlohmann::json results = read_json_file(path);
  double score = results.value("score", 0.0);
  const std::string visibility = results.value("visibility", "visible");
  nlohmann::json tests = nlohmann::json::array();
  for (const nlohmann::json& test : results["tests"]) {
    if (is_speed_bonus_test(test.value("name", ""))) {
      score -= test.value("score", 0.0);
    } else {
      tests.push_back(test);
    }
  }
  for (const TestResult& test : bonus.tests) tests.push_back(test_json(test, visibility));
  results["tests"] = tests;
  results["score"] = rounded(score + bonus.bonus);
  // The bonus's entries (time ratios, lower first) are replaced; the others (a tiered part's
  // mean, higher first) stay.
  nlohmann::json board = leaderboard_json(bonus.leaderboard);
  for (const nlohmann::json& entry : results.value("leaderboard", nlohmann::json::array())) {
    if (entry.is_object() && entry.value("order", "") == "desc") board.push_back(entry);
  }
  results.erase("leaderboard");
  if (!board.empty()) results["leaderboard"] = board;
  if (bonus.bonus_state.empty()) {
    if (results.contains("extra_data")) results["extra_data"].erase("speed_bonus");
  } else {
    results["extra_data"]["speed_bonus"] = bonus.bonus_state;
  }
  write_json_file(results, path);

  const std::string totals_file = totals_path(path);
  std::ifstream file(totals_file);
  if (!file) return;  // graded before the grader wrote totals
  nlohmann::json totals = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (!totals.is_object())
    throw std::runtime_error(totals_file + " is not a totals.json of dtk-grade's");
  totals["bonus"] = bonus_totals(bonus);
  write_json_file(totals, totals_file);
}

Report internal_error_report(const std::string& error) {
  Report report;
  report.visibility = "visible";
  report.output = "Internal error, please tell the course staff: " + error + "\n";
  return report;
}

void print_feedback(const Report& report, std::ostream& out) {
  out << "\n" << shown_text(report.output) << "\n";
  for (const TestResult& test : report.tests) {
    if (test.score < test.max_score) out << "FAILED " << shown_name(test.name) << "\n";
  }
  out << "\n";
  print_table(report, out);
}

void print_table(const Report& report, std::ostream& out) {
  if (!report.graded_parts.empty()) {
    out << "Graded: Part" << (report.graded_parts.size() > 1 ? "s " : " ")
        << spoken_list(report.graded_parts) << " only (--parts)\n";
  }
  // The title column is as wide as the longest title ("Megatron, ... (optional)").
  int width = 5;
  for (const PartResult& part : report.parts) {
    width = std::max(width, static_cast<int>(shown_name(part.title).size()));
  }
  char line[64];
  std::snprintf(line, sizeof line, " %16s %10s\n", "score", "tests");
  out << "Part   " << std::string(width, ' ') << line;
  for (const PartResult& part : report.parts) {
    const std::string title = shown_name(part.title);
    std::snprintf(line, sizeof line, "%-6d ", part.number);
    out << line << title << std::string(width - title.size(), ' ');
    std::snprintf(line, sizeof line, " %7s / %-6s %4d / %-3d\n", fixed(part.score).c_str(),
                  fixed(part.max_score).c_str(), part.passed, part.total);
    out << line;
  }
  std::snprintf(line, sizeof line, " %7s / %-6s\n", fixed(report.score()).c_str(),
                fixed(report.max_score()).c_str());
  out << "Total  " << std::string(width, ' ') << line;
  if (report.bonus > 0) {
    std::snprintf(line, sizeof line, " %7s\n", ("+" + fixed(report.bonus)).c_str());
    out << "Bonus  " << std::string(width, ' ') << line;
  }
  for (const LeaderboardEntry& entry : report.leaderboard) {
    std::snprintf(line, sizeof line, " %.4f (%s is better)\n", entry.value,
                  entry.higher_is_better ? "higher" : "lower");
    out << "Leaderboard  " << shown_name(entry.name) << line;
  }
}

std::string autolab_line(const Report& report) {
  nlohmann::json scores = nlohmann::json::object();
  nlohmann::json scoreboard = {rounded(report.score() + report.bonus)};
  for (const PartResult& part : report.parts) {
    scores["Part " + std::to_string(part.number)] = rounded(part.score);
    scoreboard.push_back(rounded(part.score));
  }
  if (report.bonus > 0) scores["Bonus"] = rounded(report.bonus);
  return nlohmann::json({{"scores", scores}, {"scoreboard", scoreboard}}).dump();
}

}  // namespace dtk::grade
