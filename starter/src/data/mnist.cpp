#include "dtk/data/mnist.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <future>
#include <thread>

namespace dtk {

namespace {

// DIR/name.gz if it exists, else DIR/name (read_idx then names the missing file).
std::string find_file(const std::string& dir, const std::string& name) {
  const std::string gzipped = dir + "/" + name + ".gz";
  return std::ifstream(gzipped).good() ? gzipped : dir + "/" + name;
}

ImageSet read_split(const std::string& dir, const std::string& prefix, int num_classes,
                    bool in_background) {
  const std::string images_path = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");
  IdxReader images(images_path);
  IdxArray labels = read_idx(labels_path);
  if (images.shape().size() != 3) {
    throw DataError(images_path + ": expected 3 dimensions (images, rows, columns), found " +
                    std::to_string(images.shape().size()));
  }
  if (labels.shape.size() != 1) {
    throw DataError(labels_path + ": expected 1 dimension (labels), found " +
                    std::to_string(labels.shape.size()));
  }
  const std::size_t count = images.shape()[0], pixels = images.shape()[1] * images.shape()[2];
  if (labels.shape[0] != count) {
    throw DataError(labels_path + ": holds " + std::to_string(labels.shape[0]) + " labels but " +
                    images_path + " holds " + std::to_string(count) + " images");
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (labels.values[i] >= num_classes) {
      throw DataError(labels_path + ": label " + std::to_string(labels.values[i]) + " (image " +
                      std::to_string(i) + ") is not one of the model's " +
                      std::to_string(num_classes) + " classes");
    }
  }

  ImageSet set{count, pixels, std::vector<std::uint8_t>(images.size()), std::move(labels.values),
               nullptr};
  if (in_background) {
    set.reading =
        std::make_unique<BackgroundRead>(std::move(images), set.images.data(), count, pixels);
  } else {
    images.read(set.images.data(), set.images.size());
    images.expect_end();
  }
  return set;
}

// A barrier that sleeps instead of spinning. MPI waits by polling, which would take the CPU
// from rank 0 while it decompresses when there are more ranks than cores.
void sleepy_barrier(MPI_Comm comm) {
  MPI_Request request;
  MPI_Ibarrier(comm, &request);
  for (int done = 0; MPI_Test(&request, &done, MPI_STATUS_IGNORE), !done;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void broadcast(std::vector<std::uint8_t>& bytes, MPI_Comm comm) {
  unsigned long long size = bytes.size();
  MPI_Bcast(&size, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
  bytes.resize(size);
  constexpr std::size_t kChunk = std::size_t{1} << 30;  // an MPI count is an int
  for (std::size_t done = 0; done < size; done += kChunk) {
    const int count = static_cast<int>(std::min<std::size_t>(kChunk, size - done));
    MPI_Bcast(bytes.data() + done, count, MPI_UNSIGNED_CHAR, 0, comm);
  }
}

void broadcast(std::string& text, MPI_Comm comm) {
  std::vector<std::uint8_t> bytes(text.begin(), text.end());
  broadcast(bytes, comm);
  text.assign(bytes.begin(), bytes.end());
}

void broadcast(ImageSet& set, MPI_Comm comm) {
  unsigned long long dims[2] = {set.count, set.pixels};
  MPI_Bcast(dims, 2, MPI_UNSIGNED_LONG_LONG, 0, comm);
  set.count = dims[0];
  set.pixels = dims[1];
  broadcast(set.images, comm);
  broadcast(set.labels, comm);
}

}  // namespace

BackgroundRead::BackgroundRead(IdxReader reader, std::uint8_t* images, std::size_t count,
                               std::size_t pixels)
    : count_(count), thread_(&BackgroundRead::run, this, std::move(reader), images, pixels) {}

BackgroundRead::~BackgroundRead() { thread_.join(); }

void BackgroundRead::run(IdxReader reader, std::uint8_t* images, std::size_t pixels) {
  constexpr std::size_t kImagesPerStep = 512;  // about 400 KB of Fashion-MNIST
  try {
    for (std::size_t done = 0; done < count_;) {
      const std::size_t n = std::min(kImagesPerStep, count_ - done);
      reader.read(images + done * pixels, n * pixels);
      done += n;
      std::lock_guard<std::mutex> lock(mutex_);
      ready_ = done;
      progress_.notify_all();
    }
    reader.expect_end();
  } catch (...) {  // a DataError, for a corrupt file: the trainer rethrows it
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  finished_ = true;
  progress_.notify_all();
}

void BackgroundRead::wait_for(std::size_t rows) {
  std::unique_lock<std::mutex> lock(mutex_);
  progress_.wait(lock, [&] { return finished_ || (ready_ >= rows && rows < count_); });
  if (error_) std::rethrow_exception(error_);
}

Mnist load_mnist(const std::string& dir, int num_classes, bool train_in_background) {
  // Decompressing is most of the start-up time: read the test split on a second thread.
  std::future<ImageSet> test =
      std::async(std::launch::async, read_split, dir, "t10k", num_classes, false);
  ImageSet train = read_split(dir, "train", num_classes, train_in_background);
  return Mnist{std::move(train), test.get()};
}

Mnist load_mnist_on_rank0(const Communicator& comm, const std::string& dir, int num_classes) {
  if (comm.Get_size() == 1) return load_mnist(dir, num_classes, /*train_in_background=*/true);
  Mnist data;
  std::string error;  // empty: rank 0 read the data set
  if (comm.Get_rank() == 0) {
    try {
      data = load_mnist(dir, num_classes);
    } catch (const DataError& e) {
      error = e.what();
    }
  }
  sleepy_barrier(comm.handle());
  broadcast(error, comm.handle());
  if (!error.empty()) throw DataError(error);
  broadcast(data.train, comm.handle());
  broadcast(data.test, comm.handle());
  return data;
}

}  // namespace dtk
