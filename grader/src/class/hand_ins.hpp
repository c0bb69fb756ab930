// A class's hand-ins, found in one directory: what `dtk-grade --batch DIR` grades.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace dtk::grade {

struct HandIn {
  std::string student;  // a name safe as a file name: the results go to <out>/<student>/
  std::string path;     // a .tar or a directory, as dtk-grade SUBMISSION takes it
};

// Under `dir`: one sub-directory or `.tar` per student, named by student (hidden entries and
// other files are skipped); or Gradescope's "Export Submissions" folder, whose
// submission_metadata.yml maps each submission_<id>/ to its submitters (named by their
// student id, else email, else name; a group "a+b"). Sorted by student. Throws
// std::runtime_error when `dir` cannot be read or two hand-ins would share a student name.
std::vector<HandIn> find_hand_ins(const std::string& dir);

// `name` with every character outside [A-Za-z0-9._@+-] replaced by '_' (never empty, never "."
// or ".."): a student's directory name.
std::string safe_name(const std::string& name);

}  // namespace dtk::grade
