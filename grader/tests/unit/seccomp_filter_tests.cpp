// The runner's seal (runner/seccomp_filter.cpp): on a thread of its own, what student code
// needs works, and what could reach another process without MPI is refused.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "seccomp_filter.hpp"

using namespace dtk::grade;

namespace {

// Runs `body` on a new thread sealed by the filter (the test's own thread stays unsealed).
template <class Body>
void sealed(Body&& body) {
  std::thread([&] {
    REQUIRE(install_student_filter().empty());
    body();
  }).join();
}

bool refused(int result) { return result == -1 && errno == EPERM; }

}  // namespace

TEST_CASE("a sealed thread reads files, lists directories and starts threads", "[seal]") {
  sealed([] {
    DIR* dir = opendir("/proc/self/task");
    CHECK(dir != nullptr);
    if (dir != nullptr) closedir(dir);
    std::ifstream status("/proc/self/status");
    CHECK(status.good());
    bool ran = false;
    std::thread([&] { ran = true; }).join();
    CHECK(ran);
    cpu_set_t all;
    CPU_ZERO(&all);
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
    CHECK(sched_setaffinity(0, sizeof all, &all) == 0);  // its own thread: allowed
  });
}

TEST_CASE("a sealed thread can neither create nor write files, nor reach other processes",
          "[seal]") {
  const std::string path = "seccomp_filter_tests-" + std::to_string(getpid());
  std::ofstream(path) << "written before the seal\n";
  sealed([&] {
    CHECK(refused(open(path.c_str(), O_WRONLY | O_APPEND)));
    CHECK(refused(open((path + ".new").c_str(), O_WRONLY | O_CREAT, 0600)));
    CHECK(refused(mkdir((path + ".dir").c_str(), 0700)));
    CHECK(refused(rename(path.c_str(), (path + ".moved").c_str())));
    CHECK(refused(unlink(path.c_str())));
    const int fd = open(path.c_str(), O_RDONLY);
    CHECK(fd >= 0);
    CHECK(refused(flock(fd, LOCK_EX | LOCK_NB)));  // a lock is a bit others can test
    close(fd);
    CHECK(refused(socket(AF_UNIX, SOCK_STREAM, 0)));
    CHECK(refused(kill(getppid(), 0)));  // signals to other processes
    CHECK(kill(getpid(), 0) == 0);       // its own process: allowed
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    CHECK(refused(sched_setaffinity(getpid(), sizeof one, &one)));  // the main thread's
  });
  std::ifstream kept(path);
  std::string line;
  CHECK((std::getline(kept, line) && line == "written before the seal"));
  std::remove(path.c_str());
}
