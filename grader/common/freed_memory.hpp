// Keeping freed memory: glibc returns buffers of 128 KB and more, and the heap's free top, to the
// system when they are freed, so the next allocation touches fresh pages. On a virtual machine
// that gives freed pages back to its host (a balloon, "free page reporting") a fresh page costs
// ~10 us: a 4 MB buffer malloc'd and freed inside every MPI_Allreduce then costs ~20 ms a call,
// 15 times the collective itself (the speed bonus would compare page faults), and readelf, which
// reads each section of an object into a fresh buffer, lists a student's object in 2.5 s, not
// 0.1 s. The grader, the runner and every command the sandbox runs keep what they free.
#pragma once

namespace dtk::grade {

// Keeps this process's freed memory (mallopt); called first in main.
void keep_freed_memory();

// The same settings for a program about to start ("GLIBC_TUNABLES=..."), for its environment.
const char* keep_freed_memory_environment();

}  // namespace dtk::grade
