// MemoryProfiler: the peak number of bytes held by the tensors of one pass through a layer.
//
// A layer calls start() when a pass begins, add() for every tensor the pass reads or produces
// (its input, the collected input, the weights, the local and the collected output, ...), and
// end() when the pass is done. peak_bytes() is the largest total seen over all passes. It
// counts tensor data only, as the assignment's estimate does, not the allocator's overhead.
#pragma once

#include <algorithm>
#include <cstdint>

namespace dtk {

class MemoryProfiler {
 public:
  void start() { current_ = 0; }

  template <class Tensor>
  void add(const Tensor& tensor) {
    current_ += tensor.size() * sizeof(typename Tensor::value_type);
  }

  void end() { peak_ = std::max(peak_, current_); }

  std::uint64_t peak_bytes() const { return peak_; }

 private:
  std::uint64_t current_ = 0;
  std::uint64_t peak_ = 0;
};

}  // namespace dtk
