// The sandbox user: the unprivileged user that runs everything touching a submission when
// dtk-grade is root, and the lock that makes gradings take turns on it.
//
// Job slot 0 has dtk-sandbox (created on first use; "nobody" if that fails); slot k > 0 (a
// batch grading k + 1 hand-ins at once) has its own, dtk-sandbox<k>, and its own lock, so that
// one slot's sweep never touches another's processes; and, when slots grade side by side, its
// own share of the CPUs, so that a neighbour spinning on every core cannot starve it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace dtk::grade {

struct SandboxUser {
  bool enabled = false;    // we are root and drop privileges in the children
  bool dedicated = false;  // dtk-sandbox: every process of that uid is ours to kill
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
  std::string home;  // writable by that user: HOME and TMPDIR of its commands
};

// The sandbox user of job `slot`, created if missing; not enabled when we are not root.
SandboxUser find_or_create_user(int slot);

// Makes this process `user` for good (nothing to do when the user is not enabled); false if
// it could not.
bool become(const SandboxUser& user);

// Runs `body` in a child process; whether it returned true (the child exited with 0).
bool in_child(const std::function<bool()>& body);

// Runs `body` in a child process that has become `user`; whether it returned true.
bool as_user(const SandboxUser& user, const std::function<bool()>& body);

// The CPUs this process may run on (its affinity), in increasing order.
std::vector<int> allowed_cpus();

// The share of `allowed` (the CPUs the gradings may use, in order) of job slot `slot` when
// `slots` gradings run side by side: a contiguous block of about allowed.size() / slots CPUs,
// or, with more slots than CPUs, CPU slot % allowed.size() (shared with the slots that wrap onto
// it); all of them with one slot.
std::vector<int> slot_cpus(const std::vector<int>& allowed, int slot, int slots);

// Held while a grading uses the sandbox user of its slot: other dtk-grade processes of the
// same slot on this machine wait for it (a lock in /run).
class SlotLock {
 public:
  SlotLock() = default;  // holds nothing
  explicit SlotLock(int slot);
  ~SlotLock();
  SlotLock(SlotLock&& other) noexcept;
  SlotLock& operator=(SlotLock&& other) noexcept;

 private:
  int fd_ = -1;
};

}  // namespace dtk::grade
