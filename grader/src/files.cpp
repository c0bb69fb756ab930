#include "files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace dtk::grade {

namespace fs = std::filesystem;

bool read_regular_file(const std::string& path, std::size_t max_bytes, std::string& content,
                       std::string& problem) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    problem = errno == ELOOP ? "is a symbolic link" : std::strerror(errno);
    return false;
  }
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_nlink != 1) {
    problem = "is not a plain regular file";
    close(fd);
    return false;
  }
  if (static_cast<std::size_t>(info.st_size) > max_bytes) {
    problem = "is larger than " + std::to_string(max_bytes) + " bytes";
    close(fd);
    return false;
  }
  content.clear();
  char buffer[65536];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) {
    if (content.size() + n > max_bytes) break;
    content.append(buffer, n);
  }
  close(fd);
  return true;
}

bool file_ends_with(const std::string& path, const std::string& suffix) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat info {};
  std::string tail(suffix.size(), '\0');
  const bool ok = fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
                  static_cast<std::size_t>(info.st_size) >= suffix.size() &&
                  pread(fd, tail.data(), tail.size(), info.st_size - suffix.size()) ==
                      static_cast<ssize_t>(tail.size());
  close(fd);
  return ok && tail == suffix;
}

bool file_tail_has(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat info {};
  std::string tail;
  if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) {
    tail.resize(std::min<std::size_t>(info.st_size, 1024));
    const ssize_t n = pread(fd, tail.data(), tail.size(), info.st_size - tail.size());
    tail.resize(n > 0 ? n : 0);
  }
  close(fd);
  return tail.find(text) != std::string::npos;
}

int create_file(const std::string& path, mode_t mode) {
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return -1;
  // O_EXCL after the unlink: if something is planted again in between, this fails rather than
  // following it.
  return open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
}

void write_file(const std::string& path, const std::string& content, mode_t mode) {
  const int fd = create_file(path, mode);
  if (fd < 0) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = write(fd, content.data() + written, content.size() - written);
    if (n <= 0) break;
    written += n;
  }
  if (close(fd) != 0 || written < content.size()) {
    throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  }
}

void copy_file(const std::string& from, const std::string& to) {
  // Both descriptors close on exec (std::filesystem::copy_file's do not): a process another
  // thread starts meanwhile must not keep the copy open for writing, or running the copy fails
  // with "Text file busy" (the runner, while the reference's tests start).
  const int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat info {};
  if (in < 0 || fstat(in, &info) != 0) {
    if (in >= 0) close(in);
    throw std::runtime_error("cannot copy " + from + ": " + std::strerror(errno));
  }
  const int out = create_file(to, info.st_mode & 0777);
  int error = out < 0 ? errno : 0;
  char buffer[65536];
  for (ssize_t n; !error && (n = read(in, buffer, sizeof buffer)) != 0;) {
    if (n < 0) error = errno;
    for (ssize_t written = 0, w; !error && written < n; written += w) {
      if ((w = write(out, buffer + written, n - written)) <= 0) error = w < 0 ? errno : EIO;
    }
  }
  close(in);
  if (out >= 0 && close(out) != 0 && !error) error = errno;
  if (error)
    throw std::runtime_error("cannot copy " + from + " to " + to + ": " + std::strerror(error));
}

void install_readable(const std::string& from, const std::string& to) {
  auto install_file = [](const fs::path& source, const fs::path& target) {
    copy_file(source, target);
    const bool executable =
        (fs::status(source).permissions() & fs::perms::owner_exec) != fs::perms::none;
    chmod(target.c_str(), executable ? 0755 : 0644);
  };
  if (!fs::is_directory(from)) {
    install_file(from, to);
    return;
  }
  fs::create_directories(to);
  chmod(to.c_str(), 0755);
  for (const auto& entry : fs::recursive_directory_iterator(from)) {
    const fs::path target = to / fs::relative(entry.path(), from);
    if (entry.is_directory()) {
      fs::create_directories(target);
      chmod(target.c_str(), 0755);
    } else {
      install_file(entry.path(), target);
    }
  }
}

}  // namespace dtk::grade
