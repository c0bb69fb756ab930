#include "freed_memory.hpp"

#include <malloc.h>

namespace dtk::grade {

namespace {
constexpr int kMmapThreshold = 32 << 20;  // glibc's largest: buffers below it come from the heap
constexpr int kTrimThreshold = 1 << 30;   // the heap's free top is returned beyond 1 GB only
}  // namespace

void keep_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
}

const char* keep_freed_memory_environment() {
  static_assert(kMmapThreshold == 33554432 && kTrimThreshold == 1073741824);
  return "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:"
         "glibc.malloc.trim_threshold=1073741824";
}

}  // namespace dtk::grade
