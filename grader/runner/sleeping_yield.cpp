// Open MPI waits for a message by polling. With more ranks than cores (8 ranks on 2) it calls
// sched_yield between polls (mpi_yield_when_idle), yet the waiting ranks still take most of the
// cores from the ranks that have work: a test of 8 ranks runs several times slower than it must.
// The runner exports its own sched_yield, so Open MPI's calls bind here (as the student
// library's MPI calls bind to forbidden_mpi.cpp): a waiting rank sleeps briefly instead. Only
// how a rank waits changes: what is sent and received, and whether a test deadlocks, stay the
// same. With no more ranks than cores (the speed bonus's timings) Open MPI never yields, so
// nothing sleeps. Ranks stuck in a deadlock until the watchdog ends them took both cores: a
// grading of the adversarial_deadlock self-test used 70 s of CPU, now 30 s.
#include <time.h>

extern "C" int sched_yield(void) {
  static constexpr timespec kNap{0, 50'000};  // 50 us: a message waits about that much longer
  nanosleep(&kNap, nullptr);
  return 0;
}
