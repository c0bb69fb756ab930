// Open MPI waits for a message by polling. With more ranks than cores (8 ranks on 2), or when
// told to (mpi_yield_when_idle: every grading launch but the speed bonus's timings,
// scoring/test_runs.hpp), it calls sched_yield between polls, yet the waiting ranks still take
// most of the cores from the ranks that have work: a test of 8 ranks runs several times slower
// than it must. The runner exports its own sched_yield, so Open MPI's calls bind here (as the
// student library's MPI calls bind to forbidden_mpi.cpp): a waiting rank sleeps instead. Only
// how a rank waits changes: what is sent and received, and whether a test deadlocks, stay the
// same. The timings never yield, so nothing sleeps there.
//
// A short nap keeps a message's wait short; but a rank that has polled for a while waits on
// something slow (a peer that computes, a deadlock the watchdog will end), and even short naps,
// thousands a second on each of 8 ranks, kept both cores busy: a grading of the
// deadlock_interleaved_blocking_sends self-test used 47 s of CPU in 30 s. So the naps grow:
// after kPatientPolls polls in a row a rank naps kLongNap, and the first call after it did
// anything else (a gap between two calls longer than a poll) starts short again.
#include <time.h>

namespace {

constexpr long kShortNapNs = 50'000;    // 50 us: a message waits about that much longer
constexpr long kLongNapNs = 1'000'000;  // 1 ms, once the rank has waited ~10 ms already
constexpr int kPatientPolls = 40;
constexpr long kPollGapNs = 200'000;  // a call this soon after the last returned: still polling

long long now_ns() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1'000'000'000LL + now.tv_nsec;
}

}  // namespace

extern "C" int sched_yield(void) {
  thread_local long long last_return_ns = 0;
  thread_local int polls = 0;
  polls = now_ns() - last_return_ns < kPollGapNs ? polls + 1 : 0;
  const timespec nap{0, polls < kPatientPolls ? kShortNapNs : kLongNapNs};
  nanosleep(&nap, nullptr);
  last_return_ns = now_ns();
  return 0;
}
