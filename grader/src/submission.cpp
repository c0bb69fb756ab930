#include "submission.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "files.hpp"
#include "tar_reader.hpp"

namespace dtk::grade {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxStudentFile = 1 << 20;  // 1 MiB: far more than any honest answer
constexpr std::size_t kMaxArchive = 16 << 20;

std::string base_name(const std::string& path) { return fs::path(path).filename().string(); }

// How well `candidate` (a path in the submission) matches `expected`: 0 = not at all,
// 4 = exact path, 3 = exact under one directory, 2 = name alone, 1 = name under one directory.
int match(const std::string& candidate, const std::string& expected) {
  if (candidate == expected) return 4;
  const std::size_t slash = candidate.find('/');
  const std::string below = slash == std::string::npos ? "" : candidate.substr(slash + 1);
  if (below == expected) return 3;
  if (candidate == base_name(expected)) return 2;
  if (below == base_name(expected)) return 1;
  return 0;
}

// Picks, for every expected file, the best-matching of `paths`.
std::map<std::string, std::string> choose(const std::vector<std::string>& paths,
                                          const std::vector<std::string>& expected) {
  std::map<std::string, std::string> chosen;
  for (const std::string& want : expected) {
    int best = 0;
    for (const std::string& path : paths) {
      const int score = match(path, want);
      if (score > best) {
        best = score;
        chosen[want] = path;
      }
    }
  }
  return chosen;
}

void from_tar(const std::string& archive_path, const std::vector<std::string>& expected,
              Submission& submission) {
  std::string data, problem;
  if (!read_regular_file(archive_path, kMaxArchive, data, problem)) {
    submission.problems.push_back(archive_path + " " + problem);
    return;
  }
  TarContents tar;
  try {
    tar = read_tar(data, kMaxStudentFile);
  } catch (const std::runtime_error& error) {
    submission.problems.push_back(fs::path(archive_path).filename().string() +
                                  " cannot be read: " + error.what());
    return;
  }
  for (const std::string& refused : tar.refused) {
    submission.problems.push_back("refused archive member " + refused);
  }
  std::vector<std::string> paths;
  for (const TarMember& member : tar.files) paths.push_back(member.path);
  for (const auto& [want, path] : choose(paths, expected)) {
    for (const TarMember& member : tar.files) {
      if (member.path == path) submission.files[want] = member.content;  // the last one wins
    }
  }
}

// Regular files of `root` and of its direct subdirectories (enough for every accepted layout).
std::vector<std::string> shallow_files(const fs::path& root) {
  std::vector<std::string> paths;
  std::error_code error;
  for (const auto& entry : fs::recursive_directory_iterator(root, error)) {
    const std::string relative = fs::relative(entry.path(), root, error).string();
    if (std::count(relative.begin(), relative.end(), '/') > 2) continue;
    if (entry.is_regular_file() && !entry.is_symlink()) paths.push_back(relative);
  }
  return paths;
}

void from_directory(const std::string& dir, const std::vector<std::string>& expected,
                    Submission& submission) {
  const std::vector<std::string> paths = shallow_files(dir);
  const auto chosen = choose(paths, expected);
  if (chosen.empty()) {
    std::vector<std::string> archives;
    for (const std::string& path : paths) {
      if (fs::path(path).extension() == ".tar") archives.push_back(path);
    }
    if (archives.size() == 1)
      return from_tar((fs::path(dir) / archives[0]).string(), expected, submission);
  }
  for (const auto& [want, path] : chosen) {
    std::string content, problem;
    if (read_regular_file((fs::path(dir) / path).string(), kMaxStudentFile, content, problem)) {
      submission.files[want] = content;
    } else {
      submission.problems.push_back(path + " " + problem);
    }
  }
}

}  // namespace

Submission read_submission(const std::string& path, const std::vector<std::string>& expected) {
  Submission submission;
  std::error_code error;
  if (fs::is_directory(path, error)) {
    from_directory(path, expected, submission);
  } else {
    from_tar(path, expected, submission);
  }
  for (const std::string& want : expected) {
    if (!submission.files.count(want)) {
      submission.problems.push_back("no " + want + " in the submission");
    }
  }
  return submission;
}

}  // namespace dtk::grade
