// MNIST-format data sets (MNIST, Fashion-MNIST): images of unsigned-byte pixels, one label each.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dtk/communicator.hpp"
#include "dtk/data/idx_loader.hpp"

namespace dtk {

// Images still being decompressed by a background thread, so that training can start on the
// first ones: decompressing Fashion-MNIST's training images takes about 0.2 s.
class BackgroundRead {
 public:
  // Starts a thread that reads `count` images of `pixels` bytes each from `reader` into
  // `images`, which must stay allocated until this object is destroyed.
  BackgroundRead(IdxReader reader, std::uint8_t* images, std::size_t count, std::size_t pixels);
  ~BackgroundRead();  // waits for the thread

  // Blocks until images [0, rows) are in memory (for the last rows: until the whole file has
  // been read and checked). Throws the DataError the thread met, if any.
  void wait_for(std::size_t rows);

 private:
  void run(IdxReader reader, std::uint8_t* images, std::size_t pixels);

  const std::size_t count_;
  std::mutex mutex_;
  std::condition_variable progress_;
  std::size_t ready_ = 0;  // images in memory
  bool finished_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // declared last: it starts once the members above exist
};

// The images and labels of one split (training or test).
struct ImageSet {
  std::size_t count = 0;             // number of images
  std::size_t pixels = 0;            // pixels per image (rows * columns)
  std::vector<std::uint8_t> images;  // count * pixels values, one image after another
  std::vector<std::uint8_t> labels;  // count labels
  // Set while `images` is still being filled in. Declared after it, so destroyed before it:
  // the thread has stopped writing by the time `images` is freed.
  std::unique_ptr<BackgroundRead> reading;

  // Waits until images [0, rows) are in memory: at once unless they are read in the background.
  void wait_for(std::size_t rows) const {
    if (reading) reading->wait_for(rows);
  }
};

struct Mnist {
  ImageSet train, test;
};

// Where Debian's dataset-fashion-mnist package installs Fashion-MNIST.
inline const char* const kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Reads the four files of an MNIST-format directory: train-images-idx3-ubyte,
// train-labels-idx1-ubyte, t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, each gzipped
// (name.gz, preferred) or not. Throws DataError if a file is missing or corrupt, if images are
// not 3-D or labels not 1-D, if the counts of images and labels differ, or if a label is not
// below num_classes. With train_in_background, returns once the training images' header is
// read and decompresses them on a background thread (train.wait_for waits for them, and throws
// the DataError of a corrupt file).
Mnist load_mnist(const std::string& dir, int num_classes, bool train_in_background = false);

// Collective: rank 0 of `comm` reads the directory with load_mnist and broadcasts what it read,
// so that the files are decompressed once however many ranks there are. Returns the data set
// on every rank, or throws the same DataError on every rank. A single rank has nothing to
// broadcast: it gets its training images in the background while it trains.
Mnist load_mnist_on_rank0(const Communicator& comm, const std::string& dir, int num_classes);

}  // namespace dtk
