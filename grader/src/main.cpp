// dtk-grade: grades one submission of the dtk assignment. See cli.cpp for the usage and
// README.md (Grading) for what it checks and how.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <random>

#include "cli.hpp"
#include "grading.hpp"
#include "text.hpp"

namespace {

using namespace dtk::grade;

// Every part's file must be a student file: a typo there would silently grade nothing.
void check_parts(const Manifest& manifest, const Toolchain& toolchain, const std::string& path) {
  for (const Part& part : manifest.parts) {
    bool known = false;
    for (const std::string& file : toolchain.student_files) known |= file == part.file;
    if (!known) {
      throw ManifestError(path + ": part " + std::to_string(part.number) + "'s file \"" +
                          part.file + "\" is not a student file");
    }
  }
}

int run(int argc, char** argv) {
  std::optional<Options> options;
  try {
    options = parse_command_line(argc, argv);
    if (!options) return 0;
    if (!std::filesystem::exists(options->submission)) {
      throw UsageError("no such file or directory: " + options->submission);
    }
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

  // From here on every failure still leaves a results.json, so that the student sees that the
  // grader, not the submission, failed.
  auto internal_error = [&](const std::string& error) {
    std::cerr << "dtk-grade: " << shown_text(error) << "\n";
    try {
      write_results_json(internal_error_report(error), options->results);
    } catch (const std::exception& also) {
      std::cerr << "dtk-grade: " << also.what() << "\n";
    }
    return 1;
  };
  Grading grading;
  grading.options = *options;
  try {
    grading.toolchain = load_toolchain(DTK_GRADE_DATA_DIR);
    const std::string manifest =
        options->manifest.empty() ? grading.toolchain.manifest : options->manifest;
    grading.manifest = load_manifest(manifest);
    check_parts(grading.manifest, grading.toolchain, manifest);
  } catch (const std::exception& error) {
    return internal_error(error.what());
  }
  grading.seed = options->seed.value_or(std::random_device{}() % 1000000000);

  std::cout << "dtk-grade: grading " << shown_name(options->submission) << " (seed " << grading.seed
            << ")\n";
  try {
    const Report report = grade_submission(grading, std::cout);
    write_results_json(report, options->results);
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

int main(int argc, char** argv) { return run(argc, argv); }
