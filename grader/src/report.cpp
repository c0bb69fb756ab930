#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

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

void write_results_json(const Report& report, const std::string& path) {
  nlohmann::json tests = nlohmann::json::array();
  for (const TestResult& test : report.tests) {
    tests.push_back({{"name", shown_name(test.name)},
                     {"number", test.number},
                     {"score", test.score},
                     {"max_score", test.max_score},
                     {"status", test.score >= test.max_score ? "passed" : "failed"},
                     {"output", shown_text(test.output)},
                     {"visibility", report.visibility}});
  }
  nlohmann::json results = {{"score", rounded(report.score() + report.bonus)},
                            {"execution_time", rounded(report.execution_time)},
                            {"output", shown_text(report.output)},
                            {"visibility", report.visibility},
                            {"stdout_visibility", "hidden"},
                            {"tests", tests}};
  if (!report.leaderboard.empty()) {
    nlohmann::json board = nlohmann::json::array();
    for (const LeaderboardEntry& entry : report.leaderboard) {
      board.push_back({{"name", shown_name(entry.name)},
                       {"value", rounded(entry.value)},
                       {"order", entry.higher_is_better ? "desc" : "asc"}});
    }
    results["leaderboard"] = board;
  }
  std::ofstream file(path, std::ios::trunc);
  // Every text is valid UTF-8 by now; replacing what is not anyway means dump() cannot throw.
  file << results.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  if (!file.flush()) throw std::runtime_error("cannot write " + path);
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
