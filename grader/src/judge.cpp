#include "judge.hpp"

#include <dtk/rank_groups.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace dtk::grade {

namespace {

constexpr std::size_t kShowAll = 48;      // tensors this small are shown in full
constexpr std::size_t kMaxOutput = 2500;  // characters of feedback per test

// Floats with the digits a float has; doubles with ten.
std::string number(double value, bool is_float = false) {
  char text[32];
  std::snprintf(text, sizeof text, is_float ? "%.7g" : "%.10g", value);
  return text;
}

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

// Row-major index -> "(i, j)".
std::string index_text(std::size_t index, const std::vector<std::size_t>& shape) {
  std::vector<std::size_t> at(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    at[d] = shape[d] ? index % shape[d] : 0;
    index = shape[d] ? index / shape[d] : 0;
  }
  return shape_text(at);
}

// A small tensor as nested rows: [[1, 2], [3, 4]].
std::string tensor_text(const Value& value) {
  const bool is_float = value.dtype == "float";
  auto row = [&](std::size_t begin, std::size_t end) {
    std::string text = "[";
    for (std::size_t i = begin; i < end; ++i) {
      text += (i > begin ? ", " : "") + number(value.values[i], is_float);
    }
    return text + "]";
  };
  if (value.shape.size() != 2) return row(0, value.values.size());
  std::string text = "[";
  const std::size_t cols = value.shape[1];
  for (std::size_t r = 0; r < value.shape[0]; ++r) {
    text += (r ? ",\n     " : "") + row(r * cols, (r + 1) * cols);
  }
  return text + "]";
}

bool close(double expected, double actual, double rtol, bool relative_only) {
  const double scale = relative_only ? std::fabs(expected) : std::max(std::fabs(expected), 1.0);
  return std::fabs(actual - expected) <= rtol * scale;  // false for NaN
}

std::string compare(const std::string& name, const Value& expected, const Value& actual,
                    const Tolerances& tolerances) {
  if (actual.kind != expected.kind) return name + ": has the wrong kind of value";
  if (expected.kind == Value::Kind::integer) {
    if (expected.integer == actual.integer) return "";
    return name + ": expected " + std::to_string(expected.integer) + ", got " +
           std::to_string(actual.integer);
  }
  if (expected.kind == Value::Kind::real) {
    if (close(expected.values[0], actual.values[0], tolerances.real_rtol, true)) return "";
    return name + ": expected " + number(expected.values[0]) + " (within " +
           number(100 * tolerances.real_rtol) + "%), got " + number(actual.values[0]);
  }
  const bool small = expected.values.size() <= kShowAll && actual.values.size() <= kShowAll;
  if (expected.shape != actual.shape) {
    std::string text = name + ": expected shape " + shape_text(expected.shape) + ", got " +
                       shape_text(actual.shape);
    if (small)
      text += "\n  expected " + tensor_text(expected) + "\n  actual   " + tensor_text(actual);
    return text;
  }
  const bool exact = expected.dtype == "int32" || expected.dtype == "int64";
  const double rtol = exact                       ? 0
                      : expected.dtype == "float" ? tolerances.float_rtol
                                                  : tolerances.double_rtol;
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < expected.values.size(); ++i) {
    if (!close(expected.values[i], actual.values[i], rtol, false)) {
      if (wrong++ == 0) first = i;
    }
  }
  if (wrong == 0) return "";
  std::string text = name + ": " + std::to_string(wrong) + " of " +
                     std::to_string(expected.values.size()) + " values differ; first at " +
                     index_text(first, expected.shape) + ": expected " +
                     number(expected.values[first], expected.dtype == "float") + ", got " +
                     number(actual.values[first], expected.dtype == "float");
  if (small)
    text += "\n  expected " + tensor_text(expected) + "\n  actual   " + tensor_text(actual);
  return text;
}

// Everything wrong with one rank's outputs, one finding per line.
std::string rank_findings(const TestOutput& expected, const TestOutput& actual,
                          const Tolerances& tolerances) {
  if (!actual.errors.empty()) {
    const std::string& error = actual.errors.front();
    if (error.rfind("NotImplemented", 0) == 0) return "not implemented yet: " + error;
    return "threw an exception: " + error;
  }
  std::string findings;
  for (const auto& [name, value] : expected.values) {
    const Value* mine = actual.find(name);
    const std::string finding = mine ? compare(name, value, *mine, tolerances) : name + ": missing";
    if (!finding.empty()) findings += finding + "\n";
  }
  return findings;
}

std::string indented(const std::string& text) {
  std::string out = "  ";
  for (std::size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '\n' && i + 1 < text.size()) out += "  ";
  }
  return out;
}

std::string trimmed(std::string text) {
  if (text.size() > kMaxOutput) text = text.substr(0, kMaxOutput) + "\n[... more left out ...]\n";
  return text;
}

}  // namespace

std::string configuration(const TestRun& expected) {
  std::string text;
  if (!expected.ranks.empty()) {
    for (const std::string& note : expected.ranks.front().notes)
      text += (text.empty() ? "" : "; ") + note;
  }
  return text;
}

Verdict judge(const TestRun& expected, const TestRun& actual, const Tolerances& tolerances) {
  Verdict verdict;
  std::set<std::string> forbidden;
  for (const TestOutput& rank : actual.ranks)
    forbidden.insert(rank.forbidden.begin(), rank.forbidden.end());
  verdict.forbidden.assign(forbidden.begin(), forbidden.end());

  if (!expected.finished) {
    verdict.output =
        "the reference solution failed on this test, so it cannot be judged (a "
        "problem of the grading kit, not of the submission): " +
        expected.problem;
    return verdict;
  }
  if (!actual.finished) {
    verdict.output = trimmed(actual.problem);
    return verdict;
  }
  // Identical findings of several ranks are reported once.
  std::vector<std::string> per_rank;
  for (std::size_t r = 0; r < expected.ranks.size(); ++r) {
    per_rank.push_back(rank_findings(expected.ranks[r], actual.ranks[r], tolerances));
  }
  const std::vector<dtk::RankGroup> findings = dtk::group_identical(per_rank);
  verdict.passed = findings.empty();
  std::string output;
  for (const auto& [text, ranks] : findings) {
    // One finding follows its ranks on the line; several go below them, indented.
    const bool several = text.find('\n') + 1 < text.size();
    if (expected.ranks.size() > 1)
      output += "[" + dtk::rank_list(ranks) + "]" + (several ? "\n" : " ");
    output += several ? indented(text) : text;
    if (output.back() != '\n') output += "\n";
  }
  verdict.output = trimmed(output);
  return verdict;
}

}  // namespace dtk::grade
