// Running commands: with a time limit, captured and capped output, and nothing left behind.
//
// A sandboxed command (everything that touches the submission: compiling, linking, reading its
// objects, running its tests) runs, when dtk-grade is root, as the unprivileged user
// dtk-sandbox (created on first use; "nobody" if that fails), in its own session, with resource
// limits, no way to regain privileges, and, where the kernel allows, a private mount namespace
// that hides the kit's source and build trees and gives it an empty /dev/shm. When dtk-grade is
// not root, commands run as the caller, in their own session, with the same limits.
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

struct Limits {
  int address_space_mb = 1024;
  int file_size_mb = 64;
  int processes = 256;
  std::size_t output_bytes = 64 * 1024;  // kept of stdout + stderr (head and tail)
};

struct Command {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::string cwd;
  std::vector<std::string> env;  // added to a minimal environment
  double timeout_seconds = 10;
  bool sandboxed = true;
  int address_space_mb = 0;      // 0: the sandbox's limit (the compiler needs more than a test)
  std::size_t output_bytes = 0;  // 0: the sandbox's cap
  // Polled while it runs: once true, the command has done its work and gets a moment to exit
  // before it is stopped (an MPI job whose ranks forked children never exits by itself).
  std::function<bool()> done;
  std::vector<std::string> hidden_paths;  // mounted over with an empty directory, if possible
};

struct Outcome {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal killed it
  bool timed_out = false;
  bool stopped_when_done = false;
  std::string output;           // stdout and stderr, capped
  std::size_t output_size = 0;  // bytes it printed in all
  double seconds = 0;

  bool ok() const { return !timed_out && exit_code == 0; }
  std::string describe() const;  // "exit status 1", "killed by signal 11 (Segmentation fault)"
};

class Sandbox {
 public:
  // Finds or creates the sandbox user when root; `home` must exist (made writable for it here).
  // Gradings on one machine share that user, and the sweep kills all its processes: so while a
  // Sandbox exists, other dtk-grade processes wait for it (a lock in /run).
  Sandbox(const Limits& limits, const std::string& home);
  ~Sandbox();  // kills what is left of the sandbox user's processes

  const SandboxUser& user() const { return user_; }
  bool hides_paths() const { return mount_namespaces_; }
  // Gives a file or directory to the sandbox user (when there is one).
  void hand_over(const std::string& path) const;

  Outcome run(const Command& command) const;

  // Ends what the commands left running: every process that has become dtk-grade's child, and
  // (dedicated user only) every process of the sandbox user, whose files in the world-writable
  // temporary directories it also removes. Only between commands.
  void sweep() const;

 private:
  std::vector<std::string> environment(const Command& command) const;
  // In the forked child: sets up isolation and limits, then executes the command.
  [[noreturn]] void become_command(const Command& command, char* const argv[], char* const envp[],
                                   int output_fd) const;

  Limits limits_;
  SandboxUser user_;
  bool mount_namespaces_ = false;
  int lock_fd_ = -1;
};

}  // namespace dtk::grade
