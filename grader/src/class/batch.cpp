#include "class/batch.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "class/hand_ins.hpp"
#include "class/leaderboards.hpp"
#include "class/similarity.hpp"
#include "class/summary_page.hpp"
#include "files.hpp"
#include "report.hpp"
#include "sandbox/sandbox_user.hpp"
#include "text.hpp"

namespace dtk::grade {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kSimilarPairsListed = 10;  // per student file

json read_json(const std::string& path) {
  std::ifstream file(path);
  if (!file) return nullptr;
  try {
    return json::parse(file);
  } catch (const json::exception&) {
    return nullptr;
  }
}

// Everything a batch writes is for the course staff only (docs/grading.md, Grading a whole class).
void write_private_file(const std::string& path, const std::string& content) {
  write_file(path, content, 0600);
}

void write_json(const std::string& path, const json& value) {
  write_private_file(path, value.dump(2) + "\n");
}

// The seed of the batch: the one its first run chose (kept in <out>/batch.json), so that a
// resumed batch grades the rest as it graded the first; --seed sets it, --regrade may change it.
std::uint64_t batch_seed(const Options& options, const Manifest& manifest, const std::string& out) {
  const std::string path = out + "/batch.json";
  const json stored = read_json(path);
  std::uint64_t seed = options.seed.value_or(std::random_device{}() % 1000000000);
  if (stored.is_object() && !options.regrade) {
    const auto first = stored.value("seed", std::uint64_t{0});
    if (options.seed && *options.seed != first) {
      throw UsageError(out + " holds a batch graded with seed " + std::to_string(first) +
                       ": give that seed, or --regrade to grade every hand-in again with " +
                       std::to_string(*options.seed));
    }
    if (stored.value("assignment", 0) != manifest.assignment) {
      throw UsageError(out + " holds a batch of assignment " +
                       std::to_string(stored.value("assignment", 0)) +
                       ": use another --out, or --regrade");
    }
    seed = first;
  }
  write_json(path, {{"seed", seed}, {"assignment", manifest.assignment}});
  return seed;
}

// Where the gradings of a batch share the reference's outputs (.expected) or the objects they
// compiled (.objects: a regrade compiles only the hand-ins that changed): a directory only the
// grader reads (the expected outputs must stay out of the submissions' reach, and another
// hand-in's object out of theirs).
std::string shared_cache(const std::string& out, const std::string& name) {
  const std::string dir = out + "/" + name;
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
  return dir;
}

// Where one student's results go: a directory of its own under <out>/students/, so that no
// student name (a Gradescope id may be "gradebook.csv") can be one of the batch's own files.
std::string student_dir(const std::string& out, const HandIn& hand_in) {
  return out + "/students/" + hand_in.student;
}

// The command grading one hand-in: this very program, one submission, the batch's options, its
// results.json at `results`; `extra`: --expected-cache DIR, --object-cache DIR and --bonus-later
// for a grading, --bonus-only for a bonus, --parts for a leaderboard's check. The class's hand-ins
// and results are private to the grading: hidden from its sandbox, or, where they cannot be
// hidden and the sandbox could read them, the grading refuses.
std::vector<std::string> grading_command(const Options& options, const HandIn& hand_in,
                                         const std::string& out, const std::string& results,
                                         std::uint64_t seed, int slot,
                                         const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {fs::read_symlink("/proc/self/exe").string(),
                                   hand_in.path,
                                   "--results",
                                   results,
                                   "--seed",
                                   std::to_string(seed),
                                   "--slot",
                                   std::to_string(slot)};
  for (const std::string& path : {options.batch, out, hand_in.path})
    argv.insert(argv.end(), {"--private", path});
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (options.assignment)
    argv.insert(argv.end(), {"--assignment", std::to_string(*options.assignment)});
  if (!options.manifest.empty()) argv.insert(argv.end(), {"--manifest", options.manifest});
  if (options.timeout_seconds)
    argv.insert(argv.end(), {"--timeout", std::to_string(*options.timeout_seconds)});
  if (options.public_only) argv.push_back("--public-only");
  if (options.no_sandbox) argv.push_back("--no-sandbox");
  return argv;
}

// Starts `argv` with its stdout and stderr in `output` (appended to with `append`), on `cpus`
// only (all that this process may use when empty); returns its pid.
pid_t start(const std::vector<std::string>& argv, const std::string& output, bool append = false,
            const std::vector<int>& cpus = {}) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  cpu_set_t cpu_set;
  CPU_ZERO(&cpu_set);
  for (const int cpu : cpus) CPU_SET(cpu, &cpu_set);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot start a grading: fork failed");
  if (pid == 0) {
    const int fd = append ? open(output.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC)
                          : create_file(output, 0600);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(127);
    // Everything the grading starts (the compiler, the tests, the reference's run) inherits it.
    if (!cpus.empty() && sched_setaffinity(0, sizeof cpu_set, &cpu_set) != 0) _exit(127);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

std::string status_of(int wait_status) {
  if (WIFEXITED(wait_status)) {
    const int code = WEXITSTATUS(wait_status);
    if (code == 0) return "graded";
    return "grader failed (exit status " + std::to_string(code) + ", see output.txt)";
  }
  return "grader killed by signal " + std::to_string(WTERMSIG(wait_status));
}

// Runs `argv` to its end (output as start's), nothing else of the batch running; its status.
std::string run_alone(const std::vector<std::string>& argv, const std::string& output,
                      bool append) {
  const pid_t pid = start(argv, output, append);
  int wait_status = 0;
  while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  return status_of(wait_status);
}

std::string duration_text(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, s / 60 % 60);
  } else {
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  }
  return text;
}

// "[12/40] 2 running, 1 failed, ETA 3m10s": one line, rewritten in place on a terminal; else
// printed at every tenth of the batch.
class Progress {
 public:
  Progress(std::ostream& log, std::size_t total, std::size_t kept)
      : log_(log),
        total_(total),
        done_(kept),
        kept_(kept),
        terminal_(isatty(STDOUT_FILENO)),
        started_(Clock::now()) {}

  void update(int running, bool failed) {
    failed_ += failed;
    const std::size_t graded = done_ - kept_;
    const double elapsed = std::chrono::duration<double>(Clock::now() - started_).count();
    std::string line = "[" + std::to_string(done_) + "/" + std::to_string(total_) + "] " +
                       std::to_string(running) + " running, " + std::to_string(failed_) + " failed";
    if (graded > 0 && done_ < total_) {
      const double per_hand_in = elapsed / graded;  // jobs at a time: the rate seen so far
      line += ", ETA " + duration_text(per_hand_in * (total_ - done_));
    }
    if (terminal_) {
      log_ << "\r" << line << "\033[K" << std::flush;
    } else if (done_ == total_ || graded == 1 || done_ * 10 / total_ != (done_ - 1) * 10 / total_) {
      log_ << line << "\n" << std::flush;
    }
  }
  void one_more() { ++done_; }
  void finish() {
    if (terminal_) log_ << "\n";
  }

 private:
  std::ostream& log_;
  std::size_t total_, done_, kept_;
  bool terminal_;
  Clock::time_point started_;
  int failed_ = 0;
};

// The gradebook row of one student, from <dir>/results.json and <dir>/graded.json.
GradebookRow read_row(const std::string& student, const std::string& dir,
                      const Manifest& manifest) {
  GradebookRow row;
  row.student = student;
  const json stamp = read_json(dir + "/graded.json");
  row.status = stamp.is_object() ? stamp.value("status", "unknown") : "not graded";
  row.seconds = stamp.is_object() ? stamp.value("seconds", 0.0) : 0;
  row.seed = stamp.is_object() ? stamp.value("seed", std::uint64_t{0}) : 0;
  for (const Part& part : manifest.parts) row.parts[part.number] = 0;
  const json results = read_json(dir + "/results.json");
  if (!results.is_object() || !results.contains("tests")) return row;
  for (const json& test : results["tests"]) {
    const std::string name = test.value("name", "");
    const double score = test.value("score", 0.0), max_score = test.value("max_score", 0.0);
    int part = 0;
    if (std::sscanf(name.c_str(), "Part %d |", &part) != 1) continue;
    if (is_speed_bonus_test(name)) {
      row.bonus += score;
      continue;
    }
    row.parts[part] += score;
    row.total += score;
    if (score < max_score) row.failed[name] = test.value("output", "");
  }
  for (const json& entry : results.value("leaderboard", json::array())) {
    if (!entry.is_object() || !entry.value("value", json()).is_number()) continue;
    row.leaderboard.push_back({entry.value("name", ""), entry["value"].get<double>(),
                               entry.value("order", "asc") == "desc"});
  }
  const json checked = read_json(dir + "/" + kLeaderboardCheckFile);
  if (checked.is_object()) {
    for (const auto& [name, verdict] : checked.items()) {
      if (verdict.is_string()) row.leaderboard_check[name] = verdict.get<std::string>();
    }
  }
  return row;
}

// One line of CSV: every field quoted, and made safe from spreadsheets' formulas (csv_field).
std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (const std::string& field : fields) line += (line.empty() ? "" : ",") + csv_field(field);
  return line + "\n";
}

void write_gradebook(const std::string& path, const Manifest& manifest,
                     const std::vector<GradebookRow>& rows) {
  std::vector<std::string> header = {"student"};
  for (const Part& part : manifest.parts) header.push_back("Part " + std::to_string(part.number));
  header.insert(header.end(), {"total", "bonus", "seed", "seconds", "status"});
  std::string csv = csv_line(header);
  for (const GradebookRow& row : rows) {
    std::vector<std::string> fields = {row.student};
    for (const Part& part : manifest.parts)
      fields.push_back(formatted("%.4g", row.parts.at(part.number)));
    fields.insert(fields.end(),
                  {formatted("%.4g", row.total), formatted("%.4g", row.bonus),
                   std::to_string(row.seed), formatted("%.1f", row.seconds), row.status});
    csv += csv_line(fields);
  }
  write_private_file(path, csv);
}

// The batch's output directory, made or checked: the grader's own (a directory someone else
// made, in /tmp say, could hold links planted where results go), and 0700, so that no sandboxed
// process reads a class's results, not even those of a batch still running.
void make_private_directory(const std::string& out) {
  fs::create_directories(out);
  struct stat info {};
  if (lstat(out.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    throw UsageError(out + " is not a directory");
  }
  if (info.st_uid != geteuid()) {
    throw UsageError(out + " belongs to another user (uid " + std::to_string(info.st_uid) +
                     "): a class's results go to a directory of the grader's own; give another "
                     "--out");
  }
  fs::permissions(out, fs::perms::owner_all, fs::perm_options::replace);
}

}  // namespace

namespace {

// Grades `to_grade`, options.jobs at a time, writing each one's graded.json as it ends.
void run_gradings(const Options& options, const std::vector<const HandIn*>& to_grade,
                  std::size_t total, const std::string& out, std::uint64_t seed,
                  std::ostream& log) {
  Progress progress(log, total, total - to_grade.size());
  const std::string expected = shared_cache(out, ".expected");
  const std::string objects = shared_cache(out, ".objects");
  struct Running {
    const HandIn* hand_in;
    int slot;
    Clock::time_point start;
  };
  std::map<pid_t, Running> running;
  std::vector<int> free_slots;
  for (int slot = options.jobs - 1; slot >= 0; --slot) free_slots.push_back(slot);
  // Each slot grades on its own share of the CPUs (docs/grading.md, Grading a whole class).
  const std::vector<int> cpus = allowed_cpus();
  std::size_t next = 0;
  while (next < to_grade.size() || !running.empty()) {
    while (next < to_grade.size() && !free_slots.empty()) {
      const HandIn& hand_in = *to_grade[next++];
      const std::string dir = student_dir(out, hand_in);
      fs::create_directories(dir);
      const int slot = free_slots.back();
      free_slots.pop_back();
      // A task of a job array has CPUs of its own: it times its bonus itself.
      std::vector<std::string> extra = {"--expected-cache", expected, "--object-cache", objects};
      if (!options.task) extra.push_back("--bonus-later");
      const pid_t pid =
          start(grading_command(options, hand_in, out, dir + "/results.json", seed, slot, extra),
                dir + "/output.txt",
                /*append=*/false, slot_cpus(cpus, slot, options.jobs));
      running[pid] = {&hand_in, slot, Clock::now()};
    }
    int wait_status = 0;
    const pid_t pid = waitpid(-1, &wait_status, 0);
    const auto done = running.find(pid);
    if (pid < 0 || done == running.end()) continue;  // not one of ours (an orphan reparented)
    const Running finished = done->second;
    running.erase(done);
    free_slots.push_back(finished.slot);
    const std::string status = status_of(wait_status);
    const double seconds = std::chrono::duration<double>(Clock::now() - finished.start).count();
    write_json(student_dir(out, *finished.hand_in) + "/graded.json",
               {{"status", status}, {"seconds", seconds}, {"seed", seed}});
    progress.one_more();
    progress.update(static_cast<int>(running.size()), status != "graded");
  }
  progress.finish();
}

// The speed bonuses the gradings left pending (or an earlier run deferred), timed one at a time
// with nothing else of the batch running, so that a hand-in's bonus never depends on its
// neighbours. Returns how many are still deferred (the machine was busy).
int time_bonuses(const Options& options, const std::vector<HandIn>& hand_ins,
                 const std::string& out, std::uint64_t seed, std::ostream& log) {
  std::vector<const HandIn*> to_time;
  for (const HandIn& hand_in : hand_ins) {
    const std::string state =
        speed_bonus_state(read_json(student_dir(out, hand_in) + "/results.json"));
    if (state == "pending" || state == "deferred") to_time.push_back(&hand_in);
  }
  if (to_time.empty()) return 0;
  log << "Timing the speed bonus of " << to_time.size() << " hand-in"
      << (to_time.size() == 1 ? "" : "s") << ", one at a time..." << std::endl;
  int deferred = 0;
  for (std::size_t i = 0; i < to_time.size(); ++i) {
    const std::string dir = student_dir(out, *to_time[i]);
    const std::string status =
        run_alone(grading_command(options, *to_time[i], out, dir + "/results.json", seed,
                                  /*slot=*/0, {"--bonus-only"}),
                  dir + "/output.txt", /*append=*/true);
    if (status != "graded") {
      log << "dtk-grade: timing the speed bonus of " << shown_name(to_time[i]->student)
          << " failed: see its output.txt\n";
    }
    deferred += speed_bonus_state(read_json(dir + "/results.json")) != "timed";
    if (isatty(STDOUT_FILENO)) {
      log << "\r[" << i + 1 << "/" << to_time.size() << "] " << deferred << " deferred\033[K"
          << std::flush;
    }
  }
  if (isatty(STDOUT_FILENO)) log << "\n";
  if (deferred > 0) {
    log << "dtk-grade: " << deferred << " speed bonus" << (deferred == 1 ? " was" : "es were")
        << " not timed: the machine was busy (their results.json say so), or the grader "
           "failed. Run the same command again when the machine is idle to time them.\n";
  }
  return deferred;
}

// The best of each leaderboard graded again, one at a time with nothing else of the batch
// running, only the parts with leaderboards, into <student>/again/; each entry's verdict goes to
// <student>/leaderboard_check.json (class/leaderboards.hpp). A hand-in checked in an earlier run
// of the batch is not checked again (--regrade checks it anew).
void check_leaderboards(const Options& options, const Manifest& manifest,
                        const std::vector<HandIn>& hand_ins, const std::vector<GradebookRow>& rows,
                        const std::string& out, std::uint64_t seed, std::ostream& log) {
  std::vector<const HandIn*> to_check;
  for (const std::string& student : leaderboard_leaders(rows)) {
    for (const HandIn& hand_in : hand_ins) {
      if (hand_in.student == student &&
          !fs::exists(student_dir(out, hand_in) + "/" + kLeaderboardCheckFile))
        to_check.push_back(&hand_in);
    }
  }
  if (to_check.empty()) return;
  std::string parts;
  for (const int part : leaderboard_parts(manifest))
    parts += (parts.empty() ? "" : ",") + std::to_string(part);
  log << "Grading the best " << kLeaderboardChecked << " of each leaderboard again alone ("
      << to_check.size() << " hand-in" << (to_check.size() == 1 ? "" : "s") << ", Part"
      << (parts.find(',') == std::string::npos ? " " : "s ") << parts << ")..." << std::endl;
  int changed = 0;
  for (const HandIn* hand_in : to_check) {
    const std::string dir = student_dir(out, *hand_in);
    fs::create_directories(dir + "/again");
    const std::string status = run_alone(
        grading_command(options, *hand_in, out, dir + "/again/results.json", seed, /*slot=*/0,
                        {"--parts", parts, "--expected-cache", shared_cache(out, ".expected"),
                         "--object-cache", shared_cache(out, ".objects")}),
        dir + "/again/output.txt", /*append=*/false);
    const json first = read_json(dir + "/results.json");
    const json again = read_json(dir + "/again/results.json");
    if (status != "graded" || !first.is_object() || !again.is_object()) {
      log << "dtk-grade: grading " << shown_name(hand_in->student)
          << " again failed: see its again/output.txt\n";
      continue;
    }
    const auto verdicts = compare_leaderboards(manifest, first, again);
    for (const auto& [name, verdict] : verdicts) changed += verdict.rfind("changed", 0) == 0;
    write_json(dir + "/" + kLeaderboardCheckFile, verdicts);
  }
  log << "Leaderboards: " << changed << " entr" << (changed == 1 ? "y" : "ies")
      << " changed when graded again alone (the summary page shows each)\n";
}

}  // namespace

int grade_batch(const Options& options, const Manifest& manifest, const Toolchain& toolchain,
                std::ostream& log) {
  const std::vector<HandIn> hand_ins = find_hand_ins(options.batch);
  if (hand_ins.empty()) {
    throw UsageError("no hand-ins under " + options.batch +
                     " (one sub-directory or .tar per student, named by student)");
  }
  std::string batch_dir = options.batch;
  while (batch_dir.size() > 1 && batch_dir.back() == '/') batch_dir.pop_back();
  const std::string out = options.out.empty() ? batch_dir + "-graded" : options.out;
  umask(077);  // every file of the batch and of its gradings: the course staff's only
  make_private_directory(out);

  if (options.task) {  // one task of a job array: the seed was fixed before the array started
    if (*options.task >= hand_ins.size()) {
      throw UsageError("--task " + std::to_string(*options.task) + ": there are only " +
                       std::to_string(hand_ins.size()) + " hand-ins (tasks 0 to " +
                       std::to_string(hand_ins.size() - 1) + ")");
    }
    const json stored = read_json(out + "/batch.json");
    if (!stored.is_object()) {
      throw UsageError(out + "/batch.json is missing: run dtk-grade --batch " + options.batch +
                       " --out " + out + " --list first (it fixes the batch's seed)");
    }
    const HandIn& hand_in = hand_ins[*options.task];
    run_gradings(options, {&hand_in}, 1, out, stored.value("seed", std::uint64_t{0}), log);
    const json stamp = read_json(student_dir(out, hand_in) + "/graded.json");
    return stamp.is_object() && stamp.value("status", "") == "graded" ? 0 : 1;
  }
  const std::uint64_t seed = batch_seed(options, manifest, out);
  if (options.list) {
    for (const HandIn& hand_in : hand_ins) log << hand_in.student << "\t" << hand_in.path << "\n";
    return 0;
  }

  std::vector<const HandIn*> to_grade;
  for (const HandIn& hand_in : hand_ins) {
    const std::string dir = student_dir(out, hand_in);
    if (options.regrade) {
      fs::remove(dir + "/graded.json");
      fs::remove(dir + "/" + kLeaderboardCheckFile);
    }
    if (!fs::exists(dir + "/graded.json")) to_grade.push_back(&hand_in);
  }
  log << "dtk-grade: " << hand_ins.size() << " hand-ins in " << shown_name(options.batch) << ", "
      << to_grade.size() << " to grade (" << hand_ins.size() - to_grade.size()
      << " graded before), " << options.jobs << " at a time, seed " << seed << "; results in "
      << shown_name(out) << "\n";
  run_gradings(options, to_grade, hand_ins.size(), out, seed, log);
  time_bonuses(options, hand_ins, out, seed, log);

  const auto read_rows = [&] {
    std::vector<GradebookRow> rows;
    for (const HandIn& hand_in : hand_ins)
      rows.push_back(read_row(hand_in.student, student_dir(out, hand_in), manifest));
    return rows;
  };
  check_leaderboards(options, manifest, hand_ins, read_rows(), out, seed, log);
  const std::vector<GradebookRow> rows = read_rows();
  const std::string gradebook =
      options.gradebook.empty() ? out + "/gradebook.csv" : options.gradebook;
  write_gradebook(gradebook, manifest, rows);
  std::vector<SimilarPair> similar;
  if (options.similarity) {
    log << "Comparing the hand-ins (sim_c++)..." << std::endl;
    similar = find_similar_pairs(hand_ins, toolchain.assignment_files.at(manifest.assignment),
                                 toolchain.starter_dir, out, kSimilarPairsListed);
  }
  write_summary_page(out + "/summary.html", manifest, rows, seed, similar);
  int failed = 0;
  for (const GradebookRow& row : rows) failed += row.status != "graded";
  log << "Gradebook: " << shown_name(gradebook) << "\nSummary: " << shown_name(out)
      << "/summary.html\n";
  if (failed > 0) {
    log << "dtk-grade: the grader failed on " << failed
        << " hand-ins; their rows say how, and their output.txt why\n";
  }
  return failed > 0 ? 1 : 0;
}

}  // namespace dtk::grade
