// Part 7 (assignment 2): your own collectives, built from point-to-point messages.
// You implement these functions in collectives/my_collectives.cpp.
#pragma once

#include <mpi.h>

#include <xtensor/xtensor.hpp>

#include "dtk/communicator.hpp"
#include "dtk/not_implemented.hpp"  // what the stubs throw until you write them

namespace dtk {

// The rules for all four functions:
//   - T is float, double or std::int32_t; op is MPI_SUM, MPI_MIN or MPI_MAX.
//   - Any element count >= 0 works, including counts smaller than, or not divisible by, the
//     number of ranks p = comm.Get_size(). dst is pre-sized by the caller; never resize it.
//     src and dst are different tensors (no in-place call).
//   - Every rank of comm calls the function with the same sizes and op.
//   - Inside, only comm.Send, comm.Recv and comm.Sendrecv move data: no collective of the
//     Communicator (Allreduce, ...) and no MPI call of your own.
//   - Results equal MPI's: exactly for int32, within rounding for float and double sums.

// dst[i] = op over all ranks of src[i]; dst.size() == src.size().
// As a ring: split the n elements into p chunks (the first n % p chunks one element longer),
// then p - 1 reduce-scatter steps (afterwards rank r holds the reduction of one whole chunk)
// and p - 1 all-gather steps (pass the reduced chunks around the ring).
template <class T>
void my_allreduce(const xt::xtensor<T, 1>& src, xt::xtensor<T, 1>& dst, MPI_Op op,
                  Communicator& comm);

// dst = the src of rank 0, then the src of rank 1, ...; dst.size() == p * src.size().
template <class T>
void my_allgather(const xt::xtensor<T, 1>& src, xt::xtensor<T, 1>& dst, Communicator& comm);

// src is p blocks of dst.size() elements; rank r receives the op-reduction over all ranks of
// block r. src.size() == p * dst.size().
template <class T>
void my_reduce_scatter(const xt::xtensor<T, 1>& src, xt::xtensor<T, 1>& dst, MPI_Op op,
                       Communicator& comm);

// src and dst are p blocks of k = src.size() / p elements; block b of src goes to rank b, where
// it lands as block r (r = the sender). dst.size() == src.size(), a multiple of p.
template <class T>
void my_alltoall(const xt::xtensor<T, 1>& src, xt::xtensor<T, 1>& dst, Communicator& comm);

}  // namespace dtk
