// Trees a submission may build, measured and removed through directory descriptors: deeper
// than PATH_MAX and than the descriptors a process may hold, names with newlines or of 255
// bytes, directories nobody may enter, links out of the tree and FIFOs.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "sandbox/file_tree.hpp"

using namespace dtk::grade;

namespace {

// A directory of its own in /dev/shm (a tmpfs: thousands of directories are made there in
// milliseconds), removed with `rm -rf` (which walks deep trees by descriptors too) at the end
// of the test case.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    path = "/dev/shm/dtk-file-tree.XXXXXX";
    REQUIRE(mkdtemp(path.data()) != nullptr);
  }
  ~ScratchDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

// Builds in `top` a chain of `levels` directories named `name` (by descriptors: the path is
// soon too long for the kernel), with a file of `bottom_bytes` bytes, a link to `outside` and a
// FIFO at the bottom, and a directory halfway down that nobody may enter.
void build_chain(const std::string& top, const std::string& name, int levels,
                 std::size_t bottom_bytes, const std::string& outside) {
  int fd = open(top.c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(fd >= 0);
  int halfway_parent = -1;
  for (int level = 0; level < levels; ++level) {
    REQUIRE(mkdirat(fd, name.c_str(), 0700) == 0);
    const int next = openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY);
    REQUIRE(next >= 0);
    if (level == levels / 2) {
      halfway_parent = fd;
    } else {
      close(fd);
    }
    fd = next;
  }
  const int file = openat(fd, "bottom", O_WRONLY | O_CREAT, 0600);
  REQUIRE(file >= 0);
  const std::string bytes(bottom_bytes, 'x');
  REQUIRE(write(file, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  fsync(file);
  close(file);
  REQUIRE(symlinkat(outside.c_str(), fd, "outside") == 0);
  REQUIRE(mkfifoat(fd, "fifo", 0600) == 0);
  close(fd);
  REQUIRE(fchmodat(halfway_parent, name.c_str(), 0, 0) == 0);
  close(halfway_parent);
}

bool exists(const std::string& path) {
  struct stat info {};
  return lstat(path.c_str(), &info) == 0;
}

// Runs `body` with at most 32 descriptors open: far fewer than the chains have levels.
template <class Body>
void with_few_descriptors(Body body) {
  rlimit saved{};
  getrlimit(RLIMIT_NOFILE, &saved);
  rlimit few = saved;
  few.rlim_cur = 32;
  setrlimit(RLIMIT_NOFILE, &few);
  body();
  setrlimit(RLIMIT_NOFILE, &saved);
}

}  // namespace

TEST_CASE("remove_below removes chains far deeper than PATH_MAX, and nothing they link to",
          "[file_tree]") {
  ScratchDir scratch;
  const std::string top = scratch.path + "/top", outside = scratch.path + "/outside";
  REQUIRE(mkdir(top.c_str(), 0700) == 0);
  REQUIRE(mkdir(outside.c_str(), 0700) == 0);
  REQUIRE(close(open((outside + "/keep").c_str(), O_WRONLY | O_CREAT, 0600)) == 0);
  build_chain(top, "d", 3000, 10, outside);
  build_chain(top, "line\nbreak", 400, 10, outside);
  build_chain(top, std::string(255, 'x'), 20, 10, outside);

  RemovalProblems problems;
  with_few_descriptors([&] { remove_below(top, problems); });
  CHECK(problems.lines.empty());
  CHECK(problems.more == 0);
  CHECK(exists(top));  // only what is below it
  CHECK_FALSE(exists(top + "/d"));
  CHECK_FALSE(exists(top + "/line\nbreak"));
  CHECK(exists(outside + "/keep"));
}

TEST_CASE("disk_bytes counts a file at the bottom of a chain deeper than PATH_MAX", "[file_tree]") {
  ScratchDir scratch;
  build_chain(scratch.path, "d", 2100, 1 << 16, "/");  // 4.2 KB of path
  std::size_t bytes = 0;
  with_few_descriptors([&] { bytes = disk_bytes(scratch.path); });
  CHECK(bytes >= (1u << 16));
  CHECK(disk_bytes(scratch.path + "/missing") == 0);
}

TEST_CASE("remove_owned_below removes a user's files at any depth and only those", "[file_tree]") {
  if (geteuid() != 0) {
    WARN("not root: cannot give files to another user, so this case is not run");
    return;
  }
  const uid_t uid = 65534;  // nobody
  const gid_t gid = 65534;
  ScratchDir scratch;
  const std::string& top = scratch.path;
  const std::string open_dir = top + "/a/b";  // someone else's, two levels down
  REQUIRE(mkdir((top + "/a").c_str(), 0755) == 0);
  REQUIRE(mkdir(open_dir.c_str(), 01777) == 0);
  REQUIRE(chmod(open_dir.c_str(), 01777) == 0);
  REQUIRE(close(open((top + "/a/someone-elses").c_str(), O_WRONLY | O_CREAT, 0644)) == 0);
  const std::string users = open_dir + "/users-tree";
  REQUIRE(mkdir(users.c_str(), 0700) == 0);
  build_chain(users, "d", 1100, 4096, top + "/a/someone-elses");
  // Give the tree to the user (chown -R walks it by descriptors, as the grader's sweep must).
  REQUIRE(std::system(("chown -R 65534:65534 '" + users + "'").c_str()) == 0);
  REQUIRE(lchown(users.c_str(), uid, gid) == 0);
  const std::string users_file = top + "/users-file";
  REQUIRE(close(open(users_file.c_str(), O_WRONLY | O_CREAT, 0600)) == 0);
  REQUIRE(chown(users_file.c_str(), uid, gid) == 0);

  CHECK(disk_bytes_of(top, uid, gid) >= 4096);  // the file at the bottom of the chain
  RemovalProblems problems;
  with_few_descriptors([&] { remove_owned_below(top, uid, gid, problems); });
  CHECK(problems.lines.empty());
  CHECK_FALSE(exists(users));
  CHECK_FALSE(exists(users_file));
  CHECK(exists(open_dir));
  CHECK(exists(top + "/a/someone-elses"));
  CHECK(disk_bytes_of(top, uid, gid) == 0);
}

TEST_CASE("what cannot be removed is reported, its name escaped", "[file_tree]") {
  if (geteuid() != 0) {
    WARN("not root: cannot run the removal as another user, so this case is not run");
    return;
  }
  ScratchDir scratch;
  // In a sticky directory anyone may write, nobody cannot remove root's file.
  const std::string dir = scratch.path + "/sticky";
  REQUIRE(mkdir(dir.c_str(), 01777) == 0);
  REQUIRE(chmod(dir.c_str(), 01777) == 0);
  REQUIRE(chmod(scratch.path.c_str(), 0755) == 0);
  REQUIRE(close(open((dir + "/evil\nname").c_str(), O_WRONLY | O_CREAT, 0644)) == 0);
  int report[2];
  REQUIRE(pipe(report) == 0);
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    RemovalProblems problems;
    remove_below(dir, problems);
    const std::string text = problems.lines.empty() ? "" : problems.lines.front();
    _exit(write(report[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? 0 : 1);
  }
  close(report[1]);
  char buffer[1024];
  const ssize_t n = read(report[0], buffer, sizeof buffer);
  close(report[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const std::string line(buffer, n > 0 ? static_cast<std::size_t>(n) : 0);
  CHECK(line == dir + "/evil\\nname: Operation not permitted");
  CHECK(exists(dir + "/evil\nname"));
}
