#include "cli.hpp"

#include <cstdlib>

namespace dtk::grade {

std::string usage_text(const std::string& assignments) {
  return "usage: dtk-grade SUBMISSION [--assignment N] [--parts LIST] [--results FILE]\n"
         "                 [--public-only] [--timeout SECONDS] [--autolab] [--seed N]\n"
         "                 [--manifest FILE] [--keep-scratch] [--no-sandbox]\n"
         "                 [--bonus-later | --bonus-only]\n"
         "       dtk-grade --batch DIR [--jobs N] [--out DIR] [--gradebook FILE.csv] [--regrade]\n"
         "                 [--similarity] [--assignment N] [--seed N] [--manifest FILE] ...\n"
         "       dtk-grade --list-checks\n"
         "\n"
         "Grades one submission: SUBMISSION is a handin.tar or a directory holding the student\n"
         "files of the assignment (listed in starter/handin/assignment<N>.txt). Writes\n"
         "Gradescope's results.json and prints a table.\n"
         "\n"
         "  --assignment N     grade assignment N (default 1); this kit's: " +
         assignments +
         "\n"
         "  --parts LIST       grade only these parts of the assignment, e.g. --parts 10 or\n"
         "                     --parts 2,3,6: to check one part quickly, while writing its hidden\n"
         "                     tests or to see one part's feedback. The other parts are left out\n"
         "                     of the run, the table and results.json (whose extra_data says\n"
         "                     which parts were graded)\n"
         "  --results FILE     where to write results.json (default: ./results.json); the\n"
         "                     per-part and per-function totals go beside it, to totals.json\n"
         "                     (NAME.totals.json for a results file NAME.json of another name)\n"
         "  --public-only      run only the cases that mirror the public tests\n"
         "  --timeout SECONDS  how long a launch of tests may go without writing a record\n"
         "                     (and, in all, per rank count among its tests; default: the\n"
         "                     manifest's timeouts.group_seconds)\n"
         "  --autolab          also print Autolab's scores as the last line of output\n"
         "  --seed N           the seed of the random test inputs (default: random; printed)\n"
         "  --manifest FILE    parts, points and cases (default: the build's copy of\n"
         "                     grader/manifests/assignment<N>.json); it names its assignment\n"
         "  --keep-scratch     keep the scratch directory (its path is printed)\n"
         "  --no-sandbox       grade without the sandbox user, as the caller (needed when not\n"
         "                     root): the submission can then read whatever you can, the\n"
         "                     reference and the expected outputs included; trusted code only\n"
         "  --bonus-later      do not time the speed bonus (assignment 2): results.json says it "
         "is\n"
         "                     pending; time it later with --bonus-only\n"
         "  --bonus-only       time only the speed bonus of SUBMISSION, already graded in\n"
         "                     --results FILE (its pending or deferred bonus, or again), and put\n"
         "                     it there. The bonus is timed only on an idle machine: when other\n"
         "                     programs keep it busy, it is deferred (said so), never guessed\n"
         "  --list-checks      print every hidden check with its part, kind of case, ranks and\n"
         "                     rubric items (from the kit's manifests), and grade nothing\n"
         "\n"
         "A whole class: --batch DIR grades every hand-in under DIR, one sub-directory or .tar "
         "per\n"
         "student (or Gradescope's \"Export Submissions\" folder, with its\n"
         "submission_metadata.yml), with one seed for all, then times the speed bonuses one at a\n"
         "time with nothing else running (again, when run again, for those deferred), grades\n"
         "the best three of each leaderboard again alone (verified or changed, on the summary\n"
         "page), and writes DIR's results to --out:\n"
         "  --jobs N           gradings at once, each in its own sandbox (default 1)\n"
         "  --out DIR          <DIR>/students/<student>/results.json and output.txt,\n"
         "                     gradebook.csv and summary.html (default: the hand-ins' directory\n"
         "                     name + \"-graded\"); the grader's own, made private (0700)\n"
         "  --gradebook FILE   the gradebook CSV elsewhere (default: <out>/gradebook.csv)\n"
         "  --regrade          grade every hand-in again (by default an interrupted batch goes\n"
         "                     on where it stopped, keeping what it graded)\n"
         "  --similarity       also list the most similar pairs of hand-ins per student file in\n"
         "                     summary.html (sim_c++, the starter's own lines left out), each\n"
         "                     with a side-by-side page\n"
         "  --list             print the hand-ins found, one \"student<TAB>path\" per line, and\n"
         "                     fix the batch's seed; grade nothing\n"
         "  --task K           grade hand-in K (0-based, in --list's order) only: one task of a\n"
         "                     job array (scripts/grade-class-slurm.sh); run --list first\n"
         "\n"
         "Exit status: 0 when grading completed (whatever the score), 2 for bad usage, 1 when the\n"
         "grader itself could not run (kit not built, bad manifest) or, in a batch, when a\n"
         "grading failed.\n";
}

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

std::set<int> parse_part_list(const std::string& list) {
  std::set<int> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = list.find(',', start);
    const std::string number = list.substr(start, comma - start);
    if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos) {
      throw UsageError(
          "--parts expects part numbers separated by commas (e.g. --parts 2,3,6), not \"" + list +
          "\"");
    }
    parts.insert(static_cast<int>(parse_integer("--parts", number, 0, 999)));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

std::optional<Options> parse_command_line(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      return std::nullopt;
    } else if (arg == "--results") {
      options.results = value();
    } else if (arg == "--parts") {
      options.parts = parse_part_list(value());
    } else if (arg == "--public-only") {
      options.public_only = true;
    } else if (arg == "--autolab") {
      options.autolab = true;
    } else if (arg == "--keep-scratch") {
      options.keep_scratch = true;
    } else if (arg == "--list-checks") {
      options.list_checks = true;
    } else if (arg == "--no-sandbox") {
      options.no_sandbox = true;
    } else if (arg == "--bonus-later" || arg == "--bonus-only") {
      const BonusTiming timing = arg == "--bonus-later" ? BonusTiming::later : BonusTiming::only;
      if (options.bonus != BonusTiming::now && options.bonus != timing)
        throw UsageError("--bonus-later and --bonus-only: one or the other");
      options.bonus = timing;
    } else if (arg == "--timeout") {
      options.timeout_seconds = static_cast<int>(parse_integer(arg, value(), 1, 3600));
    } else if (arg == "--seed") {
      options.seed = static_cast<std::uint64_t>(parse_integer(arg, value(), 0, 1LL << 62));
    } else if (arg == "--assignment") {
      // Whether the kit has it is known once its toolchain is read (manifest_of).
      options.assignment = static_cast<int>(parse_integer(arg, value(), 1, 999));
    } else if (arg == "--manifest") {
      options.manifest = value();
    } else if (arg == "--batch") {
      options.batch = value();
    } else if (arg == "--jobs") {
      options.jobs = static_cast<int>(parse_integer(arg, value(), 1, 64));
    } else if (arg == "--out") {
      options.out = value();
    } else if (arg == "--gradebook") {
      options.gradebook = value();
    } else if (arg == "--regrade") {
      options.regrade = true;
    } else if (arg == "--similarity") {
      options.similarity = true;
    } else if (arg == "--list") {
      options.list = true;
    } else if (arg == "--task") {
      options.task = static_cast<std::size_t>(parse_integer(arg, value(), 0, 1000000));
    } else if (arg == "--expected-cache") {  // internal: a batch's child grading
      options.expected_cache = value();
    } else if (arg == "--object-cache") {  // internal: a batch's child grading
      options.object_cache = value();
    } else if (arg == "--private") {  // internal: a batch's child grading
      options.private_paths.push_back(value());
    } else if (arg == "--slot") {  // internal: a batch's child grading
      options.slot = static_cast<int>(parse_integer(arg, value(), 0, 63));
    } else if (!arg.empty() && arg[0] == '-') {
      throw UsageError("unknown option " + arg);
    } else if (options.submission.empty()) {
      options.submission = arg;
    } else {
      throw UsageError("one SUBMISSION at a time (got \"" + options.submission + "\" and \"" + arg +
                       "\")");
    }
  }
  if (options.list_checks) {
    if (!options.submission.empty() || !options.batch.empty())
      throw UsageError("--list-checks grades nothing: give no SUBMISSION or --batch with it");
    return options;
  }
  const bool batch_only = options.jobs != 1 || !options.out.empty() || !options.gradebook.empty() ||
                          options.regrade || options.similarity;
  if (!options.batch.empty()) {
    if (!options.submission.empty())
      throw UsageError("--batch grades a directory of hand-ins: give no SUBMISSION with it");
    if (options.results != "results.json" || options.keep_scratch || options.autolab ||
        options.bonus != BonusTiming::now || !options.parts.empty())
      throw UsageError(
          "--results, --keep-scratch, --autolab, --parts, --bonus-later and --bonus-only grade "
          "one submission: not with --batch (each student's results.json goes to --out, and the "
          "batch times the bonuses after its gradings)");
    return options;
  }
  if (batch_only) {
    throw UsageError(
        "--jobs, --out, --gradebook, --regrade, --similarity, --list and --task go with --batch "
        "DIR");
  }
  if (options.submission.empty()) throw UsageError("no SUBMISSION given");
  if (options.bonus == BonusTiming::only && options.public_only)
    throw UsageError("--bonus-only times the bonus, which --public-only leaves out");
  if (options.bonus == BonusTiming::only && !options.parts.empty())
    throw UsageError("--bonus-only times the bonus of a whole grading: not with --parts");
  return options;
}

}  // namespace dtk::grade
