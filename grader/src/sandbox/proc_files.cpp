#include "sandbox/proc_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace dtk::grade {

std::optional<std::string> read_proc_fd(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) {
      text.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0) {
      return text;
    } else if (errno != EINTR) {
      return std::nullopt;  // ESRCH: the process ended after the file was opened
    }
  }
}

std::optional<std::string> read_proc_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;  // ENOENT: the process is gone
  std::optional<std::string> text = read_proc_fd(fd);
  close(fd);
  return text;
}

}  // namespace dtk::grade
