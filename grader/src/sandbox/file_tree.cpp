#include "sandbox/file_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>

#include "text.hpp"

namespace dtk::grade {

namespace {

// The names in a directory (not "." and ".."), read through a descriptor of their own.
std::optional<std::vector<std::string>> entries(int dir_fd) {
  const int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* dir = fd >= 0 ? fdopendir(fd) : nullptr;
  if (dir == nullptr) {
    if (fd >= 0) close(fd);
    return std::nullopt;
  }
  std::vector<std::string> names;
  while (const dirent* entry = readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0)
      names.emplace_back(entry->d_name);
  }
  closedir(dir);
  return names;
}

std::size_t blocks_bytes(const struct stat& info) {
  return static_cast<std::size_t>(info.st_blocks) * 512;
}

// May user `uid` (group `gid`, no other groups: the sandbox user drops them) enter and list
// the directory `info` describes?
bool may_enter(const struct stat& info, uid_t uid, gid_t gid) {
  const mode_t needed = info.st_uid == uid   ? S_IRUSR | S_IXUSR
                        : info.st_gid == gid ? S_IRGRP | S_IXGRP
                                             : S_IROTH | S_IXOTH;
  return (info.st_mode & needed) == needed;
}

// A walk of the tree below one directory, depth first, one directory open at a time: it goes
// down with openat(name) and back up with openat(".."), checking that ".." is the directory
// it came from (a directory moved during the walk ends it, with a problem).
class TreeWalk {
 public:
  // Whether to walk into the entry `name` of the directory open as `dir_fd` (only
  // directories of the walk's file system are ever walked into).
  using Visit = std::function<bool(int dir_fd, const std::string& name, const struct stat& info)>;
  // Called with the directory above once all the entries of a directory walked into are done.
  using Leave = std::function<void(int dir_fd, const std::string& name)>;

  // `shown_root` names the top of the walk in problems; `problems` may be null.
  TreeWalk(std::string shown_root, RemovalProblems* problems)
      : shown_root_(std::move(shown_root)), problems_(problems) {}

  // Walks below the directory open as `root_fd` (which stays open and in place).
  void run(int root_fd, const Visit& visit, const Leave& leave = {});

  // Records that `name`, in the directory being walked, could not be handled.
  void problem(const std::string& name, int error);
  // The path of `name` in the directory being walked, to show in a problem.
  std::string shown(const std::string& name) const;

 private:
  struct Level {
    dev_t device;
    ino_t inode;
    std::string name;  // in the directory above
    std::vector<std::string> pending;
  };

  std::string shown_root_;
  RemovalProblems* problems_;
  std::vector<Level> levels_;
};

void TreeWalk::run(int root_fd, const Visit& visit, const Leave& leave) {
  struct stat root {};
  int fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  std::optional<std::vector<std::string>> names;
  if (fd < 0 || fstat(fd, &root) != 0 || !(names = entries(fd))) {
    problem("", errno);
    if (fd >= 0) close(fd);
    return;
  }
  levels_ = {Level{root.st_dev, root.st_ino, "", std::move(*names)}};
  while (true) {
    Level& level = levels_.back();
    if (level.pending.empty()) {
      if (levels_.size() == 1) break;
      const std::string name = std::move(level.name);
      levels_.pop_back();
      const int parent = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      close(fd);
      fd = parent;
      struct stat info {};
      if (fd < 0 || fstat(fd, &info) != 0 || info.st_dev != levels_.back().device ||
          info.st_ino != levels_.back().inode) {
        problem(name, fd < 0 ? errno : ESTALE);  // ESTALE: moved while we were inside
        break;
      }
      if (leave) leave(fd, name);
      continue;
    }
    const std::string name = std::move(level.pending.back());
    level.pending.pop_back();
    struct stat info {};
    if (fstatat(fd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone since
    if (!visit(fd, name, info) || !S_ISDIR(info.st_mode) || info.st_dev != root.st_dev) continue;
    const int child = openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat opened {};
    if (child < 0 || fstat(child, &opened) != 0 || opened.st_ino != info.st_ino ||
        !(names = entries(child))) {
      problem(name, child < 0 ? errno : EACCES);
      if (child >= 0) close(child);
      continue;
    }
    close(fd);
    fd = child;
    levels_.push_back(Level{opened.st_dev, opened.st_ino, name, std::move(*names)});
  }
  if (fd >= 0) close(fd);
}

void TreeWalk::problem(const std::string& name, int error) {
  if (problems_ != nullptr) problems_->add(shown(name) + ": " + std::strerror(error));
}

// Escaped, each name cut to 40 bytes, and only the first two and the last two levels when the
// path is deeper than five.
std::string TreeWalk::shown(const std::string& name) const {
  std::vector<std::string> parts;
  for (std::size_t i = 1; i < levels_.size(); ++i) parts.push_back(levels_[i].name);
  if (!name.empty()) parts.push_back(name);
  const auto part = [](const std::string& text) {
    return shown_name(text.size() > 40 ? text.substr(0, 40) + "..." : text);
  };
  std::string path = shown_root_;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts.size() > 5 && i == 2) {
      path += "/[" + std::to_string(parts.size() - 4) + " levels]";
      i = parts.size() - 3;
      continue;
    }
    path += "/" + part(parts[i]);
  }
  return path;
}

// Disk space used by the entry `name` of `dir_fd` and everything under it.
std::size_t disk_bytes_at(int dir_fd, const std::string& name, const struct stat& info) {
  std::size_t total = blocks_bytes(info);
  if (!S_ISDIR(info.st_mode)) return total;
  const int fd = openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return total;
  TreeWalk("", nullptr).run(fd, [&](int, const std::string&, const struct stat& entry) {
    total += blocks_bytes(entry);
    return true;
  });
  close(fd);
  return total;
}

// Removes the entry `name` of `dir_fd` and everything under it. A directory left not empty by
// a problem already recorded below it is not recorded again.
void remove_at(int dir_fd, const std::string& name, const struct stat& info,
               const std::string& shown_path, RemovalProblems& problems) {
  const std::size_t earlier = problems.count();
  const auto new_problem = [&](int error) {
    return error != ENOTEMPTY || problems.count() == earlier;
  };
  if (S_ISDIR(info.st_mode)) {
    fchmodat(dir_fd, name.c_str(), 0700, 0);
    const int fd = openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      TreeWalk walk(shown_path, &problems);
      walk.run(
          fd,
          [&](int parent, const std::string& entry, const struct stat& entry_info) {
            if (S_ISDIR(entry_info.st_mode)) {
              fchmodat(parent, entry.c_str(), 0700, 0);  // enterable, whatever it was made
              return true;
            }
            if (unlinkat(parent, entry.c_str(), 0) != 0) walk.problem(entry, errno);
            return false;
          },
          [&](int parent, const std::string& entry) {
            if (unlinkat(parent, entry.c_str(), AT_REMOVEDIR) != 0 && new_problem(errno))
              walk.problem(entry, errno);
          });
      close(fd);
    }
  }
  if (unlinkat(dir_fd, name.c_str(), S_ISDIR(info.st_mode) ? AT_REMOVEDIR : 0) != 0 &&
      errno != ENOENT && new_problem(errno)) {
    problems.add(shown_path + ": " + std::strerror(errno));
  }
}

// Runs `walk_from` on the directory at `dir`, if it can be opened.
void with_directory(const std::string& dir, const std::function<void(int)>& walk_from) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  walk_from(fd);
  close(fd);
}

}  // namespace

void RemovalProblems::add(std::string line) {
  if (lines.size() < kept) {
    lines.push_back(std::move(line));
  } else {
    ++more;
  }
}

std::size_t disk_bytes(const std::string& path) {
  struct stat info {};
  if (lstat(path.c_str(), &info) != 0) return 0;
  return disk_bytes_at(AT_FDCWD, path, info);
}

std::size_t disk_bytes_of(const std::string& dir, uid_t uid, gid_t gid) {
  std::size_t total = 0;
  with_directory(dir, [&](int fd) {
    TreeWalk("", nullptr)
        .run(fd, [&](int parent, const std::string& name, const struct stat& info) {
          if (info.st_uid != uid) return S_ISDIR(info.st_mode) && may_enter(info, uid, gid);
          total += disk_bytes_at(parent, name, info);
          return false;
        });
  });
  return total;
}

void remove_below(const std::string& dir, RemovalProblems& problems) {
  with_directory(dir, [&](int fd) {
    TreeWalk walk(dir, &problems);
    walk.run(fd, [&](int parent, const std::string& name, const struct stat& info) {
      remove_at(parent, name, info, walk.shown(name), problems);
      return false;
    });
  });
}

void remove_owned_below(const std::string& dir, uid_t uid, gid_t gid, RemovalProblems& problems) {
  with_directory(dir, [&](int fd) {
    // Other users' directories it cannot walk into are none of its business: only what
    // remove_at cannot remove is a problem.
    TreeWalk walk(dir, nullptr);
    walk.run(fd, [&](int parent, const std::string& name, const struct stat& info) {
      if (info.st_uid != uid) return S_ISDIR(info.st_mode) && may_enter(info, uid, gid);
      remove_at(parent, name, info, walk.shown(name), problems);
      return false;
    });
  });
}

}  // namespace dtk::grade
