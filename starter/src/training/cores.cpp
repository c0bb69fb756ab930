#include "dtk/training/cores.hpp"

#include <algorithm>
#include <thread>

#ifdef __linux__
#include <sched.h>
#endif

// OpenBLAS's own function, declared weak: with another BLAS it is simply absent (null).
extern "C" void openblas_set_num_threads(int threads) __attribute__((weak));

namespace dtk {

namespace {

// The ranks of comm on this machine.
int ranks_on_this_machine(const Communicator& comm) {
  MPI_Comm same_machine = MPI_COMM_NULL;
  MPI_Comm_split_type(comm.handle(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &same_machine);
  int ranks = 1;
  MPI_Comm_size(same_machine, &ranks);
  MPI_Comm_free(&same_machine);
  return ranks;
}

// Lets this process, and the threads it starts from now on, run on any of the `cores` cores.
void allow_every_core(int cores) {
#ifdef __linux__
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int core = 0; core < cores && core < CPU_SETSIZE; ++core) CPU_SET(core, &all);
  sched_setaffinity(0, sizeof all, &all);  // if refused, the rank keeps its binding
#endif
}

}  // namespace

void share_cores(const Communicator& comm, int threads) {
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int ranks = ranks_on_this_machine(comm);
  if (ranks == 1) allow_every_core(cores);
  const int share = threads > 0 ? threads : std::max(1, cores / ranks);
  if (openblas_set_num_threads) openblas_set_num_threads(share);
}

}  // namespace dtk
