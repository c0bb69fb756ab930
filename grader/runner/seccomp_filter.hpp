// The seccomp filter a student thread runs under (see student_thread.hpp): the system calls
// through which code could reach another rank, or change what the runner measures, without
// the Communicator. Refused calls fail with EPERM (ENOSYS for the two whose arguments a filter
// cannot read, so that the C library falls back to their older forms); everything else, MPI's
// shared-memory transport included, works as usual.
//
// Refused: creating, writing, renaming, linking or removing files and changing their metadata
// (open for writing, creat, mkdir, rename, unlink, truncate, chmod, utimes, xattrs, ...), file
// locks and leases (a lock is a bit another process can test), watching files (inotify: a read
// is a bit too), new sockets and sending on MPI's, System V and POSIX message queues, semaphores
// and shared memory, memfd, io_uring (file operations without system calls), signals to other
// processes, reading or writing another process's memory, fork and exec (threads are allowed),
// mounts and namespaces, renaming the thread (its name is readable by other processes), making
// the process dumpable (its memory readable by the other processes of its user), setting
// resource limits, and the scheduling, affinity or priority of anything but the calling thread.
#pragma once

#include <string>

namespace dtk::grade {

// Installs the filter on the calling thread (and the threads it will start); the other threads
// of the process are unaffected. Returns "" or why it could not (then nothing is installed).
std::string install_student_filter();

}  // namespace dtk::grade
