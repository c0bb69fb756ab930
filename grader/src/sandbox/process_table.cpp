#include "sandbox/process_table.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "sandbox/proc_files.hpp"

namespace dtk::grade {

std::vector<pid_t> processes_where(const std::function<bool(pid_t)>& select) {
  std::vector<pid_t> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (const dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (*end == '\0' && pid > 0 && select(static_cast<pid_t>(pid))) pids.push_back(pid);
  }
  closedir(proc);
  return pids;
}

ProcessState state_of(pid_t pid) {
  const std::string text = read_proc_file("/proc/" + std::to_string(pid) + "/stat").value_or("");
  const std::size_t paren = text.rfind(')');  // the command name may hold spaces and ')'
  ProcessState state;
  long ppid = 0, pgrp = 0, session = -1;
  if (paren != std::string::npos && std::sscanf(text.c_str() + paren + 1, " %c %ld %ld %ld",
                                                &state.state, &ppid, &pgrp, &session) == 4) {
    state.parent = static_cast<pid_t>(ppid);
    state.session = static_cast<pid_t>(session);
  }
  return state;
}

uid_t owner_of(pid_t pid) {
  struct stat info {};
  return stat(("/proc/" + std::to_string(pid)).c_str(), &info) == 0 ? info.st_uid : 0;
}

std::size_t resident_bytes(pid_t pid) {
  std::istringstream statm(read_proc_file("/proc/" + std::to_string(pid) + "/statm").value_or(""));
  std::size_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// Between rounds of SIGKILLs: long enough for the killed to be reaped, short enough that a
// fork bomb's new children are caught in the next round.
constexpr std::chrono::milliseconds kKillRoundPause{10};

void kill_all(const std::function<bool(pid_t)>& select,
              const std::function<void(const std::vector<pid_t>&)>& kill_them) {
  for (int round = 0; round < 100; ++round) {
    std::vector<pid_t> alive;
    for (pid_t pid : processes_where(select)) {
      if (state_of(pid).state == 'Z') {
        waitpid(pid, nullptr, WNOHANG);
      } else {
        alive.push_back(pid);
      }
    }
    if (alive.empty()) return;
    kill_them(alive);
    std::this_thread::sleep_for(kKillRoundPause);
  }
}

void kill_each(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) kill(pid, SIGKILL);
}

void kill_session(pid_t session) {
  kill(-session, SIGKILL);
  kill_all([&](pid_t pid) { return state_of(pid).session == session; }, kill_each);
}

namespace {

// Where /proc lists each kind of object, and the names of its id's and size's columns.
struct SysvipcListing {
  IpcObject::Kind kind;
  const char* file;
  const char* id_column;
  const char* bytes_column;  // "" for semaphores
};

constexpr SysvipcListing sysvipc_listings[] = {
    {IpcObject::Kind::shared_memory, "/proc/sysvipc/shm", "shmid", "size"},
    {IpcObject::Kind::message_queue, "/proc/sysvipc/msg", "msqid", "cbytes"},
    {IpcObject::Kind::semaphores, "/proc/sysvipc/sem", "semid", ""}};

const SysvipcListing& listing_of(IpcObject::Kind kind) {
  for (const SysvipcListing& listing : sysvipc_listings) {
    if (listing.kind == kind) return listing;
  }
  return sysvipc_listings[0];
}

}  // namespace

std::string IpcObject::describe() const {
  char mode_text[8];
  std::snprintf(mode_text, sizeof mode_text, "%04o", mode & 07777);
  std::string text;
  switch (kind) {
    case Kind::shared_memory:
      text = "a shared-memory segment (id " + std::to_string(id) + ", " +
             (bytes >= (1 << 20) ? std::to_string(bytes >> 20) + " MiB"
                                 : std::to_string(bytes) + " bytes");
      break;
    case Kind::message_queue:
      text = "a message queue (id " + std::to_string(id) + ", holding " + std::to_string(bytes) +
             " bytes";
      break;
    case Kind::semaphores:
      text = "a semaphore set (id " + std::to_string(id);
      break;
  }
  return text + ", mode " + mode_text + ")";
}

std::vector<IpcObject> parse_sysvipc(IpcObject::Kind kind, const std::string& text) {
  std::vector<IpcObject> objects;
  std::istringstream lines(text);
  std::string header;
  if (!std::getline(lines, header)) return objects;
  // Column name -> index: shm's "key shmid perms size cpid lpid nattch uid gid cuid ...", msg's
  // "key msqid perms cbytes qnum ...", sem's "key semid perms nsems uid gid cuid ...".
  std::map<std::string, std::size_t> column;
  {
    std::istringstream names(header);
    std::size_t index = 0;
    for (std::string name; names >> name; ++index) column.emplace(name, index);
  }
  const char* id_name = listing_of(kind).id_column;
  const char* bytes_name = listing_of(kind).bytes_column;
  for (const char* needed : {id_name, "perms", "uid", "cuid"}) {
    if (!column.count(needed)) return objects;
  }
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields;
    std::istringstream words(line);
    for (std::string word; words >> word;) fields.push_back(word);
    const auto number = [&](const char* name, int base, unsigned long long& value) {
      const auto at = column.find(name);
      if (at == column.end() || at->second >= fields.size()) return false;
      char* end = nullptr;
      value = std::strtoull(fields[at->second].c_str(), &end, base);
      return *end == '\0';
    };
    unsigned long long id = 0, perms = 0, uid = 0, cuid = 0, bytes = 0, rss = 0, nattch = 0;
    if (!number(id_name, 10, id) || !number("perms", 8, perms) || !number("uid", 10, uid) ||
        !number("cuid", 10, cuid))
      continue;
    IpcObject object;
    object.kind = kind;
    object.id = static_cast<int>(id);
    object.mode = static_cast<unsigned>(perms);
    object.uid = static_cast<uid_t>(uid);
    object.creator = static_cast<uid_t>(cuid);
    if (*bytes_name != '\0' && number(bytes_name, 10, bytes)) object.bytes = bytes;
    if (number("rss", 10, rss)) object.resident = rss;
    if (number("nattch", 10, nattch)) object.attached = nattch;
    objects.push_back(object);
  }
  return objects;
}

std::vector<IpcObject> ipc_objects_of(uid_t uid) {
  std::vector<IpcObject> objects;
  for (const SysvipcListing& listing : sysvipc_listings) {
    for (const IpcObject& object :
         parse_sysvipc(listing.kind, read_proc_file(listing.file).value_or(""))) {
      if (object.uid == uid || object.creator == uid) objects.push_back(object);
    }
  }
  return objects;
}

bool remove_ipc_object(const IpcObject& object, uid_t uid) {
  // What the id names now: the object may have gone, and its id been given to another since it
  // was listed. An owner without read permission cannot look (EACCES) but may still remove it:
  // when this process is `uid`, the kernel lets it remove only its own.
  const auto remove = [&](int stat_result, const ipc_perm& perm, const auto& rmid) {
    const auto gone = [] { return errno == EINVAL || errno == EIDRM; };
    if (stat_result != 0 && (errno != EACCES || geteuid() != uid)) return gone();
    if (stat_result == 0 && perm.uid != uid && perm.cuid != uid) return true;  // another's now
    return rmid() == 0 || gone();
  };
  switch (object.kind) {
    case IpcObject::Kind::shared_memory: {
      shmid_ds info{};
      return remove(shmctl(object.id, IPC_STAT, &info), info.shm_perm,
                    [&] { return shmctl(object.id, IPC_RMID, nullptr); });
    }
    case IpcObject::Kind::message_queue: {
      msqid_ds info{};
      return remove(msgctl(object.id, IPC_STAT, &info), info.msg_perm,
                    [&] { return msgctl(object.id, IPC_RMID, nullptr); });
    }
    case IpcObject::Kind::semaphores: {
      semid_ds info{};
      return remove(semctl(object.id, 0, IPC_STAT, &info), info.sem_perm,
                    [&] { return semctl(object.id, 0, IPC_RMID); });
    }
  }
  return false;
}

}  // namespace dtk::grade
