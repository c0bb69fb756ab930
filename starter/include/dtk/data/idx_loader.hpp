// Reading IDX files, the format of MNIST and Fashion-MNIST.
//
// An IDX file is a 4-byte magic number (two zero bytes, a type code, the number of dimensions),
// the size of every dimension as a big-endian 32-bit integer, then the values in row-major
// order. MNIST-style data sets use type 0x08 (unsigned bytes) only, and so does this loader.
// Files may be gzip-compressed (as Debian ships them) or not: zlib reads both.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtk {

// A data file that is missing, unreadable or not what it should be. what() is one line that
// names the file and says what is wrong with it.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The contents of one IDX file of unsigned bytes.
struct IdxArray {
  std::vector<std::size_t> shape;    // e.g. {60000, 28, 28} for images, {60000} for labels
  std::vector<std::uint8_t> values;  // product(shape) values, row-major
};

// Reads the IDX file at `path` (gzipped or not), to its end. Throws DataError if the file is
// missing, is not a gzip stream or IDX file, holds another type than unsigned bytes, or holds
// fewer or more values than its header announces.
IdxArray read_idx(const std::string& path);

// Reads one IDX file in pieces: the header when constructed, then the values in as many read()
// calls as the caller likes, so that it can use the first values while later ones are still
// being decompressed. Every method throws DataError as read_idx does.
class IdxReader {
 public:
  explicit IdxReader(const std::string& path);

  const std::vector<std::size_t>& shape() const { return shape_; }
  std::size_t size() const { return size_; }  // values announced by the header

  // Reads the next `count` values into `out`.
  void read(std::uint8_t* out, std::size_t count);

  // Once all values are read: checks that the file ends there.
  void expect_end();

 private:
  struct GzClose {
    void operator()(gzFile file) const { gzclose(file); }
  };

  std::size_t read_bytes(std::uint8_t* out, std::size_t count);
  [[noreturn]] void fail(const std::string& why) const;

  std::string path_;
  std::unique_ptr<gzFile_s, GzClose> file_;
  std::vector<std::size_t> shape_;
  std::size_t size_ = 0, values_read_ = 0;
};

}  // namespace dtk
