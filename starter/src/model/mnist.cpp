#include "dtk/model/mnist.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

namespace dtk {

namespace {

// DIR/name.gz if it exists, else DIR/name (read_idx then names the missing file).
std::string find_file(const std::string& dir, const std::string& name) {
  const std::string gzipped = dir + "/" + name + ".gz";
  return std::ifstream(gzipped).good() ? gzipped : dir + "/" + name;
}

ImageSet read_split(const std::string& dir, const std::string& prefix, int num_classes) {
  const std::string images_path = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");
  IdxArray images = read_idx(images_path);
  IdxArray labels = read_idx(labels_path);
  if (images.shape.size() != 3) {
    throw DataError(images_path + ": expected 3 dimensions (images, rows, columns), found " +
                    std::to_string(images.shape.size()));
  }
  if (labels.shape.size() != 1) {
    throw DataError(labels_path + ": expected 1 dimension (labels), found " +
                    std::to_string(labels.shape.size()));
  }
  if (labels.shape[0] != images.shape[0]) {
    throw DataError(labels_path + ": holds " + std::to_string(labels.shape[0]) +
                    " labels but " + images_path + " holds " + std::to_string(images.shape[0]) +
                    " images");
  }
  for (std::size_t i = 0; i < labels.values.size(); ++i) {
    if (labels.values[i] >= num_classes) {
      throw DataError(labels_path + ": label " + std::to_string(labels.values[i]) + " at " +
                      std::to_string(i) + " is not below the " + std::to_string(num_classes) +
                      " classes of the model");
    }
  }
  return ImageSet{images.shape[0], images.shape[1] * images.shape[2], std::move(images.values),
                  std::move(labels.values)};
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

Mnist load_mnist(const std::string& dir, int num_classes) {
  return Mnist{read_split(dir, "train", num_classes), read_split(dir, "t10k", num_classes)};
}

Mnist load_mnist_on_rank0(const Communicator& comm, const std::string& dir, int num_classes) {
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
