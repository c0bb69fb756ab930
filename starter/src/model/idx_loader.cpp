#include "dtk/model/idx_loader.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace dtk {

namespace {

constexpr std::uint8_t kUnsignedByte = 0x08;  // IDX type code of std::uint8_t values
constexpr std::size_t kMaxValues = std::size_t{1} << 32;  // a header asking for more is corrupt

// A gzFile that closes itself. gzopen/gzread read plain files unchanged, so one code path
// serves both compressed and uncompressed data sets.
struct GzCloser {
  void operator()(gzFile file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

class IdxReader {
 public:
  explicit IdxReader(std::string path) : path_(std::move(path)) {
    errno = 0;
    file_.reset(gzopen(path_.c_str(), "rb"));
    if (!file_) fail(errno ? std::strerror(errno) : "cannot open it");
    gzbuffer(file_.get(), 1 << 20);  // fewer, larger reads: decompression dominates loading
  }

  // Reads exactly `count` bytes into `destination`, or fails saying what was expected.
  void read(void* destination, std::size_t count, const std::string& what) {
    auto* bytes = static_cast<std::uint8_t*>(destination);
    std::size_t done = 0;
    while (done < count) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(count - done, 1u << 30));
      const int got = gzread(file_.get(), bytes + done, chunk);
      if (got < 0) fail_with_zlib_error();
      if (got == 0) {
        fail("file ends early: " + what + " needs " + std::to_string(count) + " bytes, found " +
             std::to_string(done));
      }
      done += static_cast<std::size_t>(got);
    }
  }

  std::uint32_t read_big_endian_u32(const std::string& what) {
    std::uint8_t bytes[4];
    read(bytes, 4, what);
    return std::uint32_t{bytes[0]} << 24 | std::uint32_t{bytes[1]} << 16 |
           std::uint32_t{bytes[2]} << 8 | std::uint32_t{bytes[3]};
  }

  void expect_end() {
    std::uint8_t extra;
    const int got = gzread(file_.get(), &extra, 1);
    if (got < 0) fail_with_zlib_error();
    if (got > 0) fail("more data after the values the header announces");
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw DataError(path_ + ": " + why);
  }

 private:
  [[noreturn]] void fail_with_zlib_error() const {
    int code = Z_OK;
    std::string message = gzerror(file_.get(), &code);
    const std::string path_prefix = path_ + ": ";  // zlib names the file too: once is enough
    if (message.rfind(path_prefix, 0) == 0) message.erase(0, path_prefix.size());
    fail("corrupt gzip data (" + message + ")");
  }

  std::string path_;
  GzFile file_;
};

}  // namespace

IdxArray read_idx(const std::string& path) {
  IdxReader reader(path);
  std::uint8_t magic[4];
  reader.read(magic, 4, "the IDX magic number");
  if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0) {
    reader.fail("not an IDX file (bad magic number)");
  }
  if (magic[2] != kUnsignedByte) {
    reader.fail("IDX type code " + std::to_string(magic[2]) +
                " is not 8 (unsigned bytes), the type of MNIST-format files");
  }

  IdxArray array;
  std::size_t count = 1;
  for (int d = 0; d < magic[3]; ++d) {
    array.shape.push_back(reader.read_big_endian_u32("the size of dimension " + std::to_string(d)));
    count *= array.shape.back();
    if (count > kMaxValues) reader.fail("corrupt header: it announces more than 2^32 values");
  }
  array.values.resize(count);
  reader.read(array.values.data(), count, "the values");
  reader.expect_end();
  return array;
}

}  // namespace dtk
