// Where the runner lets student code run: every test on a thread of its own, never on the main
// thread.
//
// The main thread, MPI's threads and the watchdog block every signal (they inherit the mask the
// main thread sets before MPI starts them), so a signal handler a submission installs can only
// ever run on a student thread. The tests of functions that communicate run sealed: under the
// seccomp filter of seccomp_filter.hpp, which the thread's end takes away with it, so that the
// student's code reaches other ranks through MPI only, while the runner's own code (records,
// the speed bonus's MPI turns) keeps the main thread. Per-thread state a student call changes
// (CPU affinity, scheduling policy, priority, signal mask) ends with its thread too.
//
// What a submission could do before main (its static initializers run when the runner loads
// libdtk_student.so) is looked at once, first thing in main.
#pragma once

#include <sched.h>
#include <sys/resource.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

namespace dtk::grade {

// Called first in main, before MPI_Init: what a static initializer of the submission left
// behind (a thread, memory shared with other processes, an open file or socket, a seccomp
// filter of its own), one line each; stray descriptors are closed. Then blocks every signal
// in this thread, and so in every thread it starts from now on.
std::vector<std::string> take_over_process();

// Runs `test` on a new thread and waits for it; `sealed`: under the student filter. Rethrows
// what `test` throws. While it runs, the death markers a signal handler or exit() writes on the
// student thread (write_marker) are written by the waiting main thread.
void run_on_student_thread(const std::function<void()>& test, bool sealed);

// The threads of this process now.
std::size_t running_threads();

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
