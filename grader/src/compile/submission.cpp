#include "compile/submission.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "compile/tar_reader.hpp"
#include "files.hpp"
#include "text.hpp"

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

// For every expected file, the index in `paths` of the best match (the last of equal ones, as
// tar would extract it), and a note for the feedback when more than one path could be it.
struct Choice {
  std::size_t taken = 0;
  std::string note;  // "" when there was one candidate
};

std::map<std::string, Choice> choose(const std::vector<std::string>& paths,
                                     const std::vector<std::string>& expected) {
  std::map<std::string, Choice> chosen;
  for (const std::string& want : expected) {
    int best = 0;
    std::vector<std::size_t> candidates;
    for (std::size_t i = 0; i < paths.size(); ++i) {
      const int score = match(paths[i], want);
      if (score == 0) continue;
      candidates.push_back(i);
      if (score >= best) {
        best = score;
        chosen[want].taken = i;
      }
    }
    if (candidates.size() < 2) continue;
    const std::string& taken = paths[chosen[want].taken];
    std::string listed;
    int copies = 0;
    for (std::size_t i : candidates) {
      listed += (listed.empty() ? "\"" : ", \"") + shown_name(paths[i]) + "\"";
      copies += paths[i] == taken;
    }
    chosen[want].note = std::to_string(candidates.size()) + " files that could be " + want + " (" +
                        listed + "): graded " + (copies > 1 ? "the last " : "") + "\"" +
                        shown_name(taken) +
                        "\" (an exact path wins over a name alone, a later copy over an "
                        "earlier one)";
  }
  return chosen;
}

void from_tar(const std::string& archive_path, const std::vector<std::string>& expected,
              Submission& submission) {
  const std::string archive = shown_name(fs::path(archive_path).filename().string());
  std::string data, problem;
  if (!read_regular_file(archive_path, kMaxArchive, data, problem)) {
    submission.problems.push_back(shown_name(archive_path) + " " + problem);
    return;
  }
  TarContents tar;
  try {
    tar = read_tar(data, kMaxArchive, kMaxStudentFile);
  } catch (const std::runtime_error& error) {
    submission.problems.push_back(archive + " cannot be read: " + error.what());
    return;
  }
  if (tar.empty) submission.problems.push_back(archive + " is a tar archive with no files in it");
  for (const std::string& refused : tar.refused) {
    submission.problems.push_back("refused archive member " + refused);
  }
  std::vector<std::string> paths;
  for (const TarMember& member : tar.files) paths.push_back(member.path);
  for (const auto& [want, choice] : choose(paths, expected)) {
    submission.files[want] = tar.files[choice.taken].content;
    if (!choice.note.empty()) {
      submission.problems.push_back(archive + " holds " + choice.note);
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
  for (const auto& [want, choice] : chosen) {
    const std::string& path = paths[choice.taken];
    if (!choice.note.empty()) submission.problems.push_back("the submission holds " + choice.note);
    std::string content, problem;
    if (read_regular_file((fs::path(dir) / path).string(), kMaxStudentFile, content, problem)) {
      submission.files[want] = content;
    } else {
      submission.problems.push_back(shown_name(path) + " " + problem);
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
