// The GPT's threads. Its large products run on BLAS's own threads (share_cores gives each rank
// its share of the cores); its loops over rows, and the attention kernels' many small products
// (one per sequence and head), run on OpenMP's threads instead, as many as BLAS has. Inside
// those loops BLAS must not start threads of its own: SerialBlas says so while it lives.
#pragma once

namespace dtk::gpt {

// While it lives, every BLAS call runs on the thread that makes it. Not thread-safe: make it
// outside the parallel loop.
class SerialBlas {
 public:
  SerialBlas();
  ~SerialBlas();
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;

 private:
  int previous_threads_;
};

}  // namespace dtk::gpt
