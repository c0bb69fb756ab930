// Kit self-test: the IDX loader reads small generated files, gzipped or not, and refuses
// missing and corrupt ones with one line naming the file.
//   ./build/tests/kit/kit_training_idx_loader
#include "dtk_test.hpp"

#include <dtk/data/mnist.hpp>

#include <zlib.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

// An IDX file of unsigned bytes: header (type 0x08, the dimensions big-endian), then values.
Bytes idx_bytes(const std::vector<std::uint32_t>& shape, const Bytes& values) {
  Bytes bytes = {0, 0, 0x08, static_cast<std::uint8_t>(shape.size())};
  for (std::uint32_t size : shape) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back((size >> shift) & 0xff);
  }
  bytes.insert(bytes.end(), values.begin(), values.end());
  return bytes;
}

void write_plain(const fs::path& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void write_gzipped(const fs::path& path, const Bytes& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(file);
}

// A fresh directory for one test case, removed afterwards.
class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("dtk-idx-test-" + std::to_string(getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path operator/(const std::string& name) const { return path_ / name; }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

// 3 images of 2 x 2 pixels (pixel value 10 * image + index) and their labels 0, 1, 2.
const Bytes kImageValues = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
const Bytes kImages = idx_bytes({3, 2, 2}, kImageValues);
const Bytes kLabels = idx_bytes({3}, {0, 1, 2});

// Writes a complete MNIST-format directory: the training files gzipped, the test files plain.
void write_data_set(const TempDir& dir) {
  write_gzipped(dir / "train-images-idx3-ubyte.gz", kImages);
  write_gzipped(dir / "train-labels-idx1-ubyte.gz", kLabels);
  write_plain(dir / "t10k-images-idx3-ubyte", kImages);
  write_plain(dir / "t10k-labels-idx1-ubyte", kLabels);
}

// Runs `load`, which must throw a DataError whose one-line message holds every piece of
// `expected`.
template <class Load>
void check_refused(dtk::testing::Checks& check, const std::string& what, Load load,
                   const std::vector<std::string>& expected) {
  try {
    load();
    check.that(false, what + ": read without error");
  } catch (const dtk::DataError& e) {
    const std::string message = e.what();
    check.that(message.find('\n') == std::string::npos, what + ": message is not one line");
    for (const std::string& piece : expected) {
      check.that(message.find(piece) != std::string::npos,
                 what + ": message '" + message + "' does not contain '" + piece + "'");
    }
  }
}

}  // namespace

TEST_CASE("kit | idx loader: reads plain and gzipped files", "[training]") {
  dtk::testing::on_every_rank(1, [](dtk::testing::Checks& check) {
    TempDir dir;
    write_plain(dir / "plain", kImages);
    write_gzipped(dir / "packed.gz", kImages);
    for (const std::string name : {"plain", "packed.gz"}) {
      const dtk::IdxArray array = dtk::read_idx((dir / name).string());
      check.that(array.shape == std::vector<std::size_t>{3, 2, 2}, name + ": shape not (3, 2, 2)");
      check.that(array.values == kImageValues, name + ": values differ from those written");
    }
  });
}

TEST_CASE("kit | idx loader: loads an MNIST-format directory, at once or in the background",
          "[training]") {
  dtk::testing::on_every_rank(1, [](dtk::testing::Checks& check) {
    TempDir dir;
    write_data_set(dir);
    for (const bool in_background : {false, true}) {
      const dtk::Mnist data = dtk::load_mnist(dir.str(), 10, in_background);
      data.train.wait_for(data.train.count);
      for (const dtk::ImageSet* set : {&data.train, &data.test}) {
        check.equal("images", 3, set->count);
        check.equal("pixels per image", 4, set->pixels);
        check.that(set->images == kImageValues, "pixels differ from those written");
        check.that(set->labels == Bytes({0, 1, 2}), "labels differ from those written");
      }
    }
  });
}

TEST_CASE("kit | idx loader: refuses missing and corrupt files with one clear line", "[training]") {
  dtk::testing::on_every_rank(1, [](dtk::testing::Checks& check) {
    TempDir dir;
    const auto read = [&](const std::string& name) {
      return [&dir, name] { dtk::read_idx((dir / name).string()); };
    };
    Bytes truncated = kImages;
    truncated.resize(truncated.size() - 3);
    Bytes not_bytes = kImages;
    not_bytes[2] = 0x0d;  // IDX type code of float
    Bytes longer = kImages;
    longer.push_back(99);
    write_plain(dir / "truncated", truncated);
    write_gzipped(dir / "truncated.gz", truncated);
    write_plain(dir / "bad-magic", {'h', 'e', 'l', 'l', 'o', '\n'});
    write_plain(dir / "float", not_bytes);
    write_plain(dir / "longer", longer);
    Bytes broken_gzip = {0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0x03};  // gzip header ...
    broken_gzip.insert(broken_gzip.end(), 40, 0xff);                 // ... then garbage
    write_plain(dir / "broken.gz", broken_gzip);

    check_refused(check, "missing file", read("absent"), {"absent", "No such file"});
    check_refused(check, "truncated file", read("truncated"), {"truncated", "ends early"});
    check_refused(check, "truncated gzip", read("truncated.gz"), {"truncated.gz"});
    check_refused(check, "not IDX", read("bad-magic"), {"bad-magic", "not an IDX file"});
    check_refused(check, "float values", read("float"), {"float", "type code 13"});
    check_refused(check, "extra bytes", read("longer"), {"longer", "more data"});
    check_refused(check, "corrupt gzip", read("broken.gz"), {"broken.gz", "corrupt gzip"});
  });
}

TEST_CASE("kit | idx loader: refuses inconsistent data sets", "[training]") {
  dtk::testing::on_every_rank(1, [](dtk::testing::Checks& check) {
    TempDir dir;
    const auto load = [&] { dtk::load_mnist(dir.str(), 10); };
    check_refused(check, "empty directory", load, {"train-images-idx3-ubyte", "No such file"});

    write_data_set(dir);
    write_plain(dir / "t10k-labels-idx1-ubyte", idx_bytes({2}, {0, 1}));
    check_refused(check, "2 labels for 3 images", load, {"2 labels", "3 images"});

    write_plain(dir / "t10k-labels-idx1-ubyte", idx_bytes({3}, {0, 10, 2}));
    check_refused(check, "label 10", load, {"t10k-labels-idx1-ubyte", "label 10"});

    write_plain(dir / "t10k-labels-idx1-ubyte", kLabels);
    write_plain(dir / "t10k-images-idx3-ubyte", idx_bytes({3, 4}, Bytes(12, 0)));
    check_refused(check, "2-D images", load, {"t10k-images-idx3-ubyte", "3 dimensions"});
  });
}

TEST_CASE(
    "kit | idx loader: a corrupt file read in the background fails when its images are "
    "waited for",
    "[training]") {
  dtk::testing::on_every_rank(1, [](dtk::testing::Checks& check) {
    TempDir dir;
    write_data_set(dir);
    Bytes truncated = kImages;
    truncated.resize(truncated.size() - 3);
    fs::remove(dir / "train-images-idx3-ubyte.gz");
    write_gzipped(dir / "train-images-idx3-ubyte.gz", truncated);
    const dtk::Mnist data = dtk::load_mnist(dir.str(), 10, /*train_in_background=*/true);
    check_refused(check, "truncated images, read in the background",
                  [&] { data.train.wait_for(data.train.count); },
                  {"train-images-idx3-ubyte.gz", "ends early"});
  });
}
