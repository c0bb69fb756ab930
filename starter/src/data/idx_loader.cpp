#include "dtk/data/idx_loader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dtk {

namespace {

constexpr std::uint8_t kUnsignedByte = 0x08;              // IDX type code of std::uint8_t values
constexpr std::size_t kMaxValues = std::size_t{1} << 32;  // a header asking for more is corrupt

}  // namespace

IdxArray read_idx(const std::string& path) {
  IdxReader reader(path);
  IdxArray array{reader.shape(), std::vector<std::uint8_t>(reader.size())};
  reader.read(array.values.data(), array.values.size());
  reader.expect_end();
  return array;
}

// gzopen and gzread read plain files unchanged: one code path serves both kinds of file.
IdxReader::IdxReader(const std::string& path) : path_(path) {
  errno = 0;
  file_.reset(gzopen(path_.c_str(), "rb"));
  if (!file_) fail(errno ? std::strerror(errno) : "cannot open it");
  gzbuffer(file_.get(), 1 << 20);  // fewer, larger reads: decompression dominates loading

  std::uint8_t magic[4];
  if (read_bytes(magic, 4) < 4) fail("not an IDX file (shorter than its magic number)");
  if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0) fail("not an IDX file (bad magic number)");
  if (magic[2] != kUnsignedByte) {
    fail("IDX type code " + std::to_string(magic[2]) +
         " is not 8 (unsigned bytes), the type of MNIST-format files");
  }
  size_ = 1;
  for (int d = 0; d < magic[3]; ++d) {
    std::uint8_t bytes[4];
    if (read_bytes(bytes, 4) < 4)
      fail("file ends early, in the size of dimension " + std::to_string(d));
    shape_.push_back(std::size_t{bytes[0]} << 24 | std::size_t{bytes[1]} << 16 |
                     std::size_t{bytes[2]} << 8 | std::size_t{bytes[3]});
    size_ *= shape_.back();
    if (size_ > kMaxValues) fail("corrupt header: it announces more than 2^32 values");
  }
}

void IdxReader::read(std::uint8_t* out, std::size_t count) {
  const std::size_t got = read_bytes(out, count);
  values_read_ += got;
  if (got < count) {
    fail("file ends early: the header announces " + std::to_string(size_) + " values, found " +
         std::to_string(values_read_));
  }
}

void IdxReader::expect_end() {
  std::uint8_t extra;
  if (read_bytes(&extra, 1) > 0) fail("more data after the values the header announces");
}

// Reads up to `count` bytes; fewer only at the end of the file.
std::size_t IdxReader::read_bytes(std::uint8_t* out, std::size_t count) {
  std::size_t done = 0;
  while (done < count) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(count - done, 1u << 30));
    const int got = gzread(file_.get(), out + done, chunk);
    if (got < 0) {
      int code = Z_OK;
      std::string message = gzerror(file_.get(), &code);
      const std::string path_prefix = path_ + ": ";  // zlib names the file too: once is enough
      if (message.rfind(path_prefix, 0) == 0) message.erase(0, path_prefix.size());
      fail("corrupt gzip data (" + message + ")");
    }
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

void IdxReader::fail(const std::string& why) const { throw DataError(path_ + ": " + why); }

}  // namespace dtk
