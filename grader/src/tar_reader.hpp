// A tar archive read from memory, without extracting anything to disk. Only regular files come
// out; links, devices, FIFOs, absolute paths and paths with ".." are listed as refused.
// Understands ustar/GNU headers, GNU long names and pax path records.
#pragma once

#include <string>
#include <vector>

namespace dtk::grade {

struct TarMember {
  std::string path;     // as archived, "./" prefixes removed
  std::string content;  // regular files within the size limit only
};

struct TarContents {
  std::vector<TarMember> files;
  std::vector<std::string> refused;  // "path: why", one per refused member
};

// Throws std::runtime_error when `data` is not a tar archive (with a hint for gzip), or is
// truncated. Regular files larger than max_file_bytes are refused, not read.
TarContents read_tar(const std::string& data, std::size_t max_file_bytes);

}  // namespace dtk::grade
