// Directory trees a submission may have built, measured and removed through directory file
// descriptors, never by path: at any depth (paths far beyond PATH_MAX), never following a
// symbolic link, never leaving the file system the walk starts on, and with at most three
// descriptors open whatever the depth, so that neither a chain of a million directories nor
// one planted link can lead a walk astray.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace dtk::grade {

// What a removal could not remove: at most `kept` lines "PATH: why" (the path escaped, its
// middle levels left out when deep), then how many more.
struct RemovalProblems {
  static constexpr std::size_t kept = 20;
  std::vector<std::string> lines;
  std::size_t more = 0;

  void add(std::string line);
  std::size_t count() const { return lines.size() + more; }
};

// Disk space used by `path` and, for a directory, by everything under it.
std::size_t disk_bytes(const std::string& path);

// Disk space used by the files of user `uid` (group `gid`) below `dir`, with everything under
// them: found at any depth, in every directory that user may enter and list.
std::size_t disk_bytes_of(const std::string& dir, uid_t uid, gid_t gid);

// Removes everything below `dir` (not `dir` itself), making each directory enterable first.
// Run it as the user who owns those files: it then removes nothing that user could not.
void remove_below(const std::string& dir, RemovalProblems& problems);

// Removes the files of user `uid` (group `gid`) below `dir`, with everything under them: found
// at any depth, in every directory that user may enter and list. Run it as that user.
void remove_owned_below(const std::string& dir, uid_t uid, gid_t gid, RemovalProblems& problems);

}  // namespace dtk::grade
