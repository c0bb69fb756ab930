// Files the grader reads and writes, some of them written by untrusted processes.
#pragma once

#include <sys/types.h>

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

// Creates a new file at `path` after removing whatever is there: a symbolic link, a FIFO, a hard
// link to another file (things a sandboxed process may plant where the grader is about to
// write) is never followed or written through. The file gets `mode` less the umask. Returns its
// descriptor, open for writing (the caller closes it), or -1 with errno set.
int create_file(const std::string& path, mode_t mode);

// Creates or replaces the file at `path` with `content`, as create_file does. Throws
// std::runtime_error naming the path on failure.
void write_file(const std::string& path, const std::string& content, mode_t mode = 0644);

// Copies a file the grader trusts (its own build products), with its permission bits, as
// create_file writes; throws on failure.
void copy_file(const std::string& from, const std::string& to);

// Installs a copy of `from` (a file or a directory tree of the kit) at `to`, readable by every
// user whatever the kit's own modes: directories 0755, files 0644 (0755 if executable). The
// kit may be locked down (chmod -R go-rwx); its copies in the scratch are what the sandbox reads.
void install_readable(const std::string& from, const std::string& to);

}  // namespace dtk::grade
