#include "class/hand_ins.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace dtk::grade {

namespace fs = std::filesystem;

namespace {

std::string trimmed(const std::string& text) {
  const std::size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const std::size_t end = text.find_last_not_of(" \t\r");
  std::string value = text.substr(begin, end - begin + 1);
  if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') &&
      value.back() == value.front()) {
    value = value.substr(1, value.size() - 2);
  }
  return value;
}

// One submitter of a Gradescope export: ":name:", ":sid:" and ":email:" as they come.
struct Submitter {
  std::string name, sid, email;
  std::string id() const { return !sid.empty() ? sid : !email.empty() ? email : name; }
};

// submission_metadata.yml, read for what it says of each submission folder (a YAML subset:
// Gradescope writes one "submission_<id>:" key per folder and, below it, ":submitters:" as a
// list of ":name:", ":sid:", ":email:"): folder -> its submitters' ids joined with "+".
std::map<std::string, std::string> gradescope_students(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot read " + path);
  std::map<std::string, std::vector<Submitter>> folders;
  std::vector<Submitter>* current = nullptr;
  for (std::string line; std::getline(file, line);) {
    if (!line.empty() && line[0] != ' ' && line[0] != '#' && line.back() == ':') {
      current = &folders[line.substr(0, line.size() - 1)];
      continue;
    }
    if (current == nullptr) continue;
    std::string field = trimmed(line);
    if (field.rfind("- ", 0) == 0) {  // a new list item: the next submitter
      current->emplace_back();
      field = trimmed(field.substr(2));
    }
    if (current->empty()) continue;  // ":created_at:" and the like, before any submitter
    for (const auto& [key, member] :
         {std::pair{":name:", &Submitter::name}, std::pair{":sid:", &Submitter::sid},
          std::pair{":email:", &Submitter::email}}) {
      if (field.rfind(key, 0) == 0)
        current->back().*member = trimmed(field.substr(std::string(key).size()));
    }
  }
  std::map<std::string, std::string> students;
  for (const auto& [folder, submitters] : folders) {
    std::string id;
    for (const Submitter& s : submitters) id += (id.empty() ? "" : "+") + s.id();
    if (!id.empty()) students[folder] = id;
  }
  return students;
}

}  // namespace

std::string safe_name(const std::string& name) {
  std::string safe;
  for (char c : name) {
    const bool kept = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '@' || c == '-' || c == '+';
    safe += kept ? c : '_';
  }
  if (safe.empty() || safe == "." || safe == "..") safe = "_" + safe;
  return safe;
}

std::vector<HandIn> find_hand_ins(const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) throw std::runtime_error(dir + " is not a directory");
  const std::string metadata = dir + "/submission_metadata.yml";
  const std::map<std::string, std::string> gradescope =
      fs::exists(metadata) ? gradescope_students(metadata) : std::map<std::string, std::string>{};
  std::vector<HandIn> hand_ins;
  std::map<std::string, std::string> seen;  // student -> entry
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    const bool tar = entry.is_regular_file() && entry.path().extension() == ".tar";
    if (!entry.is_directory() && !tar) continue;
    std::string student = tar ? entry.path().stem().string() : name;
    if (!gradescope.empty()) {
      const auto found = gradescope.find(name);
      if (found == gradescope.end()) continue;  // not a submission of the export
      student = found->second;
    }
    student = safe_name(student);
    const auto [other, inserted] = seen.emplace(student, name);
    if (!inserted) {
      throw std::runtime_error(dir + ": " + other->second + " and " + name +
                               " are both hand-ins of " + student + ": keep one");
    }
    hand_ins.push_back({student, entry.path().string()});
  }
  if (error) throw std::runtime_error("cannot read " + dir + ": " + error.message());
  std::sort(hand_ins.begin(), hand_ins.end(),
            [](const HandIn& a, const HandIn& b) { return a.student < b.student; });
  return hand_ins;
}

}  // namespace dtk::grade
