// toolchain.json, written by the build (grader/CMakeLists.txt): how to compile a student file
// exactly like the prebuilt objects, and where the prebuilt pieces are.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dtk::grade {

struct Toolchain {
  std::string compiler;
  std::vector<std::string> flags, defines, include_dirs;
  std::string dtk_include_dir;             // the provided headers (copied into the sandbox)
  std::string pch;                         // the precompiled header, <pch>.gch beside it
  std::vector<std::string> student_files;  // of every assignment
  std::map<int, std::vector<std::string>> assignment_files;  // each assignment's own
  // Files compiled with these flags too (after the others, without the precompiled header):
  // those whose speed is graded.
  std::vector<std::string> optimized_files, optimized_flags;
  std::string starter_dir, reference_dir;                                 // their sources
  std::map<std::string, std::string> starter_objects, reference_objects;  // by student file
  // By part: the reference of the part's blocks of the student files that mark it, symbols weak,
  // linked in when a manifest disables the part (the release then ships it as provided code).
  std::map<int, std::vector<std::string>> provided_parts;
  std::string runner;  // the reference runner; libdtk_student.so (reference) beside it
  std::string source_dir, binary_dir;      // the kit's trees, hidden from the sandbox
  std::string configs_dir, manifests_dir;  // in the data directory

  // The kit's manifest of an assignment: <manifests_dir>/assignment<N>.json.
  std::string manifest(int assignment) const;
};

// Throws std::runtime_error when the data directory is missing or incomplete (kit not built).
Toolchain load_toolchain(const std::string& data_dir);

}  // namespace dtk::grade
