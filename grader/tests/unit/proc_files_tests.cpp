// /proc files of processes that end while the grader reads them: "gone", never an exception
// (std::ifstream threw "basic_filebuf::underflow error reading the file: No such process").
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "sandbox/proc_files.hpp"

using namespace dtk::grade;

namespace {

// A child that waits to be killed.
pid_t sleeping_child() {
  const pid_t pid = fork();
  if (pid == 0) {
    pause();
    _exit(0);
  }
  REQUIRE(pid > 0);
  return pid;
}

void end(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace

TEST_CASE("a live process's /proc file is read whole", "[proc]") {
  const auto text = read_proc_file("/proc/" + std::to_string(getpid()) + "/stat");
  REQUIRE(text);
  CHECK(text->rfind(std::to_string(getpid()) + " (", 0) == 0);
}

TEST_CASE("a process gone before its file is opened: nothing", "[proc]") {
  const pid_t pid = sleeping_child();
  end(pid);
  CHECK_FALSE(read_proc_file("/proc/" + std::to_string(pid) + "/stat"));
}

TEST_CASE("a process gone between opening its file and reading it: nothing, no exception",
          "[proc]") {
  const pid_t pid = sleeping_child();
  const int fd = open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  end(pid);  // reaped: reading now fails with ESRCH
  std::optional<std::string> text;
  CHECK_NOTHROW(text = read_proc_fd(fd));
  CHECK_FALSE(text);
  close(fd);
}
