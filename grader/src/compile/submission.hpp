// The student files of one submission, from a handin.tar or a directory.
//
// Each expected file (e.g. model/func_impl.cpp) is looked up at its path, under one leading
// directory ("handin/model/func_impl.cpp"), or by its name alone at either level (students
// sometimes pack the files flat). A directory holding no student file but one .tar is read as
// that archive (Gradescope puts an uploaded handin.tar in the submission directory).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dtk::grade {

struct Submission {
  std::map<std::string, std::string> files;  // expected path -> content, for files found
  std::vector<std::string> problems;         // refused members, unreadable files, not a tar, ...
};

// Never throws for a bad submission: what is wrong goes to `problems` and the file is missing.
Submission read_submission(const std::string& path, const std::vector<std::string>& expected);

}  // namespace dtk::grade
