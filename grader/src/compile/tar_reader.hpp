// A tar archive read from memory, without extracting anything to disk. Only regular files come
// out; links, devices, FIFOs, absolute paths and paths with ".." are listed as refused.
// Understands ustar/GNU headers, GNU long names and pax path records, plain or gzip-compressed
// (tar -czf, whatever the file's name).
#pragma once

#include <string>
#include <vector>

namespace dtk::grade {

struct TarMember {
  std::string path;     // as archived, "./" prefixes removed
  std::string content;  // regular files within the size limit only
};

struct TarContents {
  std::vector<TarMember> files;      // in archive order
  std::vector<std::string> refused;  // "path: why" (path escaped), one per refused member
  bool empty = false;                // a valid archive with no member at all
};

// Throws std::runtime_error when `data` is not a tar archive, is truncated, or (compressed)
// unpacks to more than max_archive_bytes. Regular files larger than max_file_bytes are refused,
// not read.
TarContents read_tar(const std::string& data, std::size_t max_archive_bytes,
                     std::size_t max_file_bytes);

}  // namespace dtk::grade
