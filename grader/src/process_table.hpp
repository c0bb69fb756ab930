// The machine's processes, as /proc lists them: finding them by what they are (whose they are,
// whose children, which session), and killing them until none is left.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace dtk::grade {

// Every process id in /proc for which `select` is true.
std::vector<pid_t> processes_where(const std::function<bool(pid_t)>& select);

struct ProcessState {
  char state = 0;  // 'Z' for a zombie, 'T' or 't' when stopped
  pid_t parent = -1;
  pid_t session = -1;
};

// Fields 3, 4 and 6 of /proc/PID/stat; the defaults once the process is gone.
ProcessState state_of(pid_t pid);

// The user owning a process (0 once it is gone).
uid_t owner_of(pid_t pid);

// Resident memory of a process, in bytes (0 once it is gone).
std::size_t resident_bytes(pid_t pid);

// Kills the processes `select` picks, with `kill_them`, until none is left (they may fork
// while we look), and reaps the zombies among them: dtk-grade is a child subreaper, so orphans
// of its commands become its children instead of init's.
void kill_all(const std::function<bool(pid_t)>& select,
              const std::function<void(const std::vector<pid_t>&)>& kill_them);

// SIGKILL to each of `pids`.
void kill_each(const std::vector<pid_t>& pids);

// Kills every process of a session, even those that left its process group.
void kill_session(pid_t session);

}  // namespace dtk::grade
