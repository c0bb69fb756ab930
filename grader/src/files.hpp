// Files the grader reads and writes, some of them written by untrusted processes.
#pragma once

#include <string>

namespace dtk::grade {

// Reads at most max_bytes of a regular file. Refuses symbolic links, FIFOs, devices and files
// with several links, so that an untrusted process cannot make the grader read something else.
// Returns false (and says why in `problem`) when the file cannot be taken.
bool read_regular_file(const std::string& path, std::size_t max_bytes, std::string& content,
                       std::string& problem);

// Does the regular file at `path` end with `suffix`? Reads only its tail (same refusals as
// read_regular_file).
bool file_ends_with(const std::string& path, const std::string& suffix);

// Does the last kilobyte of the regular file at `path` contain `text`?
bool file_tail_has(const std::string& path, const std::string& text);

// Creates or replaces a file; throws std::runtime_error naming the path on failure.
void write_file(const std::string& path, const std::string& content);

// Copies a file the grader trusts (its own build products); throws on failure.
void copy_file(const std::string& from, const std::string& to);

// Installs a copy of `from` (a file or a directory tree of the kit) at `to`, readable by every
// user whatever the kit's own modes: directories 0755, files 0644 (0755 if executable). The
// kit may be locked down (chmod -R go-rwx); its copies in the scratch are what the sandbox reads.
void install_readable(const std::string& from, const std::string& to);

}  // namespace dtk::grade
