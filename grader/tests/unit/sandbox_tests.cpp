// The sandbox's pieces that need no sandbox user: each job slot's share of the CPUs, the
// System V IPC objects a submission may leave behind (listed from /proc/sysvipc and removed),
// how long a command that reports its progress may run, and what it inherits.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>

#include "sandbox/process_table.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/sandbox_user.hpp"

using namespace dtk::grade;

namespace {

// A sandbox without its user (commands run as this process's), in a scratch directory of its
// own, removed with it.
struct ScratchSandbox {
  ScratchSandbox() : scratch(make_scratch()) {
    sandbox.emplace(SandboxLimits{1024, 64, 256, 64, 4096, 1024}, scratch, scratch + "/home",
                    /*use_sandbox_user=*/false, /*slot=*/0, log);
  }
  ~ScratchSandbox() {
    sandbox.reset();
    std::filesystem::remove_all(scratch);
  }
  static std::string make_scratch() {
    char scratch_template[] = "/tmp/dtk-sandbox-test.XXXXXX";
    return mkdtemp(scratch_template);
  }
  const std::string scratch;
  std::ostringstream log;
  std::optional<Sandbox> sandbox;
};

}  // namespace

TEST_CASE("one slot grades on every CPU; slots side by side share them out", "[sandbox]") {
  const std::vector<int> two = {0, 1}, four = {4, 5, 6, 7}, three = {0, 2, 5};
  CHECK(slot_cpus(two, 0, 1) == two);
  CHECK(slot_cpus(two, 0, 2) == std::vector<int>{0});
  CHECK(slot_cpus(two, 1, 2) == std::vector<int>{1});
  CHECK(slot_cpus(four, 0, 2) == std::vector<int>{4, 5});  // the CPUs given, not 0..n-1
  CHECK(slot_cpus(four, 1, 2) == std::vector<int>{6, 7});
  // Uneven: every CPU belongs to exactly one slot.
  CHECK(slot_cpus(three, 0, 2) == std::vector<int>{0});
  CHECK(slot_cpus(three, 1, 2) == std::vector<int>{2, 5});
  // More slots than CPUs: they wrap around.
  CHECK(slot_cpus(two, 2, 3) == std::vector<int>{0});
  CHECK(slot_cpus(two, 3, 4) == std::vector<int>{1});
  CHECK(slot_cpus({}, 1, 2).empty());
  const std::vector<int> mine = allowed_cpus();
  CHECK_FALSE(mine.empty());
  CHECK(std::is_sorted(mine.begin(), mine.end()));
}

namespace {

// Every field of the one object `text` lists, or why not one.
std::string fields_of(IpcObject::Kind kind, const std::string& text) {
  const std::vector<IpcObject> objects = parse_sysvipc(kind, text);
  if (objects.size() != 1) return std::to_string(objects.size()) + " objects";
  const IpcObject& o = objects[0];
  char mode[8];
  std::snprintf(mode, sizeof mode, "%o", o.mode);
  return "id " + std::to_string(o.id) + " mode " + mode + " uid " + std::to_string(o.uid) +
         " creator " + std::to_string(o.creator) + " bytes " + std::to_string(o.bytes) +
         " resident " + std::to_string(o.resident) + " attached " + std::to_string(o.attached) +
         ": " + o.describe();
}

}  // namespace

TEST_CASE("/proc/sysvipc's listings parse by their columns' names", "[sandbox]") {
  CHECK(
      fields_of(IpcObject::Kind::shared_memory,
                "       key      shmid perms                  size  cpid  lpid nattch   uid   gid "
                " cuid  cgid      atime      dtime      ctime                   rss          "
                "        swap\n"
                "         0      32769   666              16777216  4242  4242      0   998   "
                "998   998   998 1700000000 1700000001 1700000000               4194304      "
                "               0\n"
                "not a line of numbers\n") ==
      "id 32769 mode 666 uid 998 creator 998 bytes 16777216 resident 4194304 attached 0: a "
      "shared-memory segment (id 32769, 16 MiB, mode 0666)");
  // Made by root and given to the user: its creator is root.
  CHECK(
      fields_of(IpcObject::Kind::message_queue,
                "       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid "
                " cgid      stime      rtime      ctime\n"
                "1234567890          3   600          12          1  4242     0   997   997     0 "
                "    0 1700000000          0 1700000000\n") ==
      "id 3 mode 600 uid 997 creator 0 bytes 12 resident 0 attached 0: a message queue (id 3, "
      "holding 12 bytes, mode 0600)");
  CHECK(fields_of(IpcObject::Kind::semaphores,
                  "       key      semid perms      nsems   uid   gid  cuid  cgid      otime      "
                  "ctime\n"
                  "         0          5   666          3   998   998   998   998          0 "
                  "1700000000\n") ==
        "id 5 mode 666 uid 998 creator 998 bytes 0 resident 0 attached 0: a semaphore set (id 5, "
        "mode 0666)");
  CHECK(fields_of(IpcObject::Kind::semaphores, "") == "0 objects");
  CHECK(fields_of(IpcObject::Kind::semaphores, "key semid perms\n0 5 666\n") == "0 objects");
}

TEST_CASE("a user's System V IPC objects are found and removed, and nobody else's", "[sandbox]") {
  const uid_t me = geteuid();
  const int segment = shmget(IPC_PRIVATE, 1 << 20, IPC_CREAT | 0666);
  const int queue = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
  const int set = semget(IPC_PRIVATE, 2, IPC_CREAT | 0000);  // not even readable by its owner
  REQUIRE(segment >= 0);
  REQUIRE(queue >= 0);
  REQUIRE(set >= 0);
  // Only these three: other objects of this user (other tests) are not this test's to remove.
  const auto mine = [&] {
    std::vector<IpcObject> objects = ipc_objects_of(me);
    objects.erase(std::remove_if(objects.begin(), objects.end(),
                                 [&](const IpcObject& o) {
                                   return o.id !=
                                          (o.kind == IpcObject::Kind::shared_memory   ? segment
                                           : o.kind == IpcObject::Kind::message_queue ? queue
                                                                                      : set);
                                 }),
                  objects.end());
    return objects;
  };
  REQUIRE(mine().size() == 3);
  // Given away (IPC_SET), an object is still its creator's.
  shmid_ds segment_info{};
  REQUIRE(shmctl(segment, IPC_STAT, &segment_info) == 0);
  segment_info.shm_perm.uid = me + 1;
  REQUIRE(shmctl(segment, IPC_SET, &segment_info) == 0);
  REQUIRE(mine().size() == 3);
  // A third user's are left alone: the object is checked before it is removed.
  for (const IpcObject& object : mine()) CHECK(remove_ipc_object(object, me + 2));
  CHECK(mine().size() == 3);
  for (const IpcObject& object : mine()) CHECK(remove_ipc_object(object, me));
  CHECK(mine().empty());
  // Already gone: nothing to do.
  CHECK(remove_ipc_object({IpcObject::Kind::shared_memory, segment}, me));
}

TEST_CASE("a command that reports progress goes on while it makes some, and ends once it stops",
          "[sandbox]") {
  const ScratchSandbox box;
  const std::string& scratch = box.scratch;
  const std::string progress_file = scratch + "/progress";
  Command command;
  command.sandboxed = false;
  command.cwd = scratch;
  command.timeout_seconds = 60;  // the cap, never reached here
  command.idle_seconds = 1.5;
  command.progress = [&] {
    std::error_code error;
    const std::uintmax_t size = std::filesystem::file_size(progress_file, error);
    return error ? std::uintmax_t{0} : size;
  };
  // Longer in all than idle_seconds, never that long without writing: it runs to its end.
  command.argv = {"sh", "-c",
                  "for i in 1 2 3 4 5 6 7 8 9 10; do echo x >> progress; sleep 0.25; done"};
  const Outcome writing = box.sandbox->run(command);
  CHECK_FALSE(writing.timed_out);
  CHECK(writing.exit_code == 0);
  // Silent: ended after idle_seconds, long before the cap.
  command.argv = {"sleep", "30"};
  const Outcome silent = box.sandbox->run(command);
  CHECK(silent.timed_out);
  CHECK(silent.seconds < 30);
}

TEST_CASE("a command inherits no descriptor of the grader's but its standard three", "[sandbox]") {
  const ScratchSandbox box;
  const std::string& scratch = box.scratch;
  // As another thread of the grader may hold a copy open for writing when a command starts
  // (libstdc++'s std::filesystem::copy_file opens without O_CLOEXEC): the command would keep
  // it open, and running the copy would fail with "Text file busy".
  const std::string copy = scratch + "/being-written";
  const int open_for_writing = open(copy.c_str(), O_WRONLY | O_CREAT, 0755);
  REQUIRE(open_for_writing >= 3);
  Command command;
  command.sandboxed = false;
  command.cwd = scratch;
  command.timeout_seconds = 30;
  command.argv = {"sh", "-c", "ls /proc/$$/fd"};  // the shell's own, before ls opens any
  const Outcome listed = box.sandbox->run(command);
  close(open_for_writing);
  CHECK(listed.exit_code == 0);
  CHECK(listed.output == "0\n1\n2\n");
}
