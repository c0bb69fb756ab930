// The manifest (grader/manifest.json): parts, points, hidden test cases, limits. Instructors
// edit it; dtk-grade validates it and says exactly what is wrong.
#pragma once

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_case.hpp"

namespace dtk::grade {

struct ManifestError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct PlannedTest {
  TestCase test;
  bool is_public = false;
};

struct Part {
  int number = 0;
  std::string title;
  double points = 0;
  std::string file;  // the student file that holds its functions
  bool optional = false;
  std::vector<std::string> functions;  // the student functions its tests check
  std::vector<PlannedTest> tests;
};

struct Manifest {
  int max_ranks = 8;
  int group_seconds = 10, test_seconds = 3, compile_seconds = 30;
  int address_space_mb = 1024, file_size_mb = 64, processes = 256, output_kb = 64;
  // The build and the audit: per compiler, compilers at once, readelf's output read.
  int compiler_address_space_mb = 2048, compilers_at_once = 2, audit_output_mb = 16;
  double float_rtol = 1e-5, double_rtol = 1e-10, real_rtol = 1e-3;
  std::string visibility = "visible";
  std::set<std::string> allowed_mpi;
  std::set<std::string> forbidden_symbols;
  std::vector<Part> parts;  // enabled parts only, in manifest order
};

// Throws ManifestError naming the file and the problem.
Manifest load_manifest(const std::string& path);

}  // namespace dtk::grade
