#include "dtk/model/blas_threads.hpp"

#include <algorithm>
#include <thread>

// OpenBLAS's own function, declared weak: with another BLAS it is simply absent (null).
extern "C" void openblas_set_num_threads(int threads) __attribute__((weak));

namespace dtk {

int cores_per_rank(const Communicator& comm) {
  MPI_Comm same_machine = MPI_COMM_NULL;
  MPI_Comm_split_type(comm.handle(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &same_machine);
  int ranks_here = 1;
  MPI_Comm_size(same_machine, &ranks_here);
  MPI_Comm_free(&same_machine);
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores / ranks_here);
}

void set_blas_threads(int threads) {
  if (openblas_set_num_threads) openblas_set_num_threads(threads);
}

}  // namespace dtk
