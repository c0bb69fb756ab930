// dtk-grade's command line.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtk::grade {

// When the speed bonus is timed: after the grading's tests (when the machine is idle, else
// deferred), left pending for a batch to time after all its gradings (--bonus-later), or alone
// for a submission already graded (--bonus-only).
enum class BonusTiming { now, later, only };

struct Options {
  std::string submission;  // a handin.tar or a directory holding the student files
  std::string results = "results.json";
  bool public_only = false;
  std::set<int> parts;  // --parts: grade only these parts (empty: all of the assignment's)
  bool autolab = false;
  bool keep_scratch = false;
  bool list_checks = false;  // --list-checks: print the hidden checks, grade nothing
  bool no_sandbox = false;   // run the submission as the caller (required when not root)
  BonusTiming bonus = BonusTiming::now;
  std::optional<int> timeout_seconds;  // a launch without a record; default from the manifest
  std::optional<std::uint64_t> seed;   // default: a fresh random seed
  std::optional<int> assignment;       // default: the manifest's, else 1
  std::string manifest;                // default: the kit's manifest of the assignment
  int slot = 0;  // the sandbox's job slot (a batch gives each grading at once its own)
  std::string expected_cache;  // a batch's shared reference outputs (internal, like slot)
  std::string object_cache;    // a batch's shared compiled objects (internal, like slot)
  // What the submission must never see (internal: a batch's hand-ins and results): hidden from
  // the sandbox, and grading refused where the sandbox could still read one.
  std::vector<std::string> private_paths;
  // --batch: every hand-in under `batch`, `jobs` at a time, results under `out`.
  std::string batch, out, gradebook;
  int jobs = 1;
  bool regrade = false;
  bool similarity = false;          // --similarity: the most similar hand-ins, per student file
  bool list = false;                // --list: print the hand-ins found (and fix the batch's seed)
  std::optional<std::size_t> task;  // --task K: grade hand-in K only (a job array's task)
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// dtk-grade --help; `assignments` lists the kit's, e.g. "1 (Parts 1-6), 2 (Parts 7-9)".
std::string usage_text(const std::string& assignments);

// --parts' LIST: part numbers separated by commas ("10", "2,3,6"). Throws UsageError naming
// what is not a part number. Whether the assignment has them is checked against its manifest.
std::set<int> parse_part_list(const std::string& list);

// Throws UsageError naming the problem. Returns nullopt for --help.
std::optional<Options> parse_command_line(int argc, char** argv);

}  // namespace dtk::grade
