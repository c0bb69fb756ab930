#include "scoring.hpp"

namespace dtk::grade {

namespace {
std::string joined(const std::set<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text.empty() ? "none" : text;
}
}  // namespace

std::string forbidden_text(const Manifest& manifest, int part, const std::set<std::string>& calls) {
  std::string text = "Part " + std::to_string(part) +
                     " gets no points: student code may call only these MPI functions: " +
                     joined(manifest.allowed_mpi) +
                     "; and none of these: " + joined(manifest.forbidden_symbols) +
                     ". Its code calls:\n";
  for (const std::string& call : calls) text += "  " + call + "\n";
  return text;
}

void score(const Manifest& manifest, const std::vector<JudgedTest>& tests,
           const std::map<int, std::set<std::string>>& forbidden, Report& report) {
  std::map<int, PartResult> parts;
  for (const Part& part : manifest.parts) {
    parts[part.number] = {
        part.number, part.title + (part.optional ? " (optional)" : ""), 0, part.points, 0, 0};
  }
  std::map<int, int> tests_per_part;
  for (const JudgedTest& judged : tests) ++tests_per_part[judged.part->number];

  for (const JudgedTest& judged : tests) {
    const Part& part = *judged.part;
    TestResult result;
    result.name = "Part " + std::to_string(part.number) + " | " + judged.test.function + " (" +
                  judged.test.case_text() + ")";
    result.number = judged.number;
    result.max_score = part.points / tests_per_part[part.number];
    if (!judged.configuration.empty())
      result.output = "Configuration: " + judged.configuration + "\n";
    const auto calls = forbidden.find(part.number);
    if (calls != forbidden.end()) {
      result.output += forbidden_text(manifest, part.number, calls->second);
      if (judged.verdict.passed) result.output += "The result of this test itself is right.\n";
    } else if (judged.verdict.passed) {
      result.score = result.max_score;
      result.output += "Passed.\n";
    }
    if (!judged.verdict.passed) result.output += judged.verdict.output;
    PartResult& part_result = parts[part.number];
    part_result.total += 1;
    part_result.passed += result.score > 0;
    part_result.score += result.score;
    report.tests.push_back(result);
  }
  for (auto& [number, part] : parts) {
    if (tests_per_part[number] == 0) part.max_score = 0;  // none of its tests ran
    report.parts.push_back(part);
  }
}

}  // namespace dtk::grade
