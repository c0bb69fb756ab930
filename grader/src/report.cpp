#include "report.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

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
    tests.push_back({{"name", test.name},
                     {"number", test.number},
                     {"score", test.score},
                     {"max_score", test.max_score},
                     {"status", test.score >= test.max_score ? "passed" : "failed"},
                     {"output", test.output},
                     {"visibility", report.visibility}});
  }
  const nlohmann::json results = {
      {"score", rounded(report.score())}, {"execution_time", rounded(report.execution_time)},
      {"output", report.output},          {"visibility", report.visibility},
      {"stdout_visibility", "hidden"},    {"tests", tests}};
  std::ofstream file(path, std::ios::trunc);
  file << results.dump(2) << "\n";
  if (!file.flush()) throw std::runtime_error("cannot write " + path);
}

void print_table(const Report& report, std::ostream& out) {
  char line[160];
  std::snprintf(line, sizeof line, "%-6s %-46s %15s %10s\n", "Part", "", "score", "tests");
  out << line;
  for (const PartResult& part : report.parts) {
    std::snprintf(line, sizeof line, "%-6d %-46.46s %7s / %-5s %4d / %-3d\n", part.number,
                  part.title.c_str(), fixed(part.score).c_str(), fixed(part.max_score).c_str(),
                  part.passed, part.total);
    out << line;
  }
  std::snprintf(line, sizeof line, "%-53s %7s / %-5s\n", "Total", fixed(report.score()).c_str(),
                fixed(report.max_score()).c_str());
  out << line;
}

std::string autolab_line(const Report& report) {
  nlohmann::json scores = nlohmann::json::object();
  nlohmann::json scoreboard = {rounded(report.score())};
  for (const PartResult& part : report.parts) {
    scores["Part " + std::to_string(part.number)] = rounded(part.score);
    scoreboard.push_back(rounded(part.score));
  }
  return nlohmann::json({{"scores", scores}, {"scoreboard", scoreboard}}).dump();
}

}  // namespace dtk::grade
