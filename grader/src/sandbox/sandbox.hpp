// Running commands: with a time limit, captured and capped output, and nothing left behind.
//
// A sandboxed command (everything that touches the submission: compiling, linking, reading its
// objects, running its tests) runs, when dtk-grade is root, as the sandbox user of its job slot
// (sandbox_user.hpp), in its own session, with resource limits, no way to regain privileges, and,
// where the kernel allows, a private mount namespace that hides the kit's source and build trees,
// gives it an empty /dev/shm and a /proc that lists only the sandbox user's own processes, and a
// private IPC namespace whose System V IPC objects and POSIX message queues go with its last
// process (and are bounded while it runs). When
// dtk-grade is not root (--no-sandbox), commands run as the caller, in their own session, with the
// same limits.
//
// Root never acts on a path the sandbox user could have created or replaced: the directories
// it may write are made up front by the grader, in directories of the grader's own, and what
// the sandbox user left behind is removed by a process running as that user.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "limits.hpp"
#include "sandbox/file_tree.hpp"
#include "sandbox/sandbox_user.hpp"

namespace dtk::grade {

struct Command {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::string cwd;
  std::vector<std::string> env;  // added to a minimal environment
  double timeout_seconds = 10;   // every command sets its own; this one is a backstop
  bool sandboxed = true;
  int address_space_mb = 0;      // 0: the sandbox's limit (the compiler needs more than a test)
  std::size_t output_bytes = 0;  // 0: the sandbox's cap
  // Polled while it runs: once true, the command has done its work and gets a moment to exit
  // before it is stopped (an MPI job whose ranks forked children never exits by itself).
  std::function<bool()> done;
  // Polled with `done`, when set: a value that changes while the command makes progress. It is
  // ended once idle_seconds pass without a change (timeout_seconds still bounds it in all).
  std::function<std::uintmax_t()> progress;
  double idle_seconds = 0;
  // Mounted over, where possible, with an empty directory the command cannot open.
  std::vector<std::string> hidden_paths;
};

struct Outcome {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal killed it
  bool timed_out = false;
  bool stopped_when_done = false;
  bool stopped_by_signal = false;  // SIGSTOP or SIGTSTP froze it: counted as hung
  std::string over_limit;          // "memory" or "disk": the sandbox's total was exceeded
  std::string output;              // stdout and stderr, capped
  std::size_t output_size = 0;     // bytes it printed in all
  double seconds = 0;

  bool ok() const { return !timed_out && over_limit.empty() && exit_code == 0; }
  std::string describe() const;  // "exit status 1", "killed by signal 11 (Segmentation fault)"
};

class Sandbox {
 public:
  // Finds or creates the sandbox user of job `slot` when root (`use_sandbox_user`) and makes
  // `home`, which must not exist yet, in a directory of the grader's. Gradings in one slot on
  // one machine share that user, and the sweep kills all its processes: so while a Sandbox
  // exists, other dtk-grade processes of the same slot wait for it (a lock in /run). A batch
  // grading N hand-ins at once gives each its own slot, 0 to N - 1. `scratch` is the grader's
  // directory that holds `home` and every directory the commands work in: it stays visible to
  // them under their private temporary directories. What the sweep and the removals could not
  // remove is said in `log`, with a WARNING.
  Sandbox(const SandboxLimits& limits, const std::string& scratch, const std::string& home,
          bool use_sandbox_user, int slot, std::ostream& log);
  ~Sandbox();  // kills what is left of the sandbox user's processes
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  const SandboxUser& user() const { return user_; }
  bool hides_paths() const { return mount_namespaces_; }
  // Makes a new directory (0700) that the sandbox user owns and may write. Its parent must be
  // the grader's own, so that nothing there can be a link planted by the submission; throws
  // std::runtime_error if the path exists.
  void make_directory(const std::string& path) const;
  // Counts the disk space used under `dir` (the sandbox's writable directories) against the
  // disk limit.
  void watch_disk(const std::string& dir);
  // Those of `paths` a sandboxed command (with `hidden` hidden) can read.
  std::vector<std::string> readable(const std::vector<std::string>& paths,
                                    const std::vector<std::string>& hidden) const;

  Outcome run(const Command& command) const;

  // Removes, as the sandbox user, everything it may delete under `dir` (its own directories in
  // the scratch), at any depth: whatever links the submission planted there, it cannot hurt
  // anything else.
  void remove_as_sandbox(const std::string& dir) const;

  // Ends what the commands left running: every process that has become dtk-grade's child, and
  // (dedicated user only) every process of the sandbox user, whose files where anyone may write
  // (the temporary directories, at any depth) and System V IPC objects and POSIX message queues
  // it also removes, saying which. Only between commands.
  void sweep() const;

 private:
  std::vector<std::string> environment(const Command& command) const;
  // In the forked child: sets up isolation and limits, then executes the command.
  [[noreturn]] void become_command(const Command& command, char* const argv[], char* const envp[],
                                   int output_fd) const;
  // Runs `remove` in a child process that has become the sandbox user; says in the log what
  // it could not remove of the files it left `where`.
  void remove_as_user(const std::string& where,
                      const std::function<void(RemovalProblems&)>& remove) const;
  // The monitor: five times a second, the sandbox's total memory and disk use against the limits.
  void monitor();
  bool is_sandboxed(pid_t pid) const;
  void end_largest_writer();  // over the disk limit
  // Removes, as the sandbox user, its System V IPC objects and POSIX message queues (/dev/mqueue,
  // when mounted) of dtk-grade's IPC namespace, and says in the log what it removed and what it
  // could not.
  void remove_ipc(const char* when) const;
  std::vector<pid_t> running_sessions() const;
  std::set<std::string> condemned() const;

  SandboxLimits limits_;
  std::string scratch_;
  std::string temporary_mount_options_;  // made before fork: the child only makes system calls
  SandboxUser user_;
  bool mount_namespaces_ = false;
  bool ipc_namespaces_ = false;
  bool posix_queues_mounted_ = false;  // /dev/mqueue is a mqueue file system
  SlotLock lock_;
  std::ostream& log_;  // written under mutex_

  mutable std::mutex mutex_;  // guards the members below
  // The sessions of the commands running now, with the directory each writes (its cwd).
  mutable std::map<pid_t, std::string> sessions_;
  mutable std::set<pid_t> over_memory_;      // sessions ended for the memory limit
  mutable std::set<pid_t> over_disk_;        // sessions ended for the disk limit
  mutable std::set<std::string> condemned_;  // their directories, until removed: not counted
  std::vector<std::string> watched_dirs_;
  mutable std::atomic<bool> ran_a_command_{false};  // what the sweep finds before is not ours
  std::atomic<bool> stopping_{false};
  std::thread monitor_;
};

}  // namespace dtk::grade
