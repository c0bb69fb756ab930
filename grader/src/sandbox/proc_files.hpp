// Reading /proc/PID/... of processes that may end at any moment (the sandbox's sweeps and its
// memory watch list /proc, then read what they found). A process that is gone is a normal
// outcome, not an error: its files vanish (open fails with ENOENT), or, once a file is open,
// reading it fails with ESRCH ("No such process"), which std::ifstream turns into an exception.
#pragma once

#include <optional>
#include <string>

namespace dtk::grade {

// The whole of an open /proc file (fd), or nothing when its process is gone or it cannot be
// read. Does not close fd.
std::optional<std::string> read_proc_fd(int fd);

// The whole of a /proc file, e.g. "/proc/123/stat", or nothing when its process is gone.
std::optional<std::string> read_proc_file(const std::string& path);

}  // namespace dtk::grade
