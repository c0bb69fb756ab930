// Compiled student files, kept for gradings that compile the same source again: a batch graded a
// second time (a regrade after a fix to a test), or the grader's self-tests run again. Compiling
// one student file is most of what grading one part costs (xtensor's templates: about 3 s of a
// 6 s grading), and the same source, compiled the same way, gives the same object.
//
// An entry is kept only for a file that compiled and passed the checks of its includes and its
// assembly, and is found again only for the same file name, the same source bytes and the same
// compiler: the compile command (its paths left out), the content of the compiler, of the
// precompiled header's text and of the system's package database (which any package installed
// or upgraded changes), which provided headers exist, and the content of those the compile read
// (ccache's "direct mode": a header no student file includes can change without a miss). So
// another checkout of the same kit finds the objects this one kept. The cache lives in a
// directory only the grader can read, one file per entry; a lookup compares the whole key, never
// a hash alone. Beyond a bound on its size, the entries used longest ago go.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtk::grade {

class ObjectCache {
 public:
  // No directory: nothing is kept or found.
  ObjectCache() = default;
  // What the entries may take by default: the self-tests' take about 200 MB (an object compiled
  // at -O0 is 1-2 MB, xtensor's templates), a batch's a few MB per hand-in.
  static constexpr std::uintmax_t kDefaultMaxBytes = std::uintmax_t{4} << 30;

  // Entries under `dir` (made, mode 0700, if missing) for objects compiled as `compiler` says,
  // against the provided headers in `headers_dir`.
  ObjectCache(std::string dir, std::string compiler, std::string headers_dir,
              std::uintmax_t max_bytes = kDefaultMaxBytes);

  bool enabled() const { return !dir_.empty(); }
  // The object of `file` (a student path) compiled from `source`, if kept and the headers its
  // compile read are unchanged.
  bool load(const std::string& file, const std::string& source, std::string& object) const;
  // Keeps it, with `headers` (names relative to headers_dir: those the compile read), written to
  // a temporary file, then renamed: a grading that loads at the same time sees the whole entry or
  // none. Then evicts the entries used longest ago while the cache takes more than its bound.
  void save(const std::string& file, const std::string& source,
            const std::vector<std::string>& headers, const std::string& object) const;

 private:
  std::string key(const std::string& file, const std::string& source) const;
  std::string entry_path(const std::string& key) const;
  // "name size hash" of each of `names` as they are now (sorted, once each).
  std::string headers_read(const std::vector<std::string>& names) const;

  std::string dir_, compiler_, headers_dir_;
  std::uintmax_t max_bytes_ = kDefaultMaxBytes;
};

// One line "name size hash" for each of `files` (its name without the directories): their
// content, wherever they lie. A missing file says so.
std::string contents_identity(const std::vector<std::string>& files);

}  // namespace dtk::grade
