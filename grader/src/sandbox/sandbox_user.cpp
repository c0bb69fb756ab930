#include "sandbox/sandbox_user.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

namespace dtk::grade {

namespace {

std::string sandbox_user_name(int slot) {
  return slot == 0 ? "dtk-sandbox" : "dtk-sandbox" + std::to_string(slot);
}

std::string lock_path(int slot) {
  return slot == 0 ? "/run/dtk-grade.lock" : "/run/dtk-grade-" + std::to_string(slot) + ".lock";
}

}  // namespace

SandboxUser find_or_create_user(int slot) {
  SandboxUser user;
  if (geteuid() != 0) return user;
  const std::string name = sandbox_user_name(slot);
  if (getpwnam(name.c_str()) == nullptr) {
    in_child([&name] {
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      execlp("useradd", "useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
             "--shell", "/usr/sbin/nologin", "--user-group", name.c_str(), nullptr);
      return false;
    });
  }
  const passwd* entry = getpwnam(name.c_str());
  user.dedicated = entry != nullptr;
  if (entry == nullptr) entry = getpwnam("nobody");
  if (entry == nullptr) return user;
  user.enabled = true;
  user.uid = entry->pw_uid;
  user.gid = entry->pw_gid;
  user.name = entry->pw_name;
  return user;
}

bool become(const SandboxUser& user) {
  return !user.enabled ||
         (setgroups(0, nullptr) == 0 && setresgid(user.gid, user.gid, user.gid) == 0 &&
          setresuid(user.uid, user.uid, user.uid) == 0);
}

bool in_child(const std::function<bool()>& body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body() ? 0 : 1);
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

bool as_user(const SandboxUser& user, const std::function<bool()>& body) {
  return in_child([&] { return become(user) && body(); });
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::vector<int> slot_cpus(const std::vector<int>& allowed, int slot, int slots) {
  const int n = static_cast<int>(allowed.size());
  if (slots <= 1 || n == 0 || slot < 0) return allowed;
  if (slots > n) return {allowed[slot % n]};
  return {allowed.begin() + slot * n / slots, allowed.begin() + (slot + 1) * n / slots};
}

SlotLock::SlotLock(int slot) {
  fd_ = open(lock_path(slot).c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd_ >= 0 && flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    std::fprintf(stderr, "dtk-grade: waiting for another grading to finish...\n");
    flock(fd_, LOCK_EX);
  }
}

SlotLock::~SlotLock() {
  if (fd_ >= 0) close(fd_);
}

SlotLock::SlotLock(SlotLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

SlotLock& SlotLock::operator=(SlotLock&& other) noexcept {
  std::swap(fd_, other.fd_);
  return *this;
}

}  // namespace dtk::grade
