// Keeping freed memory, called first in main (before MPI starts). glibc gives buffers of 128 KB
// and more, and the heap's free top, back to the system when they are freed, so the next
// allocation touches fresh pages. On a virtual machine that hands freed pages back to its host
// (a balloon, "free page reporting") a fresh page costs about 10 us: the 4 MB buffer Open MPI
// mallocs and frees inside every MPI_Allreduce then costs ~20 ms a call, 15 times the collective
// itself, and readelf lists an object in 2.5 s, not 0.1 s. Every program of the kit, its tests,
// the grader and the commands the grader runs keep what they free. (Elsewhere than glibc, as on
// macOS, nothing changes.)
#pragma once

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace dtk {

namespace freed_memory {
constexpr int kMmapThreshold = 32 << 20;  // glibc's largest: smaller buffers come from the heap
constexpr int kTrimThreshold = 1 << 30;   // the heap's free top is given back beyond 1 GB only
}  // namespace freed_memory

// This process keeps what it frees.
inline void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, freed_memory::kMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, freed_memory::kTrimThreshold);
#endif
}

// The same settings for a program about to start: its environment's GLIBC_TUNABLES.
inline const char* keep_freed_memory_environment() {
  static_assert(freed_memory::kMmapThreshold == 33554432 &&
                freed_memory::kTrimThreshold == 1073741824);
  return "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:"
         "glibc.malloc.trim_threshold=1073741824";
}

}  // namespace dtk
