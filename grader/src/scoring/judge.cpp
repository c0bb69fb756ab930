#include "scoring/judge.hpp"

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

// Whether a record is a schedule: "step" (micro-batch mb's forward is mb, its backward
// -1 - mb) or "chunk_step" (through chunk v: the forward is mb * kChunkStepBase + v, the backward
// -1 minus that; records.hpp).
bool is_schedule(const Value& value) {
  return value.dtype == "step" || value.dtype == "chunk_step";
}

// One element as the feedback shows it: a number with the digits of its type, or a schedule's
// step as "F3" or "B3", through a chunk "F3.1" or "B3.1".
std::string element_text(const Value& value, double element) {
  if (is_schedule(value)) {
    const long long code = std::llround(element);
    const long long step = code >= 0 ? code : -1 - code;
    const std::string op = code >= 0 ? "F" : "B";
    if (value.dtype == "step") return op + std::to_string(step);
    return op + std::to_string(step / kChunkStepBase) + "." + std::to_string(step % kChunkStepBase);
  }
  return number(element, value.dtype == "float");
}

// A small tensor as nested rows, one per line, aligned under the first after the 11 characters
// of "  expected " or "  actual   ":
//   expected [[1, 2],
//             [3, 4]]
// A schedule reads as the public tests write it: F0 F1 B0 ...
std::string tensor_text(const Value& value) {
  if (is_schedule(value)) {
    std::string text;
    for (double element : value.values)
      text += (text.empty() ? "" : " ") + element_text(value, element);
    return text.empty() ? "(no steps)" : text;
  }
  auto row = [&](std::size_t begin, std::size_t end) {
    std::string text = "[";
    for (std::size_t i = begin; i < end; ++i) {
      text += (i > begin ? ", " : "") + element_text(value, value.values[i]);
    }
    return text + "]";
  };
  if (value.shape.size() != 2) return row(0, value.values.size());
  std::string text = "[";
  const std::size_t cols = value.shape[1];
  for (std::size_t r = 0; r < value.shape[0]; ++r) {
    text += (r ? ",\n" + std::string(12, ' ') : "") + row(r * cols, (r + 1) * cols);
  }
  return text + "]";
}

bool close(double expected, double actual, double rtol, bool relative_only) {
  // The same infinity (an lse of -infinity: attention over no key) or NaN on both sides (what a
  // known mistake gives, 0 / 0 say) is the same value; nothing else is close to either.
  if (expected == actual || (std::isnan(expected) && std::isnan(actual))) return true;
  if (!std::isfinite(expected)) return false;
  const double scale = relative_only ? std::fabs(expected) : std::max(std::fabs(expected), 1.0);
  return std::fabs(actual - expected) <= rtol * scale;  // false for NaN
}

// How many elements of two tensors of the same shape differ; the first one's index in `first`.
std::size_t differences(const Value& expected, const Value& actual, double rtol,
                        std::size_t& first) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < expected.values.size(); ++i) {
    if (!close(expected.values[i], actual.values[i], rtol, false) && wrong++ == 0) first = i;
  }
  return wrong;
}

bool same_tensor(const Value& expected, const Value& actual, double rtol) {
  std::size_t first = 0;
  return expected.shape == actual.shape && differences(expected, actual, rtol, first) == 0;
}

double tensor_rtol(const Value& expected, const Tolerances& tolerances) {
  if (expected.dtype == "int32" || expected.dtype == "int64" || is_schedule(expected)) return 0;
  return expected.dtype == "float" ? tolerances.float_rtol : tolerances.double_rtol;
}

// "\n  This is exactly what <known mistake> gives." when the wrong tensor matches known
// mistakes (several can give the same tensor on a small layout).
std::string known_mistake(const std::string& name, const Value& actual,
                          const std::vector<Mistake>& mistakes, const Tolerances& tolerances) {
  std::string matches;
  for (const Mistake& mistake : mistakes) {
    if (mistake.value == name &&
        same_tensor(mistake.wrong, actual, tensor_rtol(mistake.wrong, tolerances))) {
      matches += (matches.empty() ? "" : ", or ") + mistake.description;
    }
  }
  return matches.empty() ? "" : "\n  This is exactly what " + matches + " gives.";
}

std::string compare(const std::string& name, const Value& expected, const Value& actual,
                    const Tolerances& tolerances, const std::vector<Mistake>& mistakes) {
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
  const bool steps = is_schedule(expected);
  if (expected.shape != actual.shape) {
    std::string text =
        name + ": expected " +
        (steps ? std::to_string(expected.values.size()) + " steps, got " +
                     std::to_string(actual.values.size())
               : "shape " + shape_text(expected.shape) + ", got " + shape_text(actual.shape));
    if (small)
      text += "\n  expected " + tensor_text(expected) + "\n  actual   " + tensor_text(actual);
    return text + known_mistake(name, actual, mistakes, tolerances);
  }
  const double rtol = tensor_rtol(expected, tolerances);
  std::size_t first = 0;
  const std::size_t wrong = differences(expected, actual, rtol, first);
  if (wrong == 0) return "";
  std::string text = name + ": " + std::to_string(wrong) + " of " +
                     std::to_string(expected.values.size()) +
                     (steps ? " steps differ; first at step " + std::to_string(first) + " (from 0)"
                            : " values differ; first at " + index_text(first, expected.shape)) +
                     ": expected " + element_text(expected, expected.values[first]) + ", got " +
                     element_text(actual, actual.values[first]);
  if (small)
    text += "\n  expected " + tensor_text(expected) + "\n  actual   " + tensor_text(actual);
  return text + known_mistake(name, actual, mistakes, tolerances);
}

std::string bytes_text(long long bytes) {
  return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
}

// The student's calls must send their data to the other ranks, about as much as the reference
// sends or more (a padded Allreduce sends more and is fine): `moved` and `expected_moved` are
// the bytes one rank sent (or, for a collective of one's own, all ranks together: `together`).
// "About": the Communicator's per-call estimates round down, so the same data in more, smaller
// calls counts a little less; a quarter less is allowed. The finding names the likely mistake:
// part of the data was never sent (a chunk or block cut short), or none of it was.
std::string communication_finding(long long expected_moved, long long moved, bool together) {
  if (expected_moved <= 0 || 4 * moved >= 3 * expected_moved) return "";
  moved = std::max(moved, 0LL);
  std::string text = together ? "the ranks together sent " + bytes_text(moved) +
                                    " to one another, where the reference's ranks send " +
                                    bytes_text(expected_moved) + ": "
                              : "sent " + bytes_text(moved) +
                                    " to the other ranks, where the reference sends " +
                                    bytes_text(expected_moved) + ": ";
  if (moved > 0) {
    return text +
           "some of the data never travelled. The usual cause is chunks or blocks cut too "
           "short: the elements left over when the ranks do not divide the count never sent, "
           "or a boundary off by one.\n";
  }
  return text +
         "nothing went to them. Chunks or blocks cut too short send nothing (count / p is 0 "
         "when the count is smaller than p); otherwise, the data must travel through the calls "
         "of the Communicator that the part allows, not through files or MPI calls of your "
         "own.\n";
}

// What a rank's result depends on must reach it from the other ranks, as messages MPI
// delivered (a message a rank sends itself carries nothing): at least what the check says its
// result needs (a collective of one's own, Part 7, which any algorithm may relay), or else
// about as much as the reference's rank receives.
std::string received_finding(const TestOutput& expected, const TestOutput& actual) {
  const long long least =
      expected.least_received >= 0 ? expected.least_received : (3 * expected.received + 3) / 4;
  if (least <= 0 || actual.received >= least) return "";
  const long long received = std::max(actual.received, 0LL);
  if (expected.least_received >= 0) {
    return "received " + bytes_text(received) +
           " from the other ranks during the call, but its result depends on at least " +
           bytes_text(least) +
           " of theirs: some of the data it needs never reached it through the calls the part "
           "allows.\n";
  }
  return "received " + bytes_text(received) +
         " from the other ranks during the call, where the reference's rank receives " +
         bytes_text(expected.received) +
         ": some of the data its result needs never reached it from the other ranks.\n";
}

// What the student's call threw.
std::string error_text(const std::string& error) {
  if (error.rfind("NotImplemented", 0) == 0) return "not implemented yet: " + error;
  return "threw an exception: " + error;
}

// Everything wrong with one rank's outputs, one finding per line; `sent` is what its calls sent
// is judged by (communication_finding), said on every rank.
std::string rank_findings(const TestOutput& expected, const TestOutput& actual,
                          const Tolerances& tolerances, const std::string& result_part,
                          const std::string& sent) {
  if (!actual.errors.empty()) return error_text(actual.errors.front());
  std::string findings = sent + received_finding(expected, actual);
  for (const auto& [name, value] : expected.values) {
    if (!result_part.empty() && value.part != result_part) continue;
    const Value* mine = actual.find(name);
    const std::string finding =
        mine ? compare(name, value, *mine, tolerances, expected.mistakes) : name + ": missing";
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

// At most about kMaxOutput characters of a text, cut after a whole line.
std::string whole_lines(const std::string& text) {
  if (text.size() <= kMaxOutput) return text;
  const std::size_t cut = text.rfind('\n', kMaxOutput);
  const std::size_t keep = cut == std::string::npos ? text.find('\n') : cut + 1;
  if (keep == std::string::npos) return text;
  return text.substr(0, keep) + "[... the rest is left out]\n";
}

// Why the run of one side did not finish, or "".
std::string unfinished(const TestRun& expected, const TestRun& actual) {
  if (!expected.finished) {
    return "the reference solution failed on this test, so it cannot be judged (a problem of "
           "the grading kit, not of the submission): " +
           expected.problem;
  }
  if (!actual.finished) {
    std::string text = whole_lines(actual.problem);
    if (!text.empty() && text.back() != '\n') text += "\n";
    return text;
  }
  return "";
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

std::string fitted(const std::vector<std::string>& blocks, std::size_t max_chars,
                   const std::function<std::string(std::size_t)>& left_out) {
  std::string text;
  std::size_t kept = 0;
  for (; kept < blocks.size(); ++kept) {
    if (kept > 0 && text.size() + blocks[kept].size() > max_chars) break;
    text += blocks[kept];
  }
  if (kept < blocks.size()) text += left_out(blocks.size() - kept);
  return text;
}

std::vector<std::string> forbidden_calls(const TestRun& actual) {
  std::set<std::string> calls;
  for (const TestOutput& rank : actual.ranks)
    calls.insert(rank.forbidden.begin(), rank.forbidden.end());
  return {calls.begin(), calls.end()};
}

std::string run_problem(const TestRun& expected, const TestRun& actual) {
  const std::string problem = unfinished(expected, actual);
  if (!problem.empty()) return problem;
  for (const TestOutput& rank : actual.ranks) {
    if (!rank.errors.empty()) return error_text(rank.errors.front()) + "\n";
  }
  return "";
}

Verdict judge(const TestRun& expected, const TestRun& actual, const Tolerances& tolerances,
              const std::string& result_part, bool sending_shared) {
  Verdict verdict;
  verdict.output = unfinished(expected, actual);
  if (!verdict.output.empty()) return verdict;
  long long expected_total = 0, total = 0;
  for (std::size_t r = 0; r < expected.ranks.size(); ++r) {
    expected_total += std::max(expected.ranks[r].moved, 0LL);
    total += std::max(actual.ranks[r].moved, 0LL);
  }
  const std::string sent_together =
      sending_shared ? communication_finding(expected_total, total, true) : "";
  // Identical findings of several ranks are reported once.
  std::vector<std::string> per_rank;
  for (std::size_t r = 0; r < expected.ranks.size(); ++r) {
    const std::string sent = sending_shared ? sent_together
                                            : communication_finding(expected.ranks[r].moved,
                                                                    actual.ranks[r].moved, false);
    per_rank.push_back(
        rank_findings(expected.ranks[r], actual.ranks[r], tolerances, result_part, sent));
  }
  const std::vector<dtk::RankGroup> findings = dtk::group_identical(per_rank);
  verdict.passed = findings.empty();
  std::vector<std::string> blocks;
  for (const auto& [text, ranks] : findings) {
    // One finding follows its ranks on the line; several go below them, indented.
    const bool several = text.find('\n') + 1 < text.size();
    std::string block;
    if (expected.ranks.size() > 1)
      block += "[" + dtk::rank_list(ranks) + "]" + (several ? "\n" : " ");
    block += several ? indented(text) : text;
    if (block.back() != '\n') block += "\n";
    blocks.push_back(block);
  }
  verdict.output = fitted(blocks, kMaxOutput, [](std::size_t left) {
    return "[" + std::to_string(left) + " more finding" + (left == 1 ? "" : "s") +
           " on other ranks left out]\n";
  });
  return verdict;
}

}  // namespace dtk::grade
