#include "student_thread.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
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
#include <new>
#include <set>
#include <stdexcept>

#include <dtk/not_implemented.hpp>

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

// This process's open descriptors, as "<fd> -> <target>".
std::vector<std::string> open_descriptor_list() {
  std::vector<std::string> found;
  const std::string self = "/proc/self/fd";
  for (const std::string& name : entries(self.c_str())) {
    char target[512] = {};
    if (readlink((self + "/" + name).c_str(), target, sizeof target - 1) < 0) continue;
    found.push_back(name + " -> " + target);
  }
  return found;
}

// The memory this process shares with others: the paths of its shared mappings.
std::vector<std::string> shared_mapping_paths() {
  std::vector<std::string> found;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    // "start-end perms offset dev inode path": perms "rw-s" is a shared mapping.
    const std::size_t perms = line.find(' ');
    if (perms != std::string::npos && perms + 4 < line.size() && line[perms + 4] == 's')
      found.push_back(line.substr(line.find_last_of(' ') + 1));
  }
  return found;
}

// The executable pages of the student library, made executable only while student code runs.
struct Segment {
  void* start;
  std::size_t length;
};
std::vector<Segment> student_text;

void set_student_code_executable(bool executable) {
  for (const Segment& segment : student_text) {
    if (mprotect(segment.start, segment.length, PROT_READ | (executable ? PROT_EXEC : 0)) != 0) {
      std::fprintf(stderr, "dtk-grade-runner: cannot protect the student library: %s\n",
                   std::strerror(errno));
      std::_Exit(3);
    }
  }
}

// The executable segments of the loaded object whose path is `path`.
std::vector<Segment> executable_segments(const std::string& path) {
  struct Search {
    std::string path;
    std::vector<Segment> found;
  } search{path, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto& search = *static_cast<Search*>(data);
        if (info->dlpi_name == nullptr || search.path != info->dlpi_name) return 0;
        const long page = sysconf(_SC_PAGESIZE);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& header = info->dlpi_phdr[i];
          if (header.p_type != PT_LOAD || !(header.p_flags & PF_X)) continue;
          const std::uintptr_t begin = (info->dlpi_addr + header.p_vaddr) & ~(page - 1);
          const std::uintptr_t end = info->dlpi_addr + header.p_vaddr + header.p_memsz;
          search.found.push_back({reinterpret_cast<void*>(begin), end - begin});
        }
        return 1;
      },
      &search);
  return search.found;
}

// What student code threw, as an exception of the runner's: the same standard kind and
// message. Called in the student thread's catch handler, so that the original's what() and
// destructor run there.
std::exception_ptr as_runner_exception() {
  try {
    throw;
  } catch (const NotImplemented& error) {
    return std::make_exception_ptr(std::logic_error(error.what()));
  } catch (const std::invalid_argument& error) {
    return std::make_exception_ptr(std::invalid_argument(error.what()));
  } catch (const std::domain_error& error) {
    return std::make_exception_ptr(std::domain_error(error.what()));
  } catch (const std::length_error& error) {
    return std::make_exception_ptr(std::length_error(error.what()));
  } catch (const std::out_of_range& error) {
    return std::make_exception_ptr(std::out_of_range(error.what()));
  } catch (const std::logic_error& error) {
    return std::make_exception_ptr(std::logic_error(error.what()));
  } catch (const std::range_error& error) {
    return std::make_exception_ptr(std::range_error(error.what()));
  } catch (const std::overflow_error& error) {
    return std::make_exception_ptr(std::overflow_error(error.what()));
  } catch (const std::underflow_error& error) {
    return std::make_exception_ptr(std::underflow_error(error.what()));
  } catch (const std::runtime_error& error) {
    return std::make_exception_ptr(std::runtime_error(error.what()));
  } catch (const std::bad_alloc&) {
    return std::make_exception_ptr(std::bad_alloc());
  } catch (const std::exception& error) {
    return std::make_exception_ptr(StudentException(error.what()));
  } catch (...) {
    return std::make_exception_ptr(
        StudentException("threw an exception that is not a std::exception"));
  }
}

struct StudentThread {
  const std::function<void()>* code;
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
    if (const std::string problem = install_student_filter(); !problem.empty())
      throw std::runtime_error("the grader could not seal the test's thread: " + problem);
    (*thread.code)();
  } catch (...) {
    thread.error = as_runner_exception();
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

void block_signals() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, nullptr);
}

std::string load_student_library(const std::string& path) {
  std::string problem;
  try {
    run_student_code([&] {
      if (dlopen(path.c_str(), RTLD_LAZY | RTLD_GLOBAL) == nullptr) {
        const char* error = dlerror();
        problem = error != nullptr ? error : "dlopen failed";
      }
    });
  } catch (const std::exception& error) {
    problem = std::string("its static initializers threw: ") + error.what();
  }
  if (!problem.empty()) return problem;
  student_text = executable_segments(path);
  if (student_text.empty()) return "no executable segment of " + path + " was found";
  set_student_code_executable(false);
  return "";
}

LoadState LoadState::now() {
  LoadState state;
  state.threads = running_threads();
  state.seccomp_filters = std::atoi(first_line_of("/proc/self/status", "Seccomp_filters:").c_str());
  state.shared_mappings = shared_mapping_paths();
  state.descriptors = open_descriptor_list();
  return state;
}

std::vector<std::string> left_by_loading(const LoadState& before) {
  std::vector<std::string> problems;
  const LoadState after = LoadState::now();
  if (const std::size_t threads = running_threads_after(before.threads); threads > before.threads)
    problems.push_back("a thread started (" + std::to_string(threads - before.threads) +
                       " of them)");
  if (after.seccomp_filters > before.seccomp_filters)
    problems.push_back("a seccomp filter installed");
  const std::set<std::string> mapped(before.shared_mappings.begin(), before.shared_mappings.end());
  for (const std::string& mapping : after.shared_mappings) {
    if (!mapped.count(mapping))
      problems.push_back("memory shared with other processes mapped (" + mapping + ")");
  }
  const std::set<std::string> open(before.descriptors.begin(), before.descriptors.end());
  for (const std::string& descriptor : after.descriptors) {
    if (open.count(descriptor)) continue;
    const int fd = std::atoi(descriptor.c_str());
    struct stat info {};
    if (fstat(fd, &info) != 0) continue;  // open_descriptor_list's own listing, now closed
    problems.push_back("a file or socket opened (" + descriptor.substr(descriptor.find('>') + 2) +
                       ")");
    close(fd);
  }
  return problems;
}

void run_student_code(const std::function<void()>& code) {
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("cannot start the test's thread: pipe: ") +
                             std::strerror(errno));
  StudentThread thread{&code, wake[1], nullptr};
  wake_main = wake[1];
  set_student_code_executable(true);
  pthread_t id;
  if (const int error = pthread_create(&id, nullptr, student_thread_main, &thread); error != 0) {
    set_student_code_executable(false);
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
  set_student_code_executable(false);
  wake_main = -1;
  close(wake[0]);
  close(wake[1]);
  if (thread.error) std::rethrow_exception(thread.error);
}

std::size_t running_threads() {
  // A thread that has just ended (a joined one, say) stays listed until the kernel has reaped
  // it, in state X (dead) or Z: it is not running.
  std::size_t running = 0;
  for (const std::string& task : entries("/proc/self/task")) {
    std::ifstream stat("/proc/self/task/" + task + "/stat");
    std::string line;
    std::getline(stat, line);
    const std::size_t name_end = line.rfind(") ");
    const char state = name_end == std::string::npos ? '?' : line[name_end + 2];
    running += state != 'X' && state != 'Z';
  }
  return running;
}

// A thread the student joined is reaped by the kernel within microseconds; one still running
// after a quarter of a second was left running.
constexpr int kReapWaitMs = 250;

std::size_t running_threads_after(std::size_t before) {
  std::size_t now = running_threads();
  for (int waited = 0; now > before && waited < kReapWaitMs; ++waited) {
    usleep(1000);
    now = running_threads();
  }
  return now;
}

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
  if (threads > before.threads) {
    if (const std::size_t still = running_threads_after(before.threads); still > before.threads)
      changes.push_back(std::to_string(still - before.threads) + " thread(s) still running");
  }
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
