#include "student_thread.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <stdexcept>

#include "seccomp_filter.hpp"

namespace dtk::grade {

namespace {

char marker_path[4096];  // this rank's record file

// A death marker on its way from a student thread to the main thread, which writes it.
char pending_marker[64];
std::atomic<int> marker_written{0};
std::atomic<int> wake_main{-1};  // write end of the running student thread's pipe; -1: none
thread_local bool on_student_thread = false;

void append_to_marker_file(const char* line) {
  const int fd = open(marker_path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;  // the grader sees an unfinished test either way
  if (write(fd, line, std::strlen(line)) < 0) {
    // Likewise.
  }
  close(fd);
}

double now_seconds() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

std::string first_line_of(const std::string& path, const std::string& key) {
  std::ifstream file(path);
  for (std::string line; std::getline(file, line);) {
    if (line.rfind(key, 0) == 0) return line.substr(key.size());
  }
  return "";
}

std::vector<std::string> entries(const char* dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir)) {
    while (const dirent* entry = readdir(d)) {
      if (entry->d_name[0] != '.') names.push_back(entry->d_name);
    }
    closedir(d);
  }
  return names;
}

// Descriptors 3 and up were opened before main (mpirun hands a rank 0, 1 and 2 only): closed,
// each a problem. 0, 1 and 2 must be what mpirun gave: pipes, a terminal or /dev/null, not a
// file or socket another process could read.
void close_stray_descriptors(std::vector<std::string>& problems) {
  const std::string self = "/proc/self/fd";
  for (const std::string& name : entries(self.c_str())) {
    const int fd = std::atoi(name.c_str());
    char target[512] = {};
    if (readlink((self + "/" + name).c_str(), target, sizeof target - 1) < 0) continue;
    struct stat info {};
    if (fstat(fd, &info) != 0) continue;  // the directory listing's own descriptor, now closed
    if (fd > 2) {
      problems.push_back(std::string("a file or socket opened (") + target + ")");
      close(fd);
    } else if (!S_ISFIFO(info.st_mode) && !S_ISCHR(info.st_mode)) {
      problems.push_back("standard stream " + name + " replaced (by " + target + ")");
    }
  }
}

struct StudentThread {
  const std::function<void()>* test;
  bool sealed;
  int wake_fd;
  std::exception_ptr error;
};

void* student_thread_main(void* argument) {
  auto& thread = *static_cast<StudentThread*>(argument);
  on_student_thread = true;
  sigset_t none;
  sigemptyset(&none);
  pthread_sigmask(SIG_SETMASK, &none, nullptr);
  try {
    if (thread.sealed) {
      if (const std::string problem = install_student_filter(); !problem.empty())
        throw std::runtime_error("the grader could not seal the test's thread: " + problem);
    }
    (*thread.test)();
  } catch (...) {
    thread.error = std::current_exception();
  }
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, nullptr);
  const char done = 'd';
  while (write(thread.wake_fd, &done, 1) < 0 && errno == EINTR) {
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> take_over_process() {
  std::vector<std::string> problems;
  if (const std::size_t threads = entries("/proc/self/task").size(); threads > 1) {
    problems.push_back("a thread started (" + std::to_string(threads - 1) + " of them)");
  }
  const std::string filters = first_line_of("/proc/self/status", "Seccomp_filters:");
  const std::string parents =
      first_line_of("/proc/" + std::to_string(getppid()) + "/status", "Seccomp_filters:");
  if (!parents.empty() && std::atoi(filters.c_str()) > std::atoi(parents.c_str()))
    problems.push_back("a seccomp filter installed");
  {
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) {
      // "start-end perms offset dev inode path": perms "rw-s" is a shared mapping.
      const std::size_t perms = line.find(' ');
      if (perms != std::string::npos && perms + 4 < line.size() && line[perms + 4] == 's')
        problems.push_back("memory shared with other processes mapped (" +
                           line.substr(line.find_last_of(' ') + 1) + ")");
    }
  }
  close_stray_descriptors(problems);  // after every file this function opened is closed
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, nullptr);
  return problems;
}

void run_on_student_thread(const std::function<void()>& test, bool sealed) {
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("cannot start the test's thread: pipe: ") +
                             std::strerror(errno));
  StudentThread thread{&test, sealed, wake[1], nullptr};
  wake_main = wake[1];
  pthread_t id;
  if (const int error = pthread_create(&id, nullptr, student_thread_main, &thread); error != 0) {
    wake_main = -1;
    close(wake[0]);
    close(wake[1]);
    throw std::runtime_error(std::string("cannot start the test's thread: ") +
                             std::strerror(error));
  }
  for (;;) {
    char request = 0;
    const ssize_t got = read(wake[0], &request, 1);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0 || request == 'd') break;
    if (request == 'm' && marker_written == 0) {  // any other byte: the submission's, ignored
      append_to_marker_file(pending_marker);
      marker_written = 1;
    }
  }
  pthread_join(id, nullptr);
  wake_main = -1;
  close(wake[0]);
  close(wake[1]);
  if (thread.error) std::rethrow_exception(thread.error);
}

std::size_t running_threads() { return entries("/proc/self/task").size(); }

ProcessState ProcessState::now() {
  ProcessState state;
  state.threads = running_threads();
  sched_getaffinity(0, sizeof state.affinity, &state.affinity);
  sched_param param{};
  state.policy = sched_getscheduler(0);
  sched_getparam(0, &param);
  state.priority = param.sched_priority;
  errno = 0;
  state.nice = getpriority(PRIO_PROCESS, 0);
  for (int resource = 0; resource < RLIM_NLIMITS; ++resource)
    getrlimit(static_cast<__rlimit_resource>(resource), &state.limits[resource]);
  return state;
}

std::string ProcessState::changes_since(const ProcessState& before) const {
  std::vector<std::string> changes;
  if (threads > before.threads)
    changes.push_back(std::to_string(threads - before.threads) + " thread(s) still running");
  if (!CPU_EQUAL(&affinity, &before.affinity)) changes.push_back("the CPU affinity");
  if (policy != before.policy || priority != before.priority)
    changes.push_back("the scheduling policy");
  if (nice != before.nice) changes.push_back("the priority (nice)");
  for (int resource = 0; resource < RLIM_NLIMITS; ++resource) {
    if (limits[resource].rlim_cur != before.limits[resource].rlim_cur ||
        limits[resource].rlim_max != before.limits[resource].rlim_max) {
      changes.push_back("a resource limit");
      break;
    }
  }
  std::string text;
  for (const std::string& change : changes) text += (text.empty() ? "" : ", ") + change;
  return text;
}

void set_marker_file(const std::string& path) {
  std::snprintf(marker_path, sizeof marker_path, "%s", path.c_str());
}

void write_marker(const char* line) {
  const int fd = wake_main;
  if (!on_student_thread || fd < 0) return append_to_marker_file(line);
  std::snprintf(pending_marker, sizeof pending_marker, "%s", line);
  marker_written = 0;
  const char request = 'm';
  if (write(fd, &request, 1) != 1) return;
  // The process dies right after this: wait (a little) for the main thread to have written.
  for (const double until = now_seconds() + 2; marker_written == 0 && now_seconds() < until;) {
    sched_yield();
  }
}

}  // namespace dtk::grade
