#include "cli.hpp"

#include <cstdlib>
#include <iostream>

namespace dtk::grade {

const char* const kUsage =
    "usage: dtk-grade SUBMISSION [--assignment 1|2] [--results FILE] [--public-only]\n"
    "                 [--timeout SECONDS] [--autolab] [--seed N] [--manifest FILE]\n"
    "                 [--keep-scratch] [--no-sandbox]\n"
    "\n"
    "Grades one submission: SUBMISSION is a handin.tar or a directory holding the student\n"
    "files of the assignment (listed in starter/handin/assignment<N>.txt). Writes\n"
    "Gradescope's results.json and prints a table.\n"
    "\n"
    "  --assignment N     grade assignment N: 1 (Parts 1-6, the default) or 2 (Parts 7-9)\n"
    "  --results FILE     where to write results.json (default: ./results.json)\n"
    "  --public-only      run only the cases that mirror the public tests\n"
    "  --timeout SECONDS  time limit of one group of tests (default: the\n"
    "                     manifest's timeouts.group_seconds)\n"
    "  --autolab          also print Autolab's scores as the last line of output\n"
    "  --seed N           the seed of the random test inputs (default: random; printed)\n"
    "  --manifest FILE    parts, points and cases (default: the build's copy of\n"
    "                     grader/manifests/assignment<N>.json); it names its assignment\n"
    "  --keep-scratch     keep the scratch directory (its path is printed)\n"
    "  --no-sandbox       grade without the sandbox user, as the caller (needed when not\n"
    "                     root): the submission can then read whatever you can, the\n"
    "                     reference and the expected outputs included; trusted code only\n"
    "\n"
    "Exit status: 0 when grading completed (whatever the score), 2 for bad usage, 1 when the\n"
    "grader itself could not run (kit not built, bad manifest).\n";

namespace {

long long parse_integer(const std::string& option, const std::string& text, long long min,
                        long long max) {
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < min || value > max) {
    throw UsageError(option + " expects a whole number between " + std::to_string(min) + " and " +
                     std::to_string(max) + ", not \"" + text + "\"");
  }
  return value;
}

}  // namespace

std::optional<Options> parse_command_line(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return std::nullopt;
    } else if (arg == "--results") {
      options.results = value();
    } else if (arg == "--public-only") {
      options.public_only = true;
    } else if (arg == "--autolab") {
      options.autolab = true;
    } else if (arg == "--keep-scratch") {
      options.keep_scratch = true;
    } else if (arg == "--no-sandbox") {
      options.no_sandbox = true;
    } else if (arg == "--timeout") {
      options.timeout_seconds = static_cast<int>(parse_integer(arg, value(), 1, 3600));
    } else if (arg == "--seed") {
      options.seed = static_cast<std::uint64_t>(parse_integer(arg, value(), 0, 1LL << 62));
    } else if (arg == "--assignment") {
      options.assignment = static_cast<int>(parse_integer(arg, value(), 1, 2));
    } else if (arg == "--manifest") {
      options.manifest = value();
    } else if (!arg.empty() && arg[0] == '-') {
      throw UsageError("unknown option " + arg);
    } else if (options.submission.empty()) {
      options.submission = arg;
    } else {
      throw UsageError("one SUBMISSION at a time (got \"" + options.submission + "\" and \"" + arg +
                       "\")");
    }
  }
  if (options.submission.empty()) throw UsageError("no SUBMISSION given");
  return options;
}

}  // namespace dtk::grade
