"""What the grader's sandbox users leave behind: their processes, their files where anyone may
write and their IPC objects. The self-tests that grade (grade_submission.py, batch_test.py) look
before and after, and fail on anything new.

A slot's gradings take turns with its lock, and other gradings' files are theirs while they run:
each look holds the lock, when none of that slot's gradings runs. Nothing is looked at unless
the caller is root and the user exists (without root there is no sandbox).
"""
import os
import re
import subprocess

FILE_KEY = r"^[0-9]+:[0-9]+"  # "device:inode", the start of each line of files()
IPC_KEY = r"^[^:]+"  # "<file> <id>" or "mqueue <name>", the start of each line of ipc()

# The awk program that picks the sandbox user's lines of /proc/sysvipc/*, by their header's
# column names.
SYSVIPC_OWNED = """
    FNR == 1 { delete column; for (i = 1; i <= NF; i++) column[$i] = i; next }
    $column["uid"] == user || $column["cuid"] == user {
      name = FILENAME; sub(".*/", "", name); print name " " $2 ": " $0
    }"""


def user_of_slot(slot):
    """The sandbox user of a job slot (0, 1, ...) and the lock its gradings take turns with."""
    if slot == 0:
        return "dtk-sandbox", "/run/dtk-grade.lock"
    return f"dtk-sandbox{slot}", f"/run/dtk-grade-{slot}.lock"


def uid_of(user):
    """The user's uid, or None when there is no such user."""
    found = subprocess.run(["id", "-u", user], capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else None


def _output_under_lock(lock, *command):
    return subprocess.run(["flock", lock, *command], capture_output=True, text=True,
                          errors="replace").stdout


def _looked_at(user):
    """The user's uid when its leftovers can be looked at (as root), else None."""
    return uid_of(user) if os.getuid() == 0 else None


def files(user, lock):
    """The user's files where anyone may write, at any depth: one line per tree, the top one,
    "device:inode" then find's -ls (names escaped); never in another grading's scratch directory
    (root's dtk-grade.*: gradings of other kits may not take the same lock)."""
    uid = _looked_at(user)
    if uid is None:
        return []
    return _output_under_lock(lock, "find", "/tmp", "/var/tmp", "/dev/shm", "/run/lock",
                              "-name", "dtk-grade.*", "-user", "root", "-prune",
                              "-o", "-uid", uid, "-prune", "-printf", "%D:%i ", "-ls").splitlines()


def ipc(user, lock):
    """The user's System V IPC objects (those it owns or made: "<file> <id>: " then the line of
    /proc/sysvipc/<file>) and POSIX message queues ("mqueue <name>: "), one line each."""
    uid = _looked_at(user)
    if uid is None:
        return []
    objects = _output_under_lock(lock, "awk", "-v", f"user={uid}", SYSVIPC_OWNED,
                                 "/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem")
    if os.path.isdir("/dev/mqueue"):
        objects += _output_under_lock(lock, "find", "/dev/mqueue", "-mindepth", "1", "-uid", uid,
                                      "-printf", "mqueue %f: %M %u %s bytes\n")
    return objects.splitlines()


def running(user, lock):
    """ps's lines of the user's processes, or "" when none is running (zombies are dead)."""
    if uid_of(user) is None:
        return ""
    processes = _output_under_lock(lock, "ps", "-u", user, "-o", "stat=,pid=,args=")
    alive = any(line and not line.startswith("Z") for line in processes.split("\n"))
    return processes if alive else ""


def split_by_key(before, after, key_pattern):
    """The lines of `after` whose key (key_pattern's match) was there before, and the others."""
    def key(line):
        match = re.match(key_pattern, line)
        return match.group(0) if match else ""
    keys_before = {key(line) for line in before}
    still_there = [line for line in after if key(line) in keys_before]
    return still_there, [line for line in after if key(line) not in keys_before]
