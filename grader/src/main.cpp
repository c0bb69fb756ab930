// dtk-grade: grades one submission of a dtk assignment, or a class of them. See cli.cpp for the
// usage and docs/grading.md for what it checks and how.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <random>

#include <dtk/freed_memory.hpp>

#include "class/batch.hpp"
#include "cli.hpp"
#include "grading.hpp"
#include "scoring/check_list.hpp"
#include "text.hpp"

namespace {

using namespace dtk::grade;

// The manifest grades the assignment asked for, and every part's file is one of that
// assignment's student files: a typo there would silently grade nothing.
void check_manifest(const Manifest& manifest, const Toolchain& toolchain, const std::string& path,
                    std::optional<int> assignment) {
  if (assignment && *assignment != manifest.assignment) {
    throw ManifestError(path + " grades assignment " + std::to_string(manifest.assignment) +
                        ", not assignment " + std::to_string(*assignment) +
                        " (--assignment): drop one of the two options");
  }
  const auto files = toolchain.assignment_files.find(manifest.assignment);
  if (files == toolchain.assignment_files.end()) {
    throw ManifestError(path + ": the kit has no assignment " +
                        std::to_string(manifest.assignment));
  }
  const auto& optimized = toolchain.optimized_files;
  for (const Part& part : manifest.parts) {
    if (part.speed_bonus &&
        std::find(optimized.begin(), optimized.end(), part.file) == optimized.end()) {
      throw ManifestError(path + ": part " + std::to_string(part.number) +
                          " has a speed bonus, but the kit compiles " + part.file +
                          " without optimization: add it to DTK_GRADE_OPTIMIZED_FILES in "
                          "grader/CMakeLists.txt");
    }
    bool known = false;
    for (const std::string& file : files->second) known |= file == part.file;
    if (!known) {
      throw ManifestError(path + ": part " + std::to_string(part.number) + "'s file \"" +
                          part.file + "\" is not a student file of assignment " +
                          std::to_string(manifest.assignment));
    }
  }
}

// "1, 2 and 3": the kit's assignments, as its build found them.
std::string assignment_numbers(const Toolchain& toolchain) {
  std::vector<int> numbers;
  for (const auto& [assignment, files] : toolchain.assignment_files) numbers.push_back(assignment);
  return spoken_list(numbers);
}

// For --help: "1 (Parts 1-6), 2 (Parts 7-9)", from the built kit's manifests.
std::string assignments_help() {
  try {
    const Toolchain toolchain = load_toolchain(DTK_GRADE_DATA_DIR);
    std::string text;
    for (const auto& [assignment, files] : toolchain.assignment_files) {
      if (!text.empty()) text += ", ";
      text += std::to_string(assignment);
      try {
        const Manifest manifest = load_manifest(toolchain.manifest(assignment));
        std::vector<int> parts = manifest.disabled_parts;
        for (const Part& part : manifest.parts) parts.push_back(part.number);
        const auto [first, last] = std::minmax_element(parts.begin(), parts.end());
        if (first != parts.end() && *first == *last)
          text += " (Part " + std::to_string(*first) + ")";
        if (first != parts.end() && *first != *last)
          text += " (Parts " + std::to_string(*first) + "-" + std::to_string(*last) + ")";
      } catch (const std::exception&) {
        text += " (its manifest does not load: grade it to see why)";
      }
    }
    return text;
  } catch (const std::exception&) {
    return "none yet: build the kit first (make)";
  }
}

// The manifest the options ask for, checked against the kit.
Manifest manifest_of(const Options& options, const Toolchain& toolchain) {
  if (options.assignment && !toolchain.assignment_files.count(*options.assignment)) {
    throw UsageError("there is no assignment " + std::to_string(*options.assignment) +
                     ": this kit has assignment " + assignment_numbers(toolchain) +
                     " (starter/handin/assignment<N>.txt)");
  }
  const std::string path = options.manifest.empty()
                               ? toolchain.manifest(options.assignment.value_or(1))
                               : options.manifest;
  Manifest manifest = load_manifest(path);
  check_manifest(manifest, toolchain, path,
                 options.manifest.empty() ? std::nullopt : options.assignment);
  if (!options.parts.empty()) {
    try {
      keep_only_parts(manifest, options.parts);
    } catch (const std::invalid_argument& error) {
      throw UsageError(std::string("--parts: ") + error.what());
    }
  }
  return manifest;
}

// dtk-grade --batch: every failure is reported on the terminal (each student's results.json
// is written by that student's own grading).
int run_batch(const Options& options) {
  try {
    const Toolchain toolchain = load_toolchain(DTK_GRADE_DATA_DIR);
    return grade_batch(options, manifest_of(options, toolchain), toolchain, std::cout);
  } catch (const UsageError& error) {
    std::cerr << "dtk-grade: " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "dtk-grade: " << shown_text(error.what()) << "\n";
    return 1;
  }
}

int run(int argc, char** argv) {
  std::optional<Options> options;
  try {
    options = parse_command_line(argc, argv);
    if (!options) {
      std::cout << usage_text(assignments_help());
      return 0;
    }
    if (options->list_checks) {
      try {
        print_check_list(load_toolchain(DTK_GRADE_DATA_DIR), std::cout);
        return 0;
      } catch (const std::exception& error) {
        std::cerr << "dtk-grade: " << error.what() << "\n";
        return 1;
      }
    }
    const std::string& input = options->batch.empty() ? options->submission : options->batch;
    std::error_code unreadable;  // a directory on the way that this user may not enter, say
    const bool there = std::filesystem::exists(input, unreadable);
    if (unreadable)
      throw UsageError("cannot read " + shown_name(input) + ": " + unreadable.message());
    if (!there) throw UsageError("no such file or directory: " + shown_name(input));
    if (geteuid() != 0 && !options->no_sandbox) {
      throw UsageError(
          "not run as root, so there is no sandbox: the submission would run as you and could "
          "read the reference and the expected outputs. Run dtk-grade as root (sudo), or pass "
          "--no-sandbox to grade trusted code as yourself");
    }
  } catch (const UsageError& error) {
    std::cerr << "dtk-grade: " << error.what() << "\n"
              << "usage: dtk-grade SUBMISSION [options]   (dtk-grade --help lists them)\n";
    return 2;
  }

  if (!options->batch.empty()) return run_batch(*options);

  // From here on every failure still leaves a results.json, so that the student sees that the
  // grader, not the submission, failed; but --bonus-only leaves the grading it adds to as it is.
  auto internal_error = [&](const std::string& error) {
    std::cerr << "dtk-grade: " << shown_text(error) << "\n";
    if (options->bonus == BonusTiming::only) return 1;
    try {
      const Report failed = internal_error_report(error);
      write_results_json(failed, options->results);
      write_totals_json(failed, totals_path(options->results));  // nothing graded
    } catch (const std::exception& also) {
      std::cerr << "dtk-grade: " << also.what() << "\n";
    }
    return 1;
  };
  Grading grading;
  grading.options = *options;
  try {
    grading.toolchain = load_toolchain(DTK_GRADE_DATA_DIR);
    grading.manifest = manifest_of(*options, grading.toolchain);
  } catch (const UsageError& error) {
    std::cerr << "dtk-grade: " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    return internal_error(error.what());
  }
  grading.seed = options->seed.value_or(std::random_device{}() % 1000000000);

  try {
    if (options->bonus == BonusTiming::only) {
      std::cout << "dtk-grade: timing the speed bonus of " << shown_name(options->submission)
                << ", graded in " << shown_name(options->results) << "\n";
      const Report bonus = time_speed_bonus(grading, std::cout);
      replace_speed_bonus(options->results, bonus);
      for (const TestResult& test : bonus.tests) std::cout << shown_text(test.output);
      std::cout << "Results: " << shown_name(options->results) << "\n";
      return 0;
    }
    std::cout << "dtk-grade: grading " << shown_name(options->submission) << " (seed "
              << grading.seed << ")\n";
    const Report report = grade_submission(grading, std::cout);
    write_results_json(report, options->results);
    write_totals_json(report, totals_path(options->results));
    print_feedback(report, std::cout);
    std::cout << "Results: " << shown_name(options->results) << "\n";
    if (options->autolab) std::cout << autolab_line(report) << std::endl;
  } catch (const std::exception& error) {
    return internal_error(std::string("grading failed: ") + error.what());
  } catch (...) {
    return internal_error("grading failed: an exception that is not a std::exception");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  dtk::keep_freed_memory();
  return run(argc, argv);
}
