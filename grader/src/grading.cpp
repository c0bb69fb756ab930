#include "grading.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <map>
#include <set>

#include "compile/audit.hpp"
#include "compile/compile.hpp"
#include "compile/submission.hpp"
#include "files.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/sandbox_view.hpp"
#include "scoring/derived_outputs.hpp"
#include "scoring/expected_cache.hpp"
#include "scoring/judge.hpp"
#include "scoring/scoring.hpp"
#include "scoring/speed_bonus.hpp"
#include "scoring/test_runs.hpp"

namespace dtk::grade {

namespace fs = std::filesystem;

namespace {

// The reference is trusted and its outputs are what every test is compared with: it gets limits
// no correct run comes near (a test of the reference takes well under a second), so that only a
// broken kit, never a busy machine, makes it fail.
constexpr int kReferenceTestSeconds = 60;
constexpr int kReferenceGroupSeconds = 300;
// A speed bonus's launch times every eligible function in turn, each measurement within a
// group's time: three of them, with the ranks' start and the warm-up, fit in three times that.
constexpr int kTimingGroups = 3;

struct Planned {
  const Part* part;
  TestCase test;
};

std::vector<Planned> plan_tests(const Manifest& manifest, bool public_only, std::string& notes) {
  std::vector<Planned> plan;
  for (const Part& part : manifest.parts) {
    for (const PlannedTest& planned : part.tests) {
      if (public_only && !planned.is_public) continue;
      if (planned.test.ranks() > manifest.max_ranks) {
        notes += "Not run: " + planned.test.id() + " needs " +
                 std::to_string(planned.test.ranks()) + " ranks, more than max_ranks (" +
                 std::to_string(manifest.max_ranks) + ").\n";
        continue;
      }
      plan.push_back({&part, planned.test});
    }
  }
  return plan;
}

// <tmp>/dtk-grade.XXXXXX (0711): private/ (0700) holds the grader's files (the expected
// outputs), read-only/ (0755) what the sandbox may read but not change, runs/ (0711) one
// directory per launch of tests. The sandbox user's own directories (sandbox/, its home, and
// build/) are made by the Sandbox, and those of the launches by the Launcher: all of them in
// directories of the grader's, where the submission can plant nothing.
std::string make_scratch() {
  const char* tmp = std::getenv("TMPDIR");
  std::string root = std::string(tmp && *tmp ? tmp : "/tmp") + "/dtk-grade.XXXXXX";
  if (mkdtemp(root.data()) == nullptr) throw std::runtime_error("cannot create " + root);
  chmod(root.c_str(), 0711);
  for (const auto& [dir, mode] :
       {std::pair{"/private", 0700}, {"/read-only", 0755}, {"/runs", 0711}}) {
    fs::create_directory(root + dir);
    chmod((root + dir).c_str(), mode);
  }
  return root;
}

// The caches a grading shares with others (expected outputs, compiled objects) and what the
// caller marks private (a batch's hand-ins and results).
std::vector<std::string> grader_only_paths(const Options& options) {
  std::vector<std::string> paths = options.private_paths;
  for (const std::string& cache : {options.expected_cache, options.object_cache}) {
    if (!cache.empty()) paths.push_back(cache);
  }
  return paths;
}

// What the submission must never read: the reference's sources and objects, the expected
// outputs (this grading's and a batch's shared ones), the compiled objects a grading shares and
// what the caller marks private (a batch's hand-ins and results). Grading is refused when the
// sandbox can read one of them (the kit left readable to others where no mount namespace hides it).
void refuse_if_readable(const Sandbox& sandbox, const Grading& grading, const std::string& scratch,
                        const std::vector<std::string>& hidden) {
  const Toolchain& toolchain = grading.toolchain;
  std::vector<std::string> secrets = {scratch + "/private"};
  for (const std::string& file : toolchain.student_files) {
    secrets.push_back(toolchain.reference_dir + "/" + file);
    secrets.push_back(toolchain.reference_objects.at(file));
  }
  const std::vector<std::string> grader_only = grader_only_paths(grading.options);
  secrets.insert(secrets.end(), grader_only.begin(), grader_only.end());
  std::string readable;
  for (const std::string& path : sandbox.readable(secrets, hidden)) readable += "\n  " + path;
  if (readable.empty()) return;
  throw std::runtime_error(
      "refusing to grade: the sandbox user can read these, so a submission could copy the "
      "reference, the expected outputs or other students' work:" +
      readable +
      "\nLock them down (chmod -R go-rwx on the kit's checkout, chmod 700 on a class's "
      "hand-ins; docs/sandbox.md), or grade as root with CAP_SYS_ADMIN, where dtk-grade "
      "hides them");
}

// What sandboxed commands must not see (docs/sandbox.md): every directory but the system's
// and the way to the scratch and the compiler, and, wherever they are, the kit's trees, the
// shared caches and the caller's private paths (unless the scratch lives inside one).
std::vector<std::string> hidden_paths(const Toolchain& toolchain, const Options& options,
                                      const std::string& scratch) {
  std::vector<std::string> needed = {scratch};
  const fs::path compiler = toolchain.compiler;
  needed.push_back(compiler.parent_path().parent_path().string());  // its installation
  for (const std::string& dir : toolchain.include_dirs) {
    if (dir != toolchain.dtk_include_dir) needed.push_back(dir);  // dtk's own is copied
  }
  std::vector<std::string> private_paths = grader_only_paths(options);
  private_paths.insert(private_paths.end(), {toolchain.source_dir, toolchain.binary_dir});
  return paths_to_hide(needed, private_paths);
}

std::string build_status(const FileBuild& file) {
  switch (file.status) {
    case FileBuild::Status::compiled:
      return "compiled";
    case FileBuild::Status::same_as_starter:
      return "unchanged from the starter";
    case FileBuild::Status::same_as_reference:
      return "identical to the reference";
    case FileBuild::Status::missing:
      return "missing";
    case FileBuild::Status::failed:
      return "does not compile";
  }
  return "";
}

// Audits the compiled files as the library they link into (readelf in the sandbox, all files
// at once): each graded function under its part's rules, following its calls into the other
// files. A file whose listing is too large is not audited, and its parts cannot run.
std::map<std::string, Audit> audit_files(const Manifest& manifest, const StudentBuild& build,
                                         const Sandbox& sandbox, const std::string& work,
                                         const std::vector<std::string>& hidden) {
  std::vector<std::future<std::pair<AuditedObject, std::string>>> pending;
  for (const FileBuild& file : build.files) {
    if (file.status != FileBuild::Status::compiled) continue;
    pending.push_back(std::async(std::launch::async, [&, file] {
      Command command;
      command.argv = {"readelf", "-SrsW", file.object};
      command.cwd = work;
      command.output_bytes = static_cast<std::size_t>(manifest.build.audit_output_mb) << 20;
      command.hidden_paths = hidden;
      const Outcome listing = sandbox.run(command);
      if (listing.timed_out || listing.output_size > command.output_bytes) {
        return std::pair{AuditedObject{file.file, ""},
                         "its object is too large to audit (readelf lists more than " +
                             std::to_string(manifest.build.audit_output_mb) +
                             " MB of sections, symbols and relocations; the reference's "
                             "files list under 4 MB)"};
      }
      return std::pair{AuditedObject{file.file, listing.output}, std::string()};
    }));
  }
  std::vector<AuditedObject> objects;
  std::map<std::string, std::string> too_large;  // file -> why
  for (auto& listing : pending) {
    auto [object, problem] = listing.get();
    if (problem.empty()) {
      objects.push_back(std::move(object));
    } else {
      too_large[object.file] = problem;
    }
  }
  std::vector<GradedFunction> functions;
  for (const Part& part : manifest.parts) {
    const AuditRules rules{part.allowed_mpi, part.allowed_communicator, manifest.forbidden_symbols};
    for (const std::string& function : part.functions)
      functions.push_back({function, part.file, rules});
  }
  std::map<std::string, Audit> audits = audit_library(objects, functions);
  for (const auto& [file, problem] : too_large) audits[file].problem = problem;
  return audits;
}

// The MPI calls, or the Communicator calls, each graded function's code may make, as the
// runner takes them.
std::map<std::string, std::set<std::string>> by_function(
    const Manifest& manifest, std::set<std::string> Part::*allowed_calls) {
  std::map<std::string, std::set<std::string>> allowed;
  for (const Part& part : manifest.parts) {
    for (const std::string& function : part.functions) allowed[function] = part.*allowed_calls;
  }
  return allowed;
}

// Empties the sandbox user's directories of the scratch, as that user (links it planted lead
// nowhere it could not go itself): afterwards the grader removes only its own directories and
// empty ones.
void remove_sandbox_files(const Sandbox& sandbox, const std::string& scratch) {
  for (const char* dir : {"/sandbox", "/build"}) sandbox.remove_as_sandbox(scratch + dir);
  std::error_code error;
  for (const auto& launch : fs::directory_iterator(scratch + "/runs", error)) {
    sandbox.remove_as_sandbox(launch.path());
  }
}

// Why a test cannot run at all, or "".
std::string cannot_run(const Planned& planned, const FileBuild& file, const Audit* audit) {
  const std::string& path = planned.part->file;
  if (file.status == FileBuild::Status::missing) {
    return path + " is missing from the submission, so Part " +
           std::to_string(planned.part->number) + " cannot be graded.";
  }
  if (file.status == FileBuild::Status::failed) {
    return path + " does not compile, so its parts cannot be graded. The first errors:\n" +
           file.message;
  }
  if (audit != nullptr && !audit->problem.empty()) {
    return path + " cannot be graded: " + audit->problem + ".";
  }
  if (audit != nullptr && !defines_function(*audit, planned.test.function, planned.test.type)) {
    const std::string& type = planned.test.type;
    return path + " does not define dtk::" + planned.test.function +
           (type.empty() ? "" : "<" + (type == "int32" ? "std::int32_t" : type) + ">") +
           " (keep the explicit instantiations at the end of the file).";
  }
  return "";
}

// A grading's scratch directory and its sandbox (see make_scratch).
struct Workspace {
  std::string scratch;
  std::unique_ptr<Sandbox> sandbox;
  std::vector<std::string> hidden;  // the kit's trees, hidden from sandboxed processes
};

Workspace open_workspace(const Grading& grading, std::string& summary, std::ostream& log) {
  const Manifest& manifest = grading.manifest;
  Workspace workspace;
  workspace.scratch = make_scratch();
  const std::string& scratch = workspace.scratch;
  workspace.sandbox =
      std::make_unique<Sandbox>(manifest.limits, scratch, scratch + "/sandbox",
                                !grading.options.no_sandbox, grading.options.slot, log);
  for (const char* dir : {"/build", "/runs"}) workspace.sandbox->watch_disk(scratch + dir);
  workspace.hidden = hidden_paths(grading.toolchain, grading.options, scratch);
  if (!workspace.sandbox->user().enabled) {
    summary += "Note: graded with --no-sandbox: the submission ran as the grader's own user.\n";
  } else {
    try {
      refuse_if_readable(*workspace.sandbox, grading, scratch, workspace.hidden);
    } catch (const std::runtime_error&) {
      workspace.sandbox.reset();
      std::error_code error;
      fs::remove_all(scratch, error);
      throw;
    }
  }
  return workspace;
}

// Ends whatever the submission left running and removes the scratch (or keeps it, as asked).
void close_workspace(Workspace& workspace, const Grading& grading, std::ostream& log) {
  workspace.sandbox->sweep();
  if (!grading.options.keep_scratch) remove_sandbox_files(*workspace.sandbox, workspace.scratch);
  workspace.sandbox.reset();
  if (grading.options.keep_scratch) {
    log << "Scratch directory kept: " << workspace.scratch << std::endl;
  } else {
    std::error_code error;
    fs::remove_all(workspace.scratch, error);
    if (error)
      log << "dtk-grade: WARNING: cannot remove the scratch directory " << workspace.scratch << ": "
          << error.message() << std::endl;
  }
}

// Reads and compiles the submission into the workspace; each file's fate goes to `summary`.
StudentBuild build_in(const Grading& grading, const Workspace& workspace, std::string& summary,
                      std::ostream& log) {
  const Manifest& manifest = grading.manifest;
  const Toolchain& toolchain = grading.toolchain;
  log << "Compiling the submission..." << std::endl;
  const std::vector<std::string>& graded_files = toolchain.assignment_files.at(manifest.assignment);
  const Submission submission = read_submission(grading.options.submission, graded_files);
  for (const std::string& problem : submission.problems)
    summary += "Submission: " + problem + ".\n";
  std::vector<std::string> provided;  // the parts not assigned: the hand-in may lack them
  for (const int part : manifest.disabled_parts) {
    const auto objects = toolchain.provided_parts.find(part);
    if (objects != toolchain.provided_parts.end())
      provided.insert(provided.end(), objects->second.begin(), objects->second.end());
  }
  StudentBuild build =
      build_submission(toolchain, graded_files, provided, submission, *workspace.sandbox,
                       workspace.scratch, workspace.hidden, manifest.timeouts, manifest.build,
                       object_cache(toolchain, grading.options.object_cache));
  for (const FileBuild& file : build.files)
    summary += file.file + ": " + build_status(file) + ".\n";
  return build;
}

// The launcher of the submission's runner, with the manifest's limits and rules.
Launcher student_launcher(const Grading& grading, const Workspace& workspace,
                          const StudentBuild& build) {
  const Manifest& manifest = grading.manifest;
  install_readable(grading.toolchain.configs_dir, workspace.scratch + "/read-only/configs");
  Launcher student;
  student.sandbox = workspace.sandbox.get();
  student.runner = build.runner;
  student.runs_dir = workspace.scratch + "/runs";
  student.configs_dir = workspace.scratch + "/read-only/configs";
  student.seed = grading.seed;
  student.timeouts = manifest.timeouts;
  student.allowed_mpi = by_function(manifest, &Part::allowed_mpi);
  student.allowed_communicator = by_function(manifest, &Part::allowed_communicator);
  if (grading.options.timeout_seconds)
    student.timeouts.group_seconds = *grading.options.timeout_seconds;
  student.hidden_paths = workspace.hidden;
  return student;
}

// The speed bonus of each part that has one, into `bonus`, for the functions `graded` shows
// with all their points: timed alone now that every launch of the grading has ended and the
// submission's leftovers are gone, or left pending for a batch to time (--bonus-later).
void speed_bonuses(const Grading& grading, Workspace& workspace, const Launcher& student,
                   const Report& graded, Report& bonus, std::ostream& log) {
  Launcher timing = student;
  const int group_seconds = grading.manifest.timeouts.group_seconds;
  timing.timeouts.test_seconds = group_seconds;  // for the whole measurement
  timing.timeouts.group_seconds = kTimingGroups * group_seconds;
  timing.timeouts.retry_test_seconds = 0;  // a timing that runs out of time is not timed again
  timing.nap_when_waiting = false;
  const int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  workspace.sandbox->sweep();
  for (const Part& part : grading.manifest.parts) {
    if (!part.speed_bonus) continue;
    const std::vector<std::string> eligible = eligible_for_bonus(part, graded);
    if (grading.options.bonus == BonusTiming::later) {
      score_speed_bonus(part, pending_speed(eligible), bonus);
      continue;
    }
    if (!eligible.empty())
      log << "Timing the speed bonus of Part " << part.number << "..." << std::endl;
    score_speed_bonus(part, measure_speed(*part.speed_bonus, eligible, timing, cores), bonus);
  }
}

// The reference's launcher: the kit's runner as the grader itself, outside the sandbox, with
// generous limits (it is trusted, and its outputs are what every test is compared with).
Launcher reference_launcher(const Grading& grading, const Workspace& workspace) {
  Launcher reference;
  reference.sandbox = workspace.sandbox.get();
  reference.sandboxed = false;
  reference.judging = true;
  reference.runner = grading.toolchain.runner;
  reference.runs_dir = workspace.scratch + "/private/reference";
  reference.configs_dir = grading.toolchain.configs_dir;
  reference.seed = grading.seed;
  reference.timeouts.test_seconds = kReferenceTestSeconds;
  reference.allowed_mpi = by_function(grading.manifest, &Part::allowed_mpi);
  reference.allowed_communicator = by_function(grading.manifest, &Part::allowed_communicator);
  reference.timeouts.group_seconds = kReferenceGroupSeconds;
  return reference;
}

// Which build of the reference made a saved output: the runner and its reference library beside
// it, by size and modification time (a rebuilt reference makes a new key: nothing stale loads).
std::string reference_build(const std::string& runner) {
  std::string build;
  for (const std::string& file :
       {runner, fs::path(runner).parent_path().string() + "/libdtk_student.so"}) {
    struct stat info {};  // a file missing keys as zeros
    stat(file.c_str(), &info);
    build += "-" + std::to_string(info.st_size) + "." + std::to_string(info.st_mtim.tv_sec) + "." +
             std::to_string(info.st_mtim.tv_nsec);
  }
  return build;
}

// The expected outputs of `tests`: the reference launched on as many ranks as the largest test
// (smaller tests use the first ranks). Gradings that share a cache (a batch, the self-tests)
// expect the same outputs of a test (one seed, one manifest): the reference runs only the tests
// none of them has run yet.
std::map<std::string, TestRun> expected_outputs(const Grading& grading, const Launcher& reference,
                                                const std::vector<TestCase>& tests) {
  const std::string& cache_dir = grading.options.expected_cache;
  const std::string cache_key = "assignment" + std::to_string(grading.manifest.assignment) +
                                "-seed" + std::to_string(grading.seed) +
                                (grading.options.public_only ? "-public" : "") +
                                reference_build(reference.runner);
  std::map<std::string, TestRun> saved;
  if (!cache_dir.empty()) saved = load_expected(cache_dir, cache_key);
  std::vector<TestCase> to_run;
  for (const TestCase& test : tests) {
    if (!saved.count(test.id())) to_run.push_back(test);
  }
  if (!to_run.empty()) {
    std::map<std::string, TestRun> runs = run_tests(reference, to_run);
    add_derived_outputs(reference, runs, reference.runs_dir + "-derived");
    saved.insert(runs.begin(), runs.end());
    if (!cache_dir.empty()) save_expected(cache_dir, cache_key, saved);
  }
  std::map<std::string, TestRun> expected;
  for (const TestCase& test : tests) expected[test.id()] = saved[test.id()];
  return expected;
}

// Test id -> why it cannot run (its file missing, not compiling, not auditable, or not defining
// the function), for the planned tests that cannot.
std::map<std::string, std::string> blocked_tests(const std::vector<Planned>& plan,
                                                 const StudentBuild& build,
                                                 const std::map<std::string, Audit>& audits) {
  std::map<std::string, const FileBuild*> file_builds;
  for (const FileBuild& file : build.files) file_builds[file.file] = &file;
  std::map<std::string, std::string> blocked;
  for (const Planned& planned : plan) {
    const auto audit = audits.find(planned.part->file);
    const std::string why = cannot_run(planned, *file_builds.at(planned.part->file),
                                       audit == audits.end() ? nullptr : &audit->second);
    if (!why.empty()) blocked[planned.test.id()] = why;
  }
  return blocked;
}

// What happened to each planned test: the reference's run, and the student's or why it could not
// run.
std::map<std::string, CaseOutcome> case_outcomes(const std::vector<Planned>& plan,
                                                 const std::map<std::string, std::string>& blocked,
                                                 const std::map<std::string, TestRun>& expected,
                                                 const std::map<std::string, TestRun>& actual) {
  std::map<std::string, CaseOutcome> outcomes;
  for (const Planned& planned : plan) {
    const std::string id = planned.test.id();
    CaseOutcome& outcome = outcomes[id];
    outcome.expected = &expected.at(id);
    const auto why = blocked.find(id);
    if (why != blocked.end()) {
      outcome.blocked = why->second;
    } else {
      outcome.actual = &actual.at(id);
    }
  }
  return outcomes;
}

// The forbidden calls of each graded function's code, seen at run time (in its tests' runs) or
// by the symbol audit.
ForbiddenCalls forbidden_calls_found(const Manifest& manifest, const std::vector<Planned>& plan,
                                     const std::map<std::string, CaseOutcome>& outcomes,
                                     const std::map<std::string, Audit>& audits) {
  ForbiddenCalls forbidden;
  for (const Planned& planned : plan) {
    const CaseOutcome& outcome = outcomes.at(planned.test.id());
    if (outcome.actual == nullptr) continue;
    for (const std::string& call : forbidden_calls(*outcome.actual))
      forbidden[planned.test.function].insert(call);
  }
  for (const Part& part : manifest.parts) {
    const auto audit = audits.find(part.file);
    if (audit == audits.end()) continue;
    for (const std::string& function : part.functions) {
      const auto calls = audit->second.forbidden.find(function);
      if (calls == audit->second.forbidden.end()) continue;
      for (const std::string& call : calls->second) {
        forbidden[function].insert(call + " (in the code of dtk::" + function + ")");
      }
    }
  }
  return forbidden;
}

// What the forbidden calls cost, for the summary: said once per part when they cost the part.
std::string forbidden_summary(const Manifest& manifest, const ForbiddenCalls& forbidden) {
  std::string summary;
  for (const Part& part : manifest.parts) {
    std::set<std::string> said;
    for (const std::string& function : part.functions) {
      const std::set<std::string> calls = forbidden_for(manifest, part, function, forbidden);
      const std::string who = forbidden_cost(manifest, part, function);
      if (!calls.empty() && said.insert(who).second)
        summary += forbidden_text(manifest, part, who, calls);
    }
  }
  return summary;
}

}  // namespace

// docs/grading.md, Grading one submission: "What happens, in order".
Report grade_submission(const Grading& grading, std::ostream& log) {
  const auto start = std::chrono::steady_clock::now();
  const Manifest& manifest = grading.manifest;
  std::string summary = "Seed " + std::to_string(grading.seed) +
                        " (to grade again with the same inputs: --seed " +
                        std::to_string(grading.seed) + ").\n";
  const std::vector<Planned> plan = plan_tests(manifest, grading.options.public_only, summary);
  std::vector<TestCase> all_tests;
  for (const Planned& planned : plan) all_tests.push_back(planned.test);
  Workspace workspace = open_workspace(grading, summary, log);

  // 5. The reference's outputs, computed while the submission compiles.
  const Launcher reference = reference_launcher(grading, workspace);
  auto expected_future = std::async(
      std::launch::async, [&] { return expected_outputs(grading, reference, all_tests); });
  // 1, 2. The student files, read and compiled.
  const StudentBuild build = build_in(grading, workspace, summary, log);
  // 3. The symbol audit.
  const std::map<std::string, Audit> audits = audit_files(
      manifest, build, *workspace.sandbox, workspace.scratch + "/build", workspace.hidden);
  // 4. The hidden tests that can run, in the sandbox.
  const std::map<std::string, std::string> blocked = blocked_tests(plan, build, audits);
  std::vector<TestCase> runnable;
  for (const TestCase& test : all_tests) {
    if (!blocked.count(test.id())) runnable.push_back(test);
  }
  const Launcher student = student_launcher(grading, workspace, build);
  log << "Running " << runnable.size() << " tests..." << std::endl;
  std::map<std::string, TestRun> actual = run_tests(student, runnable);
  add_derived_outputs(reference, actual, workspace.scratch + "/private/derived");
  const std::map<std::string, TestRun> expected = expected_future.get();

  // 6. Compared and scored; a forbidden call costs its part or its function.
  const std::map<std::string, CaseOutcome> outcomes =
      case_outcomes(plan, blocked, expected, actual);
  const ForbiddenCalls forbidden = forbidden_calls_found(manifest, plan, outcomes, audits);
  Report report;
  report.visibility = manifest.visibility;
  report.output = summary + forbidden_summary(manifest, forbidden);
  report.graded_parts.assign(grading.options.parts.begin(), grading.options.parts.end());
  score(manifest, outcomes, forbidden, report);

  if (!grading.options.public_only) speed_bonuses(grading, workspace, student, report, report, log);
  close_workspace(workspace, grading, log);
  report.execution_time =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

Report time_speed_bonus(const Grading& grading, std::ostream& log) {
  Report graded;
  graded.tests = read_results_tests(grading.options.results);
  std::string summary;
  Workspace workspace = open_workspace(grading, summary, log);
  const StudentBuild build = build_in(grading, workspace, summary, log);
  Report bonus;
  speed_bonuses(grading, workspace, student_launcher(grading, workspace, build), graded, bonus,
                log);
  close_workspace(workspace, grading, log);
  return bonus;
}

}  // namespace dtk::grade
