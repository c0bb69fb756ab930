#include "compile/tar_reader.hpp"

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include "text.hpp"

namespace dtk::grade {

namespace {

constexpr std::size_t kBlock = 512;

// A NUL-terminated (or full-width) header field.
std::string field(const char* header, std::size_t offset, std::size_t width) {
  std::size_t length = 0;
  while (length < width && header[offset + length] != '\0') ++length;
  return std::string(header + offset, length);
}

// Octal number (spaces and NULs around it allowed), or GNU base-256 for large sizes.
std::uint64_t number(const char* header, std::size_t offset, std::size_t width) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(header + offset);
  std::uint64_t value = 0;
  if (bytes[0] & 0x80) {
    for (std::size_t i = 1; i < width; ++i) {
      if (value >> 55) throw std::runtime_error("a member's size is absurdly large");
      value = (value << 8) | bytes[i];
    }
    return value;
  }
  for (std::size_t i = 0; i < width; ++i) {
    const char c = header[offset + i];
    if (c >= '0' && c <= '7') {
      value = value * 8 + (c - '0');
    } else if (c != ' ' && c != '\0') {
      throw std::runtime_error("a header holds a malformed number");
    }
  }
  return value;
}

bool checksum_ok(const char* header) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(header[i]);
  }
  try {
    return sum == number(header, 148, 8);
  } catch (const std::runtime_error&) {
    return false;
  }
}

bool all_zero(const char* block) {
  for (std::size_t i = 0; i < kBlock; ++i) {
    if (block[i] != '\0') return false;
  }
  return true;
}

// The "path=" record of a pax extended header, if any.
std::string pax_path(const std::string& records) {
  std::size_t at = 0;
  while (at < records.size()) {
    const std::size_t space = records.find(' ', at);
    if (space == std::string::npos) break;
    const std::size_t length = std::strtoul(records.substr(at, space - at).c_str(), nullptr, 10);
    if (length == 0 || at + length > records.size()) break;
    const std::string record = records.substr(space + 1, at + length - space - 2);
    if (record.rfind("path=", 0) == 0) return record.substr(5);
    at += length;
  }
  return "";
}

std::string clean_path(std::string path) {
  while (path.rfind("./", 0) == 0) path.erase(0, 2);
  return path;
}

// Why a path may not be taken, or "" if it is fine.
std::string unsafe_path(const std::string& path) {
  if (path.empty()) return "empty path";
  if (path[0] == '/') return "absolute path";
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::string part = path.substr(start, slash - start);
    if (part == "..") return "path goes up with \"..\"";
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return "";
}

bool is_gzip(const std::string& data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

// The unpacked bytes of gzip data, refusing more than max_bytes (a small archive can unpack to
// gigabytes).
std::string gunzip(const std::string& data, std::size_t max_bytes) {
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) throw std::runtime_error("zlib failed");
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  std::string unpacked;
  char chunk[65536];
  int status = Z_OK;
  while (status == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk);
    stream.avail_out = sizeof chunk;
    status = inflate(&stream, Z_NO_FLUSH);
    unpacked.append(chunk, sizeof chunk - stream.avail_out);
    if (unpacked.size() > max_bytes) status = Z_MEM_ERROR;
  }
  inflateEnd(&stream);
  if (unpacked.size() > max_bytes) {
    throw std::runtime_error("it is gzip-compressed and unpacks to more than " +
                             std::to_string(max_bytes >> 20) + " MB");
  }
  if (status != Z_STREAM_END) throw std::runtime_error("it is gzip-compressed but corrupt");
  return unpacked;
}

std::string describe_type(char type) {
  switch (type) {
    case '1':
      return "hard link";
    case '2':
      return "symbolic link";
    case '3':
      return "character device";
    case '4':
      return "block device";
    case '6':
      return "FIFO";
    default:
      return "member of type '" + shown_name(std::string(1, type)) + "'";
  }
}

}  // namespace

TarContents read_tar(const std::string& packed, std::size_t max_archive_bytes,
                     std::size_t max_file_bytes) {
  if (packed.empty()) throw std::runtime_error("it is an empty file (0 bytes)");
  const std::string data = is_gzip(packed) ? gunzip(packed, max_archive_bytes) : packed;
  if (data.size() >= kBlock && all_zero(data.data())) return TarContents{{}, {}, true};
  if (data.size() < kBlock || !checksum_ok(data.data())) {
    throw std::runtime_error("it is not a tar archive (make handin.tar makes one)");
  }
  TarContents contents;
  std::string long_name;  // from a GNU 'L' member or a pax 'x' member, for the next member
  std::size_t at = 0;
  while (at + kBlock <= data.size()) {
    const char* header = data.data() + at;
    if (all_zero(header)) break;  // end-of-archive marker
    if (!checksum_ok(header)) throw std::runtime_error("a header is corrupt (bad checksum)");
    const std::uint64_t size = number(header, 124, 12);
    const char type = header[156];
    const std::size_t data_at = at + kBlock;
    if (size > data.size() - data_at) throw std::runtime_error("it is truncated");
    at = data_at + (size + kBlock - 1) / kBlock * kBlock;

    std::string path = field(header, 0, 100);
    if (field(header, 257, 6) == "ustar") {
      const std::string prefix = field(header, 345, 155);
      if (!prefix.empty()) path = prefix + "/" + path;
    }
    if (!long_name.empty()) path = long_name;
    long_name.clear();

    if (type == 'L' || type == 'x') {  // the next member's name
      const std::string payload = data.substr(data_at, std::min<std::uint64_t>(size, 65536));
      long_name = type == 'L' ? field(payload.c_str(), 0, payload.size()) : pax_path(payload);
      continue;
    }
    if (type == 'g' || type == '5' || type == 'K') continue;  // globals, directories
    path = clean_path(path);
    const std::string shown = shown_name(path);
    if (type != '0' && type != '\0' && type != '7') {
      contents.refused.push_back(shown + ": " + describe_type(type) + " (only regular files)");
      continue;
    }
    if (const std::string why = unsafe_path(path); !why.empty()) {
      contents.refused.push_back(shown + ": " + why);
      continue;
    }
    if (size > max_file_bytes) {
      contents.refused.push_back(shown + ": " + std::to_string(size) + " bytes, more than the " +
                                 std::to_string(max_file_bytes) + " allowed");
      continue;
    }
    contents.files.push_back({path, data.substr(data_at, size)});
  }
  return contents;
}

}  // namespace dtk::grade
