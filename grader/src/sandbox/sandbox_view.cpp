#include "sandbox/sandbox_view.hpp"

#include <algorithm>
#include <filesystem>

namespace dtk::grade {

namespace fs = std::filesystem;

namespace {

// `path` absolute, lexically normal and with its links resolved (as far as it exists).
std::string real_path(const std::string& path) {
  std::error_code error;
  const fs::path real = fs::weakly_canonical(fs::absolute(path), error);
  std::string text = (error ? fs::absolute(path).lexically_normal() : real).string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

// Is `path` `dir` itself or below it?
bool within(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

bool any_within(const std::vector<std::string>& paths, const std::string& dir) {
  return std::any_of(paths.begin(), paths.end(),
                     [&](const std::string& path) { return within(path, dir); });
}

// Covers the directories of `dir` that are neither system directories (at the root only) nor
// needed nor on the way to a needed path, and goes down that way.
void hide_below(const std::string& dir, bool at_root, const std::vector<std::string>& needed,
                const std::set<std::string>& system, std::vector<std::string>& hidden) {
  std::error_code error;
  std::vector<std::string> entries;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    std::error_code type_error;
    if (entry.is_directory(type_error) && !entry.is_symlink(type_error))
      entries.push_back(entry.path().string());
  }
  std::sort(entries.begin(), entries.end());
  for (const std::string& path : entries) {
    const std::string name = fs::path(path).filename().string();
    if (std::find(needed.begin(), needed.end(), path) != needed.end()) continue;
    if (at_root && system.count(name)) continue;
    if (any_within(needed, path)) {
      hide_below(path, false, needed, system, hidden);
    } else {
      hidden.push_back(path);
    }
  }
}

}  // namespace

const std::set<std::string>& system_directories() {
  static const std::set<std::string> names = {"bin",   "dev",    "etc",  "lib", "lib32",
                                              "lib64", "libx32", "proc", "run", "sbin",
                                              "sys",   "tmp",    "usr",  "var"};
  return names;
}

std::vector<std::string> paths_to_hide(const std::vector<std::string>& needed,
                                       const std::vector<std::string>& private_paths,
                                       const std::string& root,
                                       const std::set<std::string>& system) {
  std::vector<std::string> real_needed;
  for (const std::string& path : needed) real_needed.push_back(real_path(path));
  std::vector<std::string> hidden;
  hide_below(real_path(root), true, real_needed, system, hidden);
  for (const std::string& path : private_paths) {
    const std::string real = real_path(path);
    const bool covered = std::any_of(hidden.begin(), hidden.end(),
                                     [&](const std::string& dir) { return within(real, dir); });
    if (!covered && !any_within(real_needed, real)) hidden.push_back(real);
  }
  return hidden;
}

}  // namespace dtk::grade
