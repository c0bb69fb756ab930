#include "sandbox/sandbox.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <dtk/freed_memory.hpp>

#include "sandbox/process_table.hpp"
#include "text.hpp"

namespace dtk::grade {

namespace {

using std::chrono::milliseconds;
// The monitor's round: the sandbox's memory and disk are summed five times a second, so a
// process racing past total_memory_mb is stopped before it can take much more.
constexpr milliseconds kMonitorPeriod{200};
// While a command runs: how often its `done` is asked, and the moment it then gets to exit.
constexpr milliseconds kDonePeriod{100}, kExitAfterDone{50};
// How often its processes are looked at for one stopped by a signal (two looks in a row: hung).
constexpr milliseconds kStoppedPeriod{250};
// The longest wait for output in one round, and the round's pause once the output is closed.
constexpr int kOutputPollMs = 50;
constexpr milliseconds kClosedOutputPause{10};
// After it exited, its last words may still be in the pipe: this long to read them.
constexpr milliseconds kLastWordsGrace{300};
// The readability check: one shell testing a score of paths takes well under a second.
constexpr double kReadableSeconds = 10;

void set_limit(int resource, rlim_t value) {
  const rlimit limit{value, value};
  setrlimit(resource, &limit);
}

bool private_mounts() {
  return unshare(CLONE_NEWNS) == 0 &&
         mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
}

// A command's own IPC namespace holds what it makes of System V IPC and POSIX message queues
// until its last process ends. While it runs, the namespace's limits bound them (the kernel's
// defaults allow terabytes of shared memory, which a segment no process has attached keeps out
// of the memory watch): 64 MiB of shared memory, 16 message queues of 16 KiB, 32000
// semaphores. The kit's code and MPI use none of them.
constexpr std::pair<const char*, const char*> ipc_namespace_limits[] = {
    {"/proc/sys/kernel/shmmax", "67108864"},
    {"/proc/sys/kernel/shmall", "16384"},  // pages of 4 KiB
    {"/proc/sys/kernel/msgmni", "16"},
    {"/proc/sys/kernel/msgmnb", "16384"},
    {"/proc/sys/kernel/sem", "250 32000 32 128"},
    {"/proc/sys/fs/mqueue/queues_max", "16"}};

// In the child, before exec: an IPC namespace of its own, bounded. Only system calls.
bool private_ipc() {
  if (unshare(CLONE_NEWIPC) != 0) return false;
  for (const auto& [path, value] : ipc_namespace_limits) {
    // Where /proc/sys cannot be written, the kernel's defaults stay: the namespace still goes
    // with the command.
    const int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) continue;
    [[maybe_unused]] const ssize_t written = write(fd, value, std::strlen(value));
    close(fd);
  }
  return true;
}

bool is_mqueue_mount(const char* path) {
  constexpr long mqueue_magic = 0x19800202;  // the mqueue file system's f_type (statfs(2))
  struct statfs info {};
  return statfs(path, &info) == 0 && info.f_type == mqueue_magic;
}

// The POSIX message queues of `uid` in /dev/mqueue (their names).
std::vector<std::string> posix_queues_of(uid_t uid) {
  std::vector<std::string> names;
  DIR* dir = opendir("/dev/mqueue");
  if (dir == nullptr) return names;
  while (const dirent* entry = readdir(dir)) {
    struct stat info {};
    if (fstatat(dirfd(dir), entry->d_name, &info, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(info.st_mode) && info.st_uid == uid)
      names.push_back(entry->d_name);
  }
  closedir(dir);
  return names;
}

// Appends to `head` until it holds `half` bytes, then keeps the last `half` bytes in `tail`.
void capture(const char* data, std::size_t n, std::size_t half, std::string& head,
             std::string& tail) {
  const std::size_t to_head = std::min(n, half - std::min(half, head.size()));
  head.append(data, to_head);
  tail.append(data + to_head, n - to_head);
  if (tail.size() > 2 * half) tail.erase(0, tail.size() - half);
}

// Where anyone may write, so the sandbox user may leave files (at any depth); a command's own
// private copies of them, where the kernel allows.
constexpr const char* temporary_dirs[] = {"/tmp", "/var/tmp", "/dev/shm", "/run/lock"};

// Files and directories in each private temporary directory: an honest grading makes a few
// (Open MPI's shared memory segments), while a tmpfs would otherwise allow millions, each
// holding kernel memory that no limit counts.
constexpr int private_temporary_inodes = 16384;

// In a command's mount namespace, after its private temporary directories are mounted: the
// grader's scratch directory (open as `scratch_fd`, opened in this namespace) may lie under one
// of them, as under $TMPDIR=/tmp. It is then made again there (as root, in the fresh tmpfs: no
// path the command could have planted) and the real one bound onto it. Only system calls: this
// runs between fork and exec.
void show_again(const char* scratch, int scratch_fd) {
  struct stat real {};
  struct stat seen {};
  if (scratch_fd < 0 || fstat(scratch_fd, &real) != 0) return;
  if (stat(scratch, &seen) == 0 && seen.st_dev == real.st_dev && seen.st_ino == real.st_ino) return;
  char path[PATH_MAX];
  if (std::snprintf(path, sizeof path, "%s", scratch) >= static_cast<int>(sizeof path)) return;
  // 0711 whatever the umask (a batch's is 077): the sandbox user passes through to its build/.
  auto make_passable = [](const char* dir) {
    if (mkdir(dir, 0711) == 0) chmod(dir, 0711);
  };
  for (char* slash = std::strchr(path + 1, '/'); slash != nullptr;
       slash = std::strchr(slash + 1, '/')) {
    *slash = '\0';
    make_passable(path);
    *slash = '/';
  }
  make_passable(path);
  char source[32];
  std::snprintf(source, sizeof source, "/proc/self/fd/%d", scratch_fd);
  mount(source, path, nullptr, MS_BIND | MS_REC, nullptr);
}

// Bytes a command holds in its private temporary directories (0 when it has none: they are
// then the machine's, and not its alone).
std::size_t private_temporary_bytes(pid_t pid) {
  std::size_t total = 0;
  for (const char* dir : temporary_dirs) {
    struct stat machine {};
    struct stat its {};
    struct statfs usage {};
    const std::string path = "/proc/" + std::to_string(pid) + "/root" + dir;
    if (stat(dir, &machine) == 0 && stat(path.c_str(), &its) == 0 && its.st_dev != machine.st_dev &&
        statfs(path.c_str(), &usage) == 0)
      total += static_cast<std::size_t>(usage.f_blocks - usage.f_bfree) * usage.f_bsize;
  }
  return total;
}

// Writes all of `text` to `fd`.
bool write_all(int fd, const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno != EINTR) return false;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads `fd` to its end.
std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) != 0;) {
    if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
    if (n < 0 && errno != EINTR) break;
  }
  return text;
}

// Runs `body` in a child process that has become `user`; what it writes into its string comes
// back in `report` through a pipe (a few short lines, well within a pipe's buffer, so the child
// never blocks). Whether the child ran `body` to the end and it returned true.
bool in_sandbox_user(const SandboxUser& user, std::string& report,
                     const std::function<bool(std::string&)>& body) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("cannot create a pipe");
  const bool ran = as_user(user, [&] {
    close(pipe_fds[0]);
    std::string text;
    const bool done = body(text);
    return write_all(pipe_fds[1], text) && done;
  });
  close(pipe_fds[1]);
  report = read_all(pipe_fds[0]);
  close(pipe_fds[0]);
  return ran;
}

}  // namespace

std::string Outcome::describe() const {
  if (over_limit == "memory") return "ended: the sandbox's processes used too much memory together";
  if (over_limit == "disk") return "ended: the sandbox's files took too much disk space";
  if (stopped_by_signal) return "stopped by a signal (SIGSTOP or SIGTSTP): counted as hung";
  if (timed_out) return "timed out after " + std::to_string(static_cast<int>(seconds + 0.5)) + " s";
  if (stopped_when_done) return "stopped: its work was done but it did not exit";
  if (signal != 0)
    return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit status " + std::to_string(exit_code);
}

Sandbox::Sandbox(const SandboxLimits& limits, const std::string& scratch, const std::string& home,
                 bool use_sandbox_user, int slot, std::ostream& log)
    : limits_(limits),
      scratch_(scratch),
      temporary_mount_options_("size=" + std::to_string(limits.disk_mb) + "m,nr_inodes=" +
                               std::to_string(private_temporary_inodes) + ",mode=1777"),
      log_(log) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphans of our commands come back to us, to be reaped
  if (use_sandbox_user) user_ = find_or_create_user(slot);
  user_.home = home;
  if (user_.dedicated) lock_ = SlotLock(slot);
  if (user_.enabled) {
    mount_namespaces_ = in_child(private_mounts);
    ipc_namespaces_ = in_child([] { return unshare(CLONE_NEWIPC) == 0; });
    posix_queues_mounted_ = is_mqueue_mount("/dev/mqueue");
    sweep();  // a clean start: nothing of an earlier grading counts against the limits
  }
  make_directory(home);
  watch_disk(home);
  monitor_ = std::thread([this] { monitor(); });
}

Sandbox::~Sandbox() {
  stopping_ = true;
  monitor_.join();
  sweep();
}

void Sandbox::make_directory(const std::string& path) const {
  if (mkdir(path.c_str(), 0700) != 0) {
    throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  }
  if (!user_.enabled) return;
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  const bool given = fd >= 0 && fchown(fd, user_.uid, user_.gid) == 0;
  if (fd >= 0) close(fd);
  if (!given) throw std::runtime_error("cannot give " + path + " to the sandbox user");
}

void Sandbox::watch_disk(const std::string& dir) {
  const std::lock_guard<std::mutex> lock(mutex_);
  watched_dirs_.push_back(dir);
}

std::vector<std::string> Sandbox::readable(const std::vector<std::string>& paths,
                                           const std::vector<std::string>& hidden) const {
  // One sandboxed shell tries them all (a command each cost 50 ms a path).
  Command command;
  command.argv = {"sh", "-c",
                  "for path do if test -r \"$path\"; then printf '%s\\n' \"$path\"; fi; done",
                  "sh"};
  command.argv.insert(command.argv.end(), paths.begin(), paths.end());
  command.timeout_seconds = kReadableSeconds;
  command.hidden_paths = hidden;
  const std::string output = run(command).output;
  std::set<std::string> printed;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) printed.insert(line);
  std::vector<std::string> found;
  for (const std::string& path : paths) {
    if (printed.count(path)) found.push_back(path);
  }
  return found;
}

void Sandbox::remove_as_sandbox(const std::string& dir) const {
  remove_as_user("in " + dir, [&](RemovalProblems& problems) { remove_below(dir, problems); });
  const std::lock_guard<std::mutex> lock(mutex_);
  condemned_.erase(dir);
}

void Sandbox::remove_as_user(const std::string& where,
                             const std::function<void(RemovalProblems&)>& remove) const {
  std::string text;
  const bool removed = in_sandbox_user(user_, text, [&](std::string& report) {
    RemovalProblems problems;
    remove(problems);
    for (const std::string& line : problems.lines) report += "  " + line + "\n";
    if (problems.more > 0) report += "  and " + std::to_string(problems.more) + " more\n";
    return true;
  });
  if (!removed && text.empty()) text = "  the process removing them failed\n";
  if (text.empty()) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  log_ << "dtk-grade: WARNING: files the sandbox user " << user_.name << " left " << where
       << " could not be removed:\n"
       << text << std::flush;
}

bool Sandbox::is_sandboxed(pid_t pid) const {
  if (user_.dedicated && owner_of(pid) == user_.uid) return true;
  const pid_t session = state_of(pid).session;
  const std::lock_guard<std::mutex> lock(mutex_);
  return sessions_.count(session) > 0;
}

void Sandbox::monitor() {
  const std::size_t memory_limit = static_cast<std::size_t>(limits_.total_memory_mb) << 20;
  const std::size_t disk_limit = static_cast<std::size_t>(limits_.disk_mb) << 20;
  for (int tick = 0; !stopping_; ++tick) {
    std::this_thread::sleep_for(kMonitorPeriod);
    // Memory: over the limit, the session of the largest process ends (one launch or
    // compiler, not every command running).
    std::size_t total = 0, largest = 0;
    pid_t hog = 0;
    for (pid_t pid : processes_where([&](pid_t pid) { return is_sandboxed(pid); })) {
      const std::size_t bytes = resident_bytes(pid);
      total += bytes;
      if (bytes > largest) largest = bytes, hog = pid;
    }
    // Shared-memory segments of the sandbox user in dtk-grade's IPC namespace (commands without
    // one of their own) that no process has mapped hold memory no process's resident size shows:
    // counted too, and removed when they hold more than the largest process.
    std::size_t segments = 0;
    if (user_.dedicated) {
      for (const IpcObject& object : ipc_objects_of(user_.uid))
        segments += object.attached == 0 ? object.resident : 0;
    }
    total += segments;
    if (total > memory_limit && segments > largest) {
      remove_ipc(", over the memory limit (total_memory_mb)");
    } else if (total > memory_limit && hog != 0) {
      const pid_t session = state_of(hog).session;
      const std::lock_guard<std::mutex> lock(mutex_);
      if (sessions_.count(session)) {
        over_memory_.insert(session);
        kill(-session, SIGKILL);
      }
      kill(hog, SIGKILL);
    }
    if (tick % 3 != 0) continue;
    // Disk, every 0.6 s: the watched directories and the sandbox user's temporary files.
    std::vector<std::string> dirs;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      dirs = watched_dirs_;
    }
    std::size_t used = 0;
    for (const std::string& dir : dirs) used += disk_bytes(dir);
    for (const std::string& dir : condemned()) used -= std::min(used, disk_bytes(dir));
    for (const pid_t session : running_sessions()) used += private_temporary_bytes(session);
    if (user_.dedicated && !mount_namespaces_) {  // else its commands cannot write there
      for (const char* dir : temporary_dirs) used += disk_bytes_of(dir, user_.uid, user_.gid);
    }
    if (used > disk_limit) end_largest_writer();
  }
}

void Sandbox::end_largest_writer() {
  // The command whose directory and private temporary directories take the most space ends;
  // when none wrote in its own (the space went to the machine's temporary directories), every
  // running command does.
  const std::lock_guard<std::mutex> lock(mutex_);
  pid_t writer = 0;
  std::size_t largest = 0;
  for (const auto& [session, dir] : sessions_) {
    const std::size_t bytes =
        (dir.empty() ? 0 : disk_bytes(dir)) + private_temporary_bytes(session);
    if (bytes > largest) largest = bytes, writer = session;
  }
  for (const auto& [session, dir] : sessions_) {
    if (writer != 0 && session != writer) continue;
    over_disk_.insert(session);
    if (!dir.empty()) condemned_.insert(dir);
    kill(-session, SIGKILL);
  }
}

std::vector<pid_t> Sandbox::running_sessions() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::vector<pid_t> sessions;
  for (const auto& entry : sessions_) sessions.push_back(entry.first);
  return sessions;
}

std::set<std::string> Sandbox::condemned() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return condemned_;
}

void Sandbox::sweep() const {
  // Whatever left its session (setsid, a daemon) was orphaned and so became our child: we are
  // a subreaper. Between gradings, dtk-grade has no children of its own.
  const pid_t self = getpid();
  kill_all([&](pid_t pid) { return state_of(pid).parent == self; }, kill_each);
  if (!user_.enabled || !user_.dedicated) return;
  const uid_t uid = user_.uid;
  // kill(-1) from a process of that uid reaches exactly that uid's processes.
  kill_all(
      [&](pid_t pid) { return owner_of(pid) == uid; },
      [&](const std::vector<pid_t>&) { as_user(user_, [] { return kill(-1, SIGKILL) == 0; }); });
  // Its files where anyone may write, removed by a process of that user: links it planted
  // lead nowhere it could not go itself.
  const char* where = ran_a_command_ ? "where anyone may write"
                                     : "where anyone may write during an earlier grading";
  remove_as_user(where, [&](RemovalProblems& problems) {
    for (const char* dir : temporary_dirs) remove_owned_below(dir, uid, user_.gid, problems);
  });
  remove_ipc(ran_a_command_ ? "" : " during an earlier grading");
}

void Sandbox::remove_ipc(const char* when) const {
  const uid_t uid = user_.uid;
  const std::vector<IpcObject> objects = ipc_objects_of(uid);
  const std::vector<std::string> queues =
      posix_queues_mounted_ ? posix_queues_of(uid) : std::vector<std::string>{};
  if (objects.empty() && queues.empty()) return;
  // Removed by a process of that user: the kernel lets it remove its own objects only. It says
  // "1" for each object gone, "0" for each kept, in order.
  std::string gone;
  const bool ran = in_sandbox_user(user_, gone, [&](std::string& report) {
    for (const IpcObject& object : objects) report += remove_ipc_object(object, uid) ? '1' : '0';
    const int dir = open("/dev/mqueue", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (const std::string& queue : queues) {
      report += dir >= 0 && (unlinkat(dir, queue.c_str(), 0) == 0 || errno == ENOENT) ? '1' : '0';
    }
    if (dir >= 0) close(dir);
    return true;
  });
  std::string removed_text, kept_text;
  for (std::size_t i = 0; i < objects.size() + queues.size(); ++i) {
    const std::string what = i < objects.size() ? objects[i].describe()
                                                : "a POSIX message queue (/dev/mqueue/" +
                                                      shown_name(queues[i - objects.size()]) + ")";
    ((ran && i < gone.size() && gone[i] == '1') ? removed_text : kept_text) += "  " + what + "\n";
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!removed_text.empty()) {
    log_ << "dtk-grade: removed the IPC objects the sandbox user " << user_.name << " left" << when
         << ":\n"
         << removed_text << std::flush;
  }
  if (!kept_text.empty()) {
    log_ << "dtk-grade: WARNING: IPC objects the sandbox user " << user_.name << " left" << when
         << " could not be removed:\n"
         << kept_text << std::flush;
  }
}

std::vector<std::string> Sandbox::environment(const Command& command) const {
  std::vector<std::string> env = {
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C",
      dtk::keep_freed_memory_environment()};
  if (command.sandboxed) {
    env.push_back("HOME=" + user_.home);
    env.push_back("TMPDIR=" + user_.home);
  }
  for (const std::string& var : command.env) {  // the command's own settings win
    const std::string name = var.substr(0, var.find('=') + 1);
    env.erase(std::remove_if(env.begin(), env.end(),
                             [&](const std::string& e) { return e.rfind(name, 0) == 0; }),
              env.end());
    env.push_back(var);
  }
  return env;
}

void Sandbox::become_command(const Command& command, char* const argv[], char* const envp[],
                             int output_fd) const {
  setsid();
  const int null = open("/dev/null", O_RDONLY);
  dup2(null, 0);
  dup2(output_fd, 1);
  dup2(output_fd, 2);
  // Nothing else the grader holds open reaches the command, whatever another thread opened
  // without O_CLOEXEC: a file being written there would stay open in this process (and "Text
  // file busy" for whoever runs it), and a descriptor is a way out of the sandbox.
  if (close_range(3, ~0U, 0) != 0) {
    for (int fd = 3; fd < sysconf(_SC_OPEN_MAX); ++fd) close(fd);
  }
  if (command.sandboxed) {
    const bool own_ipc = user_.enabled && ipc_namespaces_ && private_ipc();
    if (user_.enabled && mount_namespaces_ && private_mounts()) {
      const int scratch_fd = open(scratch_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
      // Each hidden path is covered by an empty directory that the sandbox user cannot even
      // list (mode 0), so that can_read() says "no" for it.
      for (const std::string& path : command.hidden_paths) {
        mount("tmpfs", path.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=4k,mode=0000");
      }
      // Temporary directories of its own, empty and bounded, gone with its last process.
      for (const char* dir : temporary_dirs)
        mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, temporary_mount_options_.c_str());
      show_again(scratch_.c_str(), scratch_fd);
      // A /proc of its own that lists only the sandbox user's processes (hidepid=2): in a batch,
      // one slot's submission cannot see another's, let alone the grader's.
      mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2");
      // The machine's message queues out of sight, its own in view.
      if (own_ipc && posix_queues_mounted_)
        mount("mqueue", "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
    }
    const int address_space =
        command.address_space_mb ? command.address_space_mb : limits_.address_space_mb;
    set_limit(RLIMIT_AS, static_cast<rlim_t>(address_space) << 20);
    set_limit(RLIMIT_FSIZE, static_cast<rlim_t>(limits_.file_size_mb) << 20);
    set_limit(RLIMIT_NPROC, limits_.processes);
    set_limit(RLIMIT_CORE, 0);
    set_limit(RLIMIT_CPU, static_cast<rlim_t>(2 * command.timeout_seconds + 10));
    if (!become(user_)) {
      std::perror("dtk-grade: cannot become the sandbox user");
      _exit(126);
    }
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // after setresuid, which clears it
  if (!command.cwd.empty() && chdir(command.cwd.c_str()) != 0) {
    std::perror(("dtk-grade: cannot enter " + command.cwd).c_str());
    _exit(126);
  }
  execvpe(argv[0], argv, envp);
  std::perror(("dtk-grade: cannot run " + command.argv[0]).c_str());
  _exit(127);
}

Outcome Sandbox::run(const Command& command) const {
  const auto start = std::chrono::steady_clock::now();
  ran_a_command_ = true;
  const std::vector<std::string> env = environment(command);
  std::vector<char*> argv, envp;  // prepared before fork: the child only makes system calls
  for (const std::string& arg : command.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  for (const std::string& var : env) envp.push_back(const_cast<char*>(var.c_str()));
  argv.push_back(nullptr);
  envp.push_back(nullptr);

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("cannot create a pipe");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot fork");
  if (pid == 0) become_command(command, argv.data(), envp.data(), pipe_fds[1]);
  close(pipe_fds[1]);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    sessions_[pid] = command.cwd;  // its session id: the child calls setsid() first
  }

  // Read its output until it exits (and a moment more), its work is done, or time is up.
  Outcome outcome;
  std::string head, tail;
  const std::size_t half =
      (command.output_bytes ? command.output_bytes
                            : static_cast<std::size_t>(limits_.output_kb) << 10) /
      2;
  const auto deadline =
      start + std::chrono::milliseconds(static_cast<long>(command.timeout_seconds * 1000));
  auto stop_at = deadline;
  const auto idle = std::chrono::milliseconds(static_cast<long>(command.idle_seconds * 1000));
  auto idle_until = command.progress ? start + idle : deadline;
  std::uintmax_t last_progress = 0;
  auto next_check = start, next_stop_check = start;
  bool exited = false, open_pipe = true, done = false;
  int status = 0, stopped_checks = 0;
  while (std::chrono::steady_clock::now() < std::min(stop_at, idle_until)) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_check) {
      next_check = now + kDonePeriod;
      if (command.done && !done) {
        done = command.done();
        if (done) stop_at = std::min(deadline, now + kExitAfterDone);
      }
      if (command.progress && !done) {
        const std::uintmax_t progress = command.progress();
        if (progress != last_progress) idle_until = now + idle;
        last_progress = progress;
      }
    }
    if (now >= next_stop_check) {
      next_stop_check = now + kStoppedPeriod;
      // A process stopped by a signal (SIGSTOP, SIGTSTP) for two checks in a row would hold
      // the command until its time limit: it counts as hung now.
      const bool stopped =
          !processes_where([&](pid_t p) {
             const ProcessState state = state_of(p);
             return state.session == pid && (state.state == 'T' || state.state == 't');
           }).empty();
      stopped_checks = stopped ? stopped_checks + 1 : 0;
      if (stopped_checks >= 2 && !exited) {
        outcome.stopped_by_signal = true;
        break;
      }
    }
    if (open_pipe) {
      pollfd fd{pipe_fds[0], POLLIN, 0};
      if (poll(&fd, 1, kOutputPollMs) > 0) {
        char buffer[65536];
        const ssize_t n = read(pipe_fds[0], buffer, sizeof buffer);
        if (n <= 0) {
          open_pipe = false;
        } else {
          outcome.output_size += n;
          capture(buffer, n, half, head, tail);
        }
      }
    } else {
      std::this_thread::sleep_for(kClosedOutputPause);
    }
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;  // its last words may still be in the pipe: a short grace to read them
      stop_at = std::min(stop_at, std::chrono::steady_clock::now() + kLastWordsGrace);
    }
    if (exited && !open_pipe) break;
  }
  kill_session(pid);  // on a timeout, and whatever it left running in its session
  if (!exited) {
    waitpid(pid, &status, 0);
    outcome.timed_out = !done;
    outcome.stopped_when_done = done && !outcome.stopped_by_signal;
  }
  close(pipe_fds[0]);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    sessions_.erase(pid);
    if (over_memory_.erase(pid)) outcome.over_limit = "memory";
    if (over_disk_.erase(pid)) outcome.over_limit = "disk";
  }

  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  outcome.output = head;
  if (tail.size() > half) tail.erase(0, tail.size() - half);
  if (outcome.output_size > head.size() + tail.size()) {
    outcome.output += "\n[... " + std::to_string(outcome.output_size - head.size() - tail.size()) +
                      " bytes of output left out ...]\n";
  }
  outcome.output += tail;
  return outcome;
}

}  // namespace dtk::grade
