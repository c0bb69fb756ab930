#include "process_table.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>

#include "proc_files.hpp"

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
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void kill_each(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) kill(pid, SIGKILL);
}

void kill_session(pid_t session) {
  kill(-session, SIGKILL);
  kill_all([&](pid_t pid) { return state_of(pid).session == session; }, kill_each);
}

}  // namespace dtk::grade
