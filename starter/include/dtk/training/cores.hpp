// How the ranks on one machine share its cores.
//
// OpenBLAS starts one thread per core in every process. When several ranks share a machine
// (8 ranks on 2 cores, say), those threads compete for the same cores and every matrix product
// slows down: each rank should have only its share. And mpirun binds a process it starts alone
// to a single core, which would leave that rank's BLAS and data-loading threads one core to
// share while the others idle.
#pragma once

#include "dtk/communicator.hpp"

namespace dtk {

// Collective over comm. Gives each rank (cores of its machine) / (ranks of comm on it) BLAS
// threads, at least 1, or `threads` of them when it is given (> 0), and lets a rank alone on
// its machine run on every core.
void share_cores(const Communicator& comm, int threads = 0);

}  // namespace dtk
