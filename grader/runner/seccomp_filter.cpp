#include "seccomp_filter.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

namespace dtk::grade {

namespace {

#if defined(__x86_64__)
constexpr std::uint32_t kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr std::uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#else
#error "the student filter knows the system calls of x86-64 and AArch64 only"
#endif

constexpr std::uint32_t kX32SyscallBit = 0x40000000;  // x86-64's x32 ABI: other numbers

constexpr std::uint32_t word_of_arg(int arg, bool high = false) {
  // Little-endian: the low 32 bits of an argument come first.
  return static_cast<std::uint32_t>(offsetof(seccomp_data, args) + 8 * arg + (high ? 4 : 0));
}

// A filter program, built one rule per system call: each rule starts by loading the call's
// number and skips itself when it is another call.
class FilterProgram {
 public:
  FilterProgram() {
    // Another architecture's numbers (a 32-bit entry point) mean other calls: all refused.
    load(offsetof(seccomp_data, arch));
    jump(BPF_JEQ, kNativeArch, 1, 0);
    code_.push_back(refuse(ENOSYS));
    load(offsetof(seccomp_data, nr));
    jump(BPF_JGE, kX32SyscallBit, 0, 1);
    code_.push_back(refuse(ENOSYS));
  }

  // Refused whatever its arguments.
  void refuse_call(long nr, int error = EPERM) { rule(nr, {refuse(error)}); }

  // Refused when argument `arg` has any bit of `mask` set.
  void refuse_when_any_bit(long nr, int arg, std::uint32_t mask) {
    rule(nr, {load_statement(word_of_arg(arg)), jump_statement(BPF_JSET, mask, 0, 1), refuse(EPERM),
              allow()});
  }

  // Allowed only when argument `arg` has a bit of `mask` set.
  void allow_when_any_bit(long nr, int arg, std::uint32_t mask) {
    rule(nr, {load_statement(word_of_arg(arg)), jump_statement(BPF_JSET, mask, 0, 1), allow(),
              refuse(EPERM)});
  }

  // Allowed only when every (32-bit word of an argument, value) pair holds.
  void allow_when_equal(long nr,
                        const std::vector<std::pair<std::uint32_t, std::uint32_t>>& words) {
    std::vector<sock_filter> body;
    for (std::size_t i = 0; i < words.size(); ++i) {
      const auto to_refusal = static_cast<std::uint8_t>(2 * (words.size() - 1 - i) + 1);
      body.push_back(load_statement(words[i].first));
      body.push_back(jump_statement(BPF_JEQ, words[i].second, 0, to_refusal));
    }
    body.push_back(allow());
    body.push_back(refuse(EPERM));
    rule(nr, body);
  }

  // Refused when argument `arg` equals one of `values`.
  void refuse_when_one_of(long nr, int arg, const std::vector<std::uint32_t>& values) {
    std::vector<sock_filter> body = {load_statement(word_of_arg(arg))};
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto to_refusal = static_cast<std::uint8_t>(values.size() - 1 - i + 1);
      body.push_back(jump_statement(BPF_JEQ, values[i], to_refusal, 0));
    }
    body.push_back(allow());
    body.push_back(refuse(EPERM));
    rule(nr, body);
  }

  sock_fprog finish() {
    code_.push_back(allow());
    return {static_cast<unsigned short>(code_.size()), code_.data()};
  }

 private:
  static sock_filter load_statement(std::uint32_t offset) {
    return BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset);
  }
  static sock_filter jump_statement(std::uint16_t test, std::uint32_t value, std::uint8_t if_true,
                                    std::uint8_t if_false) {
    return BPF_JUMP(BPF_JMP | test | BPF_K, value, if_true, if_false);
  }
  static sock_filter allow() { return BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW); }
  static sock_filter refuse(int error) {
    return BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (error & SECCOMP_RET_DATA));
  }
  void load(std::uint32_t offset) { code_.push_back(load_statement(offset)); }
  void jump(std::uint16_t test, std::uint32_t value, std::uint8_t if_true, std::uint8_t if_false) {
    code_.push_back(jump_statement(test, value, if_true, if_false));
  }
  void rule(long nr, const std::vector<sock_filter>& body) {
    load(offsetof(seccomp_data, nr));
    jump(BPF_JEQ, static_cast<std::uint32_t>(nr), 0, static_cast<std::uint8_t>(body.size()));
    code_.insert(code_.end(), body.begin(), body.end());
  }

  std::vector<sock_filter> code_;
};

int filters_of_this_thread() {
  std::ifstream status("/proc/thread-self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Seccomp_filters:", 0) == 0) return std::atoi(line.c_str() + 16);
  }
  return -1;
}

void add_rules(FilterProgram& filter) {
  const std::uint32_t self = static_cast<std::uint32_t>(getpid());
  // O_TMPFILE's own bit: the C library's macro includes O_DIRECTORY, which reading a directory
  // sets too.
  constexpr std::uint32_t kTmpFile = 020000000;
  constexpr std::uint32_t kWrites = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | kTmpFile;

  // Files: opened for reading only; nothing created, written, moved, removed or re-stamped.
#ifdef __NR_open
  filter.refuse_when_any_bit(__NR_open, 1, kWrites);
#endif
  filter.refuse_when_any_bit(__NR_openat, 2, kWrites);
  filter.refuse_call(__NR_openat2, ENOSYS);  // its flags are in memory the filter cannot read
  for (long nr : {
#ifdef __NR_creat
           __NR_creat,
           __NR_mkdir,
           __NR_mknod,
           __NR_rename,
           __NR_link,
           __NR_symlink,
           __NR_unlink,
           __NR_rmdir,
           __NR_chmod,
           __NR_chown,
           __NR_lchown,
           __NR_utime,
           __NR_utimes,
           __NR_futimesat,
#endif
           __NR_mkdirat,
           __NR_mknodat,
           __NR_renameat,
           __NR_renameat2,
           __NR_linkat,
           __NR_symlinkat,
           __NR_unlinkat,
           __NR_truncate,
           __NR_ftruncate,
           __NR_fallocate,
           __NR_fchmod,
           __NR_fchmodat,
           __NR_fchown,
           __NR_fchownat,
           __NR_utimensat,
           __NR_setxattr,
           __NR_lsetxattr,
           __NR_fsetxattr,
           __NR_removexattr,
           __NR_lremovexattr,
           __NR_fremovexattr,
           __NR_flock,
           __NR_name_to_handle_at,
           __NR_open_by_handle_at}) {
    filter.refuse_call(nr);
  }
  // Locks and leases on files opened for reading are bits other processes can test.
  filter.refuse_when_one_of(
      __NR_fcntl, 1,
      {F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE, F_NOTIFY});

  // Sockets (new ones, and sending on MPI's), message queues, semaphores, shared memory,
  // memfd, io_uring, and watching files (whose reads another process can see).
  for (long nr : {__NR_socket,         __NR_socketpair,
                  __NR_connect,        __NR_bind,
                  __NR_listen,         __NR_accept,
                  __NR_accept4,        __NR_sendto,
                  __NR_sendmsg,        __NR_sendmmsg,
                  __NR_msgget,         __NR_msgsnd,
                  __NR_msgrcv,         __NR_msgctl,
                  __NR_semget,         __NR_semop,
                  __NR_semtimedop,     __NR_semctl,
                  __NR_shmget,         __NR_shmat,
                  __NR_shmdt,          __NR_shmctl,
                  __NR_mq_open,        __NR_mq_unlink,
                  __NR_mq_timedsend,   __NR_mq_timedreceive,
                  __NR_mq_notify,      __NR_mq_getsetattr,
                  __NR_memfd_create,   __NR_io_uring_setup,
                  __NR_io_uring_enter, __NR_io_uring_register,
                  __NR_inotify_init1,  __NR_inotify_add_watch,
#ifdef __NR_inotify_init
                  __NR_inotify_init,
#endif
                  __NR_fanotify_init}) {
    filter.refuse_call(nr);
  }

  // Other processes: no signals, no memory, no descriptors, no new processes (threads only).
  filter.allow_when_equal(__NR_kill, {{word_of_arg(0), self}});
  filter.allow_when_equal(__NR_tgkill, {{word_of_arg(0), self}});
  filter.allow_when_equal(__NR_rt_sigqueueinfo, {{word_of_arg(0), self}});
  filter.allow_when_equal(__NR_rt_tgsigqueueinfo, {{word_of_arg(0), self}});
  filter.allow_when_any_bit(__NR_clone, 0, CLONE_THREAD);
  filter.refuse_call(__NR_clone3, ENOSYS);  // its flags are in memory: the C library uses clone
  for (long nr : {
#ifdef __NR_fork
           __NR_fork,
           __NR_vfork,
#endif
           __NR_tkill,
           __NR_execve,
           __NR_execveat,
           __NR_ptrace,
           __NR_process_vm_readv,
           __NR_process_vm_writev,
           __NR_kcmp,
           __NR_pidfd_open,
           __NR_pidfd_getfd,
           __NR_pidfd_send_signal,
           __NR_migrate_pages,
           __NR_move_pages,
           __NR_userfaultfd,
           __NR_bpf,
           __NR_perf_event_open,
           __NR_keyctl,
           __NR_add_key,
           __NR_request_key,
           __NR_mount,
           __NR_umount2,
           __NR_unshare,
           __NR_setns,
           __NR_chroot,
           __NR_pivot_root,
#ifdef __NR_setrlimit
           __NR_setrlimit,
#endif
       }) {
    filter.refuse_call(nr);
  }
  // prlimit64 reads limits (getrlimit) with a null new limit; it may not set one.
  filter.allow_when_equal(__NR_prlimit64, {{word_of_arg(2), 0}, {word_of_arg(2, true), 0}});
  // Renaming a thread changes a name other processes read in /proc; a dumpable process lets
  // the others of its user read its memory (/proc/PID/mem), and the runner is not dumpable.
  filter.refuse_when_one_of(__NR_prctl, 0, {PR_SET_NAME, PR_SET_MM, PR_SET_DUMPABLE});

  // Scheduling, affinity and priority: of the calling thread only (pid or who 0).
  for (long nr :
       {__NR_sched_setaffinity, __NR_sched_setscheduler, __NR_sched_setparam, __NR_sched_setattr}) {
    filter.allow_when_equal(nr, {{word_of_arg(0), 0}});
  }
  filter.allow_when_equal(__NR_setpriority, {{word_of_arg(0), PRIO_PROCESS}, {word_of_arg(1), 0}});
  filter.allow_when_equal(__NR_ioprio_set,
                          {{word_of_arg(0), 1 /* IOPRIO_WHO_PROCESS */}, {word_of_arg(1), 0}});
}

}  // namespace

std::string install_student_filter() {
  FilterProgram filter;
  add_rules(filter);
  sock_fprog program = filter.finish();
  const int before = filters_of_this_thread();
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("prctl(PR_SET_NO_NEW_PRIVS) failed: ") + std::strerror(errno);
  if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0)
    return std::string("seccomp() failed: ") + std::strerror(errno);
  // A filter of the submission's own, installed before main, could answer seccomp() with a
  // success it never performed: the kernel's count says what happened.
  if (filters_of_this_thread() != before + 1)
    return "seccomp() returned success, but the thread's filters did not change";
  return "";
}

}  // namespace dtk::grade
