// The GPT's threads. BLAS computes the products on threads of its own (share_cores gives each
// rank its share of the cores). The loops over rows (LayerNorm, GELU, the loss) and the attention
// kernels' (sequence, head) pairs run on a small pool of as many threads, the calling thread
// among them. Between two loops the pool's threads sleep: a thread that spins while it waits
// for work, as OpenMP's do by default, takes a core from BLAS's threads.
#pragma once

#include <cstddef>
#include <functional>

namespace dtk::gpt {

// Calls body(begin, end) on contiguous ranges that cover [0, n), one range per thread, and
// returns when every call has returned. The threads are as many as BLAS's (1 without OpenBLAS):
// the same n gives the same ranges, so results never depend on timing. With serial_blas, every
// BLAS call inside body runs on the thread that makes it: for many small products made at once
// (the attention kernels), where BLAS's own threads would only get in each other's way. body
// must not throw, and must not call parallel_for itself.
void parallel_for(std::size_t n,
                  const std::function<void(std::size_t begin, std::size_t end)>& body,
                  bool serial_blas = false);

}  // namespace dtk::gpt
