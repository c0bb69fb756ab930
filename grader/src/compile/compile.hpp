// Building the submission into libdtk_student.so, inside the sandbox.
//
// Only the student files are compiled (as many at a time as the manifest allows), with the
// prebuilt objects' flags. A file that is missing, does not compile, includes anything but the
// provided and system headers, or holds inline assembly is replaced by the starter's prebuilt
// object, so that the other files still link and their parts are still graded. A file identical to
// the starter's or the reference's reuses its prebuilt object.
#pragma once

#include <string>
#include <vector>

#include "compile/object_cache.hpp"
#include "compile/submission.hpp"
#include "compile/toolchain.hpp"
#include "limits.hpp"
#include "sandbox/sandbox.hpp"

namespace dtk::grade {

struct FileBuild {
  enum class Status { compiled, same_as_starter, same_as_reference, missing, failed };
  std::string file;  // student path, e.g. "model/func_impl.cpp"
  Status status = Status::missing;
  std::string object;   // the object linked: <scratch>/build/ when compiled
  std::string message;  // for failed: the compiler's first errors
  bool uses_student_code() const {
    return status == Status::compiled || status == Status::same_as_reference;
  }
};

struct StudentBuild {
  std::vector<FileBuild> files;
  std::string runner;  // <scratch>/read-only/bin/dtk-grade-runner, libdtk_student.so beside it
};

// Compiles the `graded` student files (one assignment's) in <scratch>/build (made here for the
// sandbox user); what the sandbox reads but must not change (the student's sources, headers, the
// precompiled header, prebuilt objects, the runner and the library) goes to <scratch>/read-only,
// readable by it even when the kit is not. `provided` (weak objects of parts not assigned) are
// linked after the student files, filling what they lack; a source `cache` keeps is not compiled
// again, and one compiled here is kept. Throws std::runtime_error only when even the starter's
// objects cannot be linked (a broken kit).
StudentBuild build_submission(const Toolchain& toolchain, const std::vector<std::string>& graded,
                              const std::vector<std::string>& provided,
                              const Submission& submission, const Sandbox& sandbox,
                              const std::string& scratch, const std::vector<std::string>& hidden,
                              const Timeouts& timeouts, const BuildLimits& limits,
                              const ObjectCache& cache);

// The cache of objects compiled by `toolchain` under `dir` (none when `dir` is empty).
ObjectCache object_cache(const Toolchain& toolchain, const std::string& dir);

}  // namespace dtk::grade
