// dtk-grade-runner: runs hidden test cases and writes what it finds, one file per rank.
//
//   mpirun -n N dtk-grade-runner --out DIR --configs DIR --work DIR --test-seconds T
//                                [--allowed-mpi FUNCTION=CALL,...]...
//                                [--allowed-communicator FUNCTION=CALL,...]... TEST_ID...
//   dtk-grade-runner --derive DIR --configs DIR TEST_ID...   (derive.hpp: after a launch)
//   dtk-grade-runner --write-checks FILE   (the build: checks.json, see check_registry.hpp)
//
// DIR/rank<R>.key, which dtk-grade writes, holds what rank R must know and the code under test
// must not read elsewhere (launch_file.hpp): the key of its records and its own input keys
// (never in argv, which the code under test could read). It is deleted before any student code
// is loaded (launch.hpp).
// It only evaluates: for each test it builds this rank's inputs, calls the one student function
// under test and records the outputs in DIR/rank<R>.out. Each rank works in its own directory,
// <work>/rank<R> (its current directory: files a check writes go there). It judges nothing:
// the grader compares these files with the ones the same runner writes when linked with the
// reference. A test on n ranks runs on the first n ranks of the launch; a watchdog ends the
// process when a test runs longer than T seconds (a rank stuck in a collective, a loop).
// Student code runs only in student calls (check_context.hpp), on sealed threads of their own.
#include <cxxabi.h>
#include <dlfcn.h>
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

#include <dtk/freed_memory.hpp>
#include <dtk/single_machine_mpi.hpp>

#include "check_context.hpp"
#include "derive.hpp"
#include "forbidden_mpi.hpp"
#include "launch.hpp"
#include "student_thread.hpp"

namespace dtk::grade {
namespace {

struct Options {
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
// What the student library's static initializers left behind while it loaded: charged to every
// test, as forbidden calls of the code under test.
std::vector<std::string> left_at_load;

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
  // The clock is looked at 20 times a second: a test ends within 50 ms of its limit.
  static constexpr std::chrono::milliseconds kWatchPeriod{50};
  static long long now() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
  }
  void watch() {
    for (;;) {
      std::this_thread::sleep_for(kWatchPeriod);
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

// Waits for a collective of the whole launch asleep, not spinning in MPI: the ranks that sit
// out a test (a 2-rank test in an 8-rank launch) leave the cores to the ranks that run it.
void wait_asleep(MPI_Request& request) {
  static constexpr std::chrono::microseconds kIdlePoll{500};
  for (int done = 0; PMPI_Test(&request, &done, MPI_STATUS_IGNORE), !done;)
    std::this_thread::sleep_for(kIdlePoll);
}

// Whether any rank of the launch asks for a fresh process (a student call left a thread
// running): every rank of the launch takes part, before each test.
bool any_rank_asks_restart(bool mine) {
  int asked = mine ? 1 : 0, any = 0;
  MPI_Request request;
  PMPI_Iallreduce(&asked, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &request);
  wait_asleep(request);
  return any != 0;
}

// Runs one test; returns whether a student call of it left a thread running.
bool run_test(const Options& options, const std::string& id, const TestKeys& keys,
              RecordWriter& out, Watchdog& watchdog) {
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
  if (!mine) return false;

  out.begin(id);
  apply_rules_of(test.function);
  current_test = &out;
  for (const std::string& problem : left_at_load)
    out.forbidden(problem, "a static initializer of the submission, while it loaded");
  in_test = 1;
  watchdog.arm();
  bool left_a_thread = false;
  {
    CheckContext context(test, keys, test_comm, out, options.configs_dir, options.work_dir);
    try {
      check_function(test.function)(context);
    } catch (const std::exception& error) {
      out.error(error.what());
    }
    context.record_traffic();
    left_a_thread = context.left_a_thread();
  }
  watchdog.disarm();
  in_test = 0;
  current_test = nullptr;
  apply_rules_of("");
  out.end(id);
  MPI_Comm_free(&test_comm);
  return left_a_thread;
}

// Runs the tests of this launch; a test after which a student call left a thread running ends
// the launch (a line "restart" after its end): the grader runs the tests after it in a fresh
// process.
void run_launch(int argc, char** argv) {
  make_private();
  dtk::keep_freed_memory();
  dtk::use_single_machine_mpi();
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  const Options options = parse_options(argc, argv);
  allow_calls(options.allowed_mpi, options.allowed_communicator);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string path = rank_records_path(options.out_dir, rank);
  set_marker_file(path);
  Options rank_options = options;
  rank_options.work_dir = options.work_dir + "/rank" + std::to_string(rank);
  std::unique_ptr<RecordWriter> writer;
  LaunchFile launch;
  try {
    launch = take_launch_file(options.out_dir, rank);
    if (launch.test_keys.size() != options.tests.size())
      throw std::runtime_error("the launch's file has keys for " +
                               std::to_string(launch.test_keys.size()) + " tests, not " +
                               std::to_string(options.tests.size()));
    writer = std::make_unique<RecordWriter>(path, launch.record_key);
    if ((mkdir(rank_options.work_dir.c_str(), 0700) != 0 && errno != EEXIST) ||
        chdir(rank_options.work_dir.c_str()) != 0) {
      throw std::runtime_error("cannot enter " + rank_options.work_dir + ": " +
                               std::strerror(errno));
    }
    left_at_load = load_student_code();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dtk-grade-runner: %s\n", error.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  report_deaths();
  Watchdog watchdog(options.test_seconds);
  bool restart = false;
  for (std::size_t i = 0; i < options.tests.size(); ++i) {
    if (i > 0 && any_rank_asks_restart(restart)) {
      writer->restart();
      break;
    }
    const TestKeys keys{launch.test_keys[i].first, launch.test_keys[i].second, launch.seed};
    restart = run_test(rank_options, options.tests[i], keys, *writer, watchdog);
  }
  MPI_Request everyone_done;
  PMPI_Ibarrier(MPI_COMM_WORLD, &everyone_done);
  wait_asleep(everyone_done);
  MPI_Finalize();
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
  const bool known = dladdr(return_address, &caller) != 0;
  if (known && caller.dli_fbase == runner_base) {
    // The runner's code: the Communicator's, when a student call made it.
    const std::string communicator = forbidden_communicator_call(call);
    if (!communicator.empty() && current_test != nullptr)
      current_test->forbidden(communicator, "dtk::" + function_under_test() + ", at run time");
    return;
  }
  // Code of no loaded object (written to memory at run time) is the student's too.
  std::string where = known && caller.dli_fname ? caller.dli_fname : "code outside any library";
  if (known && caller.dli_sname != nullptr) {
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
  if (argc >= 2 && std::string(argv[1]) == "--derive") return derive_main(argc, argv);
  block_signals();
  run_launch(argc, argv);
  // Straight out: no static destructor or exit handler of the submission runs after the tests.
  std::fflush(nullptr);
  std::_Exit(0);
}
