// Where the runner lets student code run: every student call on a sealed thread of its own,
// never on the main thread.
//
// The main thread, MPI's threads and the watchdog block every signal (they inherit the mask the
// main thread sets before MPI starts them), so a signal handler a submission installs can only
// ever run on a student thread. Every student call runs sealed: under the seccomp filter of
// seccomp_filter.hpp, which the thread's end takes away with it, so that the student's code
// reaches other ranks through MPI only, while the runner's own code (the checks, records, the
// speed bonus's MPI turns) keeps the main thread. Per-thread state a student call changes (CPU
// affinity, scheduling policy, priority, signal mask) ends with its thread too.
//
// The student library is loaded only once the launch's keys are read and deleted (launch.hpp),
// on a sealed thread: its static initializers run sealed too, and what they leave is looked at
// once.
#pragma once

#include <sched.h>
#include <sys/resource.h>

#include <array>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace dtk::grade {

// Blocks every signal in the calling thread (the main thread, first thing in main), and so in
// every thread it starts from then on: MPI's and the watchdog.
void block_signals();

// Loads the student library at `path` (libdtk_student.so) on a sealed student thread, so that
// its static initializers run under the filter too, and from then on lets its code execute only
// while run_student_code runs (anywhere else its pages are not executable, so that nothing but
// a student call can ever run it). Returns "" or why it could not be loaded.
std::string load_student_library(const std::string& path);

// What the student library's static initializers left behind while it loaded, compared with
// `before` (the process just before): a thread, memory shared with other processes, an open
// file or socket (closed), a seccomp filter of its own; one line each.
struct LoadState {
  std::size_t threads = 0;
  int seccomp_filters = 0;
  std::vector<std::string> shared_mappings, descriptors;
  static LoadState now();
};
std::vector<std::string> left_by_loading(const LoadState& before);

// Runs `code` on a new sealed thread, with the student library executable, and waits for it.
// What `code` throws comes back as the standard exception of the same kind (std::invalid_argument,
// std::runtime_error, ...; another type as StudentException) with the same message: its what()
// and its destructor, student code, run on the student thread. While it runs, the death markers
// a signal handler or exit() writes on the student thread (write_marker) are written by the
// waiting main thread.
void run_student_code(const std::function<void()>& code);

// An exception of a type the standard library does not name, thrown by student code.
class StudentException : public std::exception {
 public:
  explicit StudentException(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

// The threads of this process running now (not those that have ended, still listed).
std::size_t running_threads();
// Likewise once no more than `before` run, or after a quarter of a second: a thread that ended
// just before may still be leaving.
std::size_t running_threads_after(std::size_t before);

// What a student call could leave changed for the code that runs after it on the calling
// thread: threads still running, and what the filter is meant to keep it from touching (the
// thread's CPU affinity, scheduling policy and priority, the process's resource limits). The
// speed bonus times MPI's turn only after checking that nothing changed.
struct ProcessState {
  std::size_t threads = 0;
  cpu_set_t affinity{};
  int policy = 0, priority = 0, nice = 0;
  std::array<rlimit, RLIM_NLIMITS> limits{};

  static ProcessState now();
  // What differs from `before`, said for feedback ("a thread still running, the CPU
  // affinity"), or "".
  std::string changes_since(const ProcessState& before) const;
};

// The record file the death markers go to (this rank's).
void set_marker_file(const std::string& path);

// Appends `line` ("crashed 11\n", "exited\n", "timeout 2\n") to the marker file: from a student
// thread through the main thread (a sealed thread may not open files), from any other thread
// directly. Async-signal-safe.
void write_marker(const char* line);

}  // namespace dtk::grade
