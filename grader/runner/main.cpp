// dtk-grade-runner: runs hidden test cases and writes what it finds, one file per rank.
//
//   mpirun -n N dtk-grade-runner --out DIR --configs DIR --work DIR --test-seconds T
//                                [--allowed-mpi FUNCTION=CALL,...]...
//                                [--allowed-communicator FUNCTION=CALL,...]... TEST_ID...
//   dtk-grade-runner --write-checks FILE   (the build: checks.json, see check_registry.hpp)
//
// DIR/key, which dtk-grade writes, holds the launch's record key and the seed (never in argv,
// which the code under test could read); it is deleted before any test runs.
// It only evaluates: for each test it builds the inputs from (seed, test id), calls the one
// student function under test and records the outputs in DIR/rank<R>.out. Each rank works in
// its own directory, <work>/rank<R> (its current directory: files a check writes go there). It
// judges nothing: the grader compares these files with the ones the same runner writes when linked
// with the reference. A test on n ranks runs on the first n ranks of the launch; a watchdog ends
// the process when a test runs longer than T seconds (a rank stuck in a collective, a loop).
// Student code runs on threads of its own (student_thread.hpp), sealed for the tests of
// functions that communicate.
#include <cxxabi.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "check_context.hpp"
#include "forbidden_mpi.hpp"
#include "student_thread.hpp"

namespace dtk::grade {
namespace {

struct Options {
  std::uint64_t seed = 0;
  std::string out_dir, configs_dir, work_dir;
  int test_seconds = 0;  // required: dtk-grade passes the manifest's
  // Likewise, by function: the MPI calls and the Communicator calls its code may make.
  std::map<std::string, std::set<std::string>> allowed_mpi, allowed_communicator;
  std::vector<std::string> tests;
};

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--out" && has_value) {
      options.out_dir = argv[++i];
    } else if (arg == "--configs" && has_value) {
      options.configs_dir = argv[++i];
    } else if (arg == "--work" && has_value) {
      options.work_dir = argv[++i];
    } else if (arg == "--test-seconds" && has_value) {
      options.test_seconds = std::atoi(argv[++i]);
    } else if ((arg == "--allowed-mpi" || arg == "--allowed-communicator") && has_value) {
      const std::string rule = argv[++i];
      const std::size_t equals = rule.find('=');
      auto& rules = arg == "--allowed-mpi" ? options.allowed_mpi : options.allowed_communicator;
      std::set<std::string>& calls = rules[rule.substr(0, equals)];
      std::istringstream list(equals == std::string::npos ? "" : rule.substr(equals + 1));
      for (std::string call; std::getline(list, call, ',');) calls.insert(call);
    } else {
      options.tests.push_back(arg);
    }
  }
  if (options.test_seconds <= 0) {
    std::fprintf(stderr, "dtk-grade-runner: --test-seconds N (N > 0) is required\n");
    std::exit(2);
  }
  return options;
}

RecordWriter* current_test = nullptr;  // where forbidden calls are recorded
volatile std::sig_atomic_t in_test = 0;
// What static initializers of the submission left behind (take_over_process): charged to
// every test, as forbidden calls of the code under test.
std::vector<std::string> before_main;

// A rank that dies in a test says so in its file first (write_marker): the grader then stops
// the launch at once instead of waiting for mpirun to notice (a second or two).
struct sigaction previous[NSIG];

void on_fatal_signal(int signal) {
  char line[32] = "crashed ";
  int at = 8;
  if (signal >= 10) line[at++] = static_cast<char>('0' + signal / 10);
  line[at++] = static_cast<char>('0' + signal % 10);
  line[at++] = '\n';
  line[at] = '\0';
  if (in_test) write_marker(line);
  sigaction(signal, &previous[signal], nullptr);  // MPI's handler prints a backtrace
  raise(signal);
}

void on_exit_during_test() {
  if (in_test) write_marker("exited\n");
}

void report_deaths() {
  for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    struct sigaction action {};
    action.sa_handler = on_fatal_signal;
    sigaction(signal, &action, &previous[signal]);
  }
  std::atexit(on_exit_during_test);
}

// Ends the process when one test runs too long. It writes a "timeout" line first, so the
// grader can tell a hang from a crash.
class Watchdog {
 public:
  explicit Watchdog(int seconds) : seconds_(seconds) {
    std::thread([this] { watch(); }).detach();
  }
  void arm() { deadline_ = now() + seconds_ * 1000; }
  void disarm() { deadline_ = 0; }

 private:
  static long long now() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
  }
  void watch() {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const long long deadline = deadline_;
      if (deadline != 0 && now() > deadline) {
        write_marker(("timeout " + std::to_string(seconds_) + "\n").c_str());
        std::_Exit(124);
      }
    }
  }
  int seconds_;
  std::atomic<long long> deadline_{0};
};

void run_test(const Options& options, const std::string& id, RecordWriter& out,
              Watchdog& watchdog) {
  TestCase test;
  try {
    test = parse_test_id(id);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dtk-grade-runner: %s\n", error.what());
    std::exit(2);
  }
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm test_comm = MPI_COMM_NULL;
  const bool mine = world_rank < test.ranks();
  MPI_Comm_split(MPI_COMM_WORLD, mine ? 0 : MPI_UNDEFINED, world_rank, &test_comm);
  if (!mine) return;

  out.begin(id);
  apply_rules_of(test.function);
  current_test = &out;
  for (const std::string& problem : before_main)
    out.forbidden(problem, "a static initializer of the submission, before main");
  in_test = 1;
  watchdog.arm();
  try {
    CheckContext context{test, options.seed,        Communicator(test_comm),
                         out,  options.configs_dir, options.work_dir};
    if (test.is_speed()) {
      // The speed bonus's check runs each student call on a thread of its own, and MPI's
      // turns here.
      check_function(test.function)(context);
    } else {
      run_on_student_thread([&] { check_function(test.function)(context); },
                            /*sealed=*/test.check().collective);
    }
  } catch (const std::exception& error) {
    out.error(error.what());
  } catch (...) {
    out.error("threw an exception that is not a std::exception");
  }
  watchdog.disarm();
  in_test = 0;
  current_test = nullptr;
  apply_rules_of("");
  out.end(id);
  MPI_Comm_free(&test_comm);
}

// The key of this launch's record hashes and the seed, from <out>/key, which the grader wrote
// ("<32 hex digits>\n<seed>\n"). Once every rank has them, rank 0 deletes the file: no student
// code has run yet.
std::string read_launch_file(const std::string& out_dir, int rank, std::uint64_t& seed) {
  const std::string path = out_dir + "/key";
  char text[64] = {};
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  const ssize_t size = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
  if (fd >= 0) close(fd);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) unlink(path.c_str());
  char* end = nullptr;
  if (size > 33 && text[32] == '\n') seed = std::strtoull(text + 33, &end, 10);
  if (end == nullptr || *end != '\n')
    throw std::runtime_error("cannot read the launch's file " + path);
  return std::string(text, 32);
}

// "xt::xtensor<...> dtk::f<double>(xt::... const&, int)" -> "dtk::f<double>".
std::string short_name(std::string demangled) {
  const std::string anonymous = "(anonymous namespace)::";
  for (std::size_t at; (at = demangled.find(anonymous)) != std::string::npos;) {
    demangled.erase(at, anonymous.size());
  }
  const std::size_t dtk = demangled.find("dtk::");
  const std::size_t begin = dtk == std::string::npos ? 0 : dtk;
  return demangled.substr(begin, demangled.find('(', begin) - begin);
}

}  // namespace

void report_forbidden_call(const char* call, const void* return_address) {
  static const void* runner_base = [] {
    Dl_info self{};
    dladdr(reinterpret_cast<const void*>(&report_forbidden_call), &self);
    return self.dli_fbase;
  }();
  Dl_info caller{};
  if (dladdr(return_address, &caller) == 0) return;
  if (caller.dli_fbase == runner_base) {
    // The runner's code: the Communicator's, when a student call made it.
    const std::string communicator = forbidden_communicator_call(call);
    if (!communicator.empty() && current_test != nullptr)
      current_test->forbidden(communicator, "dtk::" + function_under_test() + ", at run time");
    return;
  }
  std::string where = caller.dli_fname ? caller.dli_fname : "unknown code";
  if (caller.dli_sname != nullptr) {
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> name(
        abi::__cxa_demangle(caller.dli_sname, nullptr, nullptr, &status), &std::free);
    where = status == 0 ? short_name(name.get()) : caller.dli_sname;
  }
  if (current_test != nullptr) {
    current_test->forbidden(call, where);
  } else {
    std::fprintf(stderr, "forbidden MPI call outside any test: %s from %s\n", call, where.c_str());
  }
}

}  // namespace dtk::grade

int main(int argc, char** argv) {
  using namespace dtk::grade;
  // The build writes the checks registered here for dtk-grade (check_registry.hpp).
  if (argc == 3 && std::string(argv[1]) == "--write-checks") {
    std::ofstream file(argv[2]);
    file << checks_json();
    if (!file.flush()) {
      std::fprintf(stderr, "dtk-grade-runner: cannot write %s\n", argv[2]);
      return 1;
    }
    return 0;
  }
  before_main = take_over_process();
  // MPI calls come from the tests' threads, one at a time.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  const Options options = parse_options(argc, argv);
  allow_calls(options.allowed_mpi, options.allowed_communicator);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string path = options.out_dir + "/rank" + std::to_string(rank) + ".out";
  set_marker_file(path);
  std::unique_ptr<RecordWriter> writer;
  Options rank_options = options;
  rank_options.work_dir = options.work_dir + "/rank" + std::to_string(rank);
  try {
    writer = std::make_unique<RecordWriter>(
        path, read_launch_file(options.out_dir, rank, rank_options.seed));
    if ((mkdir(rank_options.work_dir.c_str(), 0700) != 0 && errno != EEXIST) ||
        chdir(rank_options.work_dir.c_str()) != 0) {
      throw std::runtime_error("cannot enter " + rank_options.work_dir + ": " +
                               std::strerror(errno));
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dtk-grade-runner: %s\n", error.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  RecordWriter& out = *writer;
  report_deaths();
  Watchdog watchdog(options.test_seconds);
  for (const std::string& id : options.tests) run_test(rank_options, id, out, watchdog);
  MPI_Finalize();
  return 0;
}
