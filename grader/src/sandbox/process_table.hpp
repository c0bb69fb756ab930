// The machine's processes, as /proc lists them: finding them by what they are (whose they are,
// whose children, which session), and killing them until none is left; and the System V IPC
// objects (/proc/sysvipc), which outlive the processes that made them.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>
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

// A System V IPC object of the IPC namespace dtk-grade is in, as /proc/sysvipc lists it.
struct IpcObject {
  enum class Kind { shared_memory, message_queue, semaphores };
  Kind kind = Kind::shared_memory;
  int id = -1;
  unsigned mode = 0;         // its permission bits (0666: anyone may read and write it)
  uid_t uid = 0;             // its owner
  uid_t creator = 0;         // who made it (cuid)
  std::size_t bytes = 0;     // shared memory: its size; a queue: the bytes it holds
  std::size_t resident = 0;  // shared memory: the bytes of its pages in memory (rss)
  std::size_t attached = 0;  // shared memory: how many processes have it mapped (nattch)

  std::string describe() const;  // "a shared-memory segment (id 32769, 16 MiB, mode 0666)"
};

// The objects listed in the text of /proc/sysvipc/shm, msg or sem (of kind `kind`), found by the
// names of their header's columns. Lines that do not parse are skipped.
std::vector<IpcObject> parse_sysvipc(IpcObject::Kind kind, const std::string& text);

// Every System V IPC object of this IPC namespace that `uid` owns or made.
std::vector<IpcObject> ipc_objects_of(uid_t uid);

// Removes `object` (IPC_RMID) if it is still one that `uid` owns or made; whether it is gone. The
// caller must be its owner or creator, or privileged (CAP_SYS_ADMIN).
bool remove_ipc_object(const IpcObject& object, uid_t uid);

}  // namespace dtk::grade
