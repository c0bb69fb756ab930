// Part 7: your own collectives, built from point-to-point messages only.
// Declared, with the exact contract of every function, in include/dtk/my_collectives.hpp.
// Only comm.Send, comm.Recv and comm.Sendrecv may move data here.
#include <dtk/my_collectives.hpp>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtk {

// Helpers you write (chunk boundaries, the element-wise op, one ring pass, ...) go in an
// anonymous namespace here, so that they stay private to this file:
// namespace {
// ...
// }  // namespace

template <class T>
void my_allreduce(const xt::xtensor<T, 1>& src, xt::xtensor<T, 1>& dst, MPI_Op op,
                  Communicator& comm) {
  // TODO (Part 7): ring all-reduce of n = src.size() elements over p = comm.Get_size() ranks.
  //  1. Cut the n elements into p chunks, as evenly as possible: the first n % p chunks get
  //     n / p + 1 elements, the others n / p (with n < p some chunks are empty).
  //  2. Reduce-scatter, p - 1 steps, numbered 1 to p - 1 as in the handout: in each, rank r
  //     sends one chunk to r + 1 and receives another from r - 1 in the same
  //     comm.Sendrecv(send_ptr, send_count, right, recv_ptr, recv_count, left) (pointer form:
  //     chunk c is dst.data() + its first index), then folds its own values of the received
  //     chunk in with op. After step p - 1, rank r holds one whole chunk reduced over all
  //     ranks (in the handout's order, chunk r + 1 mod p: see its figure).
  //  3. All-gather, p - 1 steps: pass the reduced chunks around the same ring until every
  //     rank has all p of them in dst.
  //  Ops: MPI_SUM, MPI_MIN, MPI_MAX (compare op == MPI_SUM; no MPI call needed). With p = 1,
  //  dst is a copy of src.
  throw NotImplemented("my_allreduce", "collectives/my_collectives.cpp");
}

template <class T>
void my_allgather(const xt::xtensor<T, 1>& src, xt::xtensor<T, 1>& dst, Communicator& comm) {
  // TODO (Part 7): copy src into block r of dst (k = src.size() elements at r * k), then run
  // the all-gather half of the ring above with p equal blocks.
  throw NotImplemented("my_allgather", "collectives/my_collectives.cpp");
}

template <class T>
void my_reduce_scatter(const xt::xtensor<T, 1>& src, xt::xtensor<T, 1>& dst, MPI_Op op,
                       Communicator& comm) {
  // TODO (Part 7): the reduce-scatter half of the ring with p equal blocks of k = dst.size()
  // elements, arranged so that rank r ends holding the reduction of block r (not r + 1).
  // src is const: accumulate partial sums in a buffer of your own.
  throw NotImplemented("my_reduce_scatter", "collectives/my_collectives.cpp");
}

template <class T>
void my_alltoall(const xt::xtensor<T, 1>& src, xt::xtensor<T, 1>& dst, Communicator& comm) {
  // TODO (Part 7): with k = src.size() / p, block b of src (elements [b * k, (b + 1) * k))
  // goes to rank b, where it lands as block r of dst (r = this rank). Keep your own block with
  // a copy; exchange the others in p - 1 steps of comm.Sendrecv, pairing the ranks so that
  // nobody waits: in step s (s = 1 .. p - 1), send to r + s and receive from r - s (mod p).
  throw NotImplemented("my_alltoall", "collectives/my_collectives.cpp");
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float, double and int32_t. Do not edit below this
// line: the tests and collectives_bench link against exactly these.
// -------------------------------------------------------------------------------------------
#define DTK_INSTANTIATE_MY_COLLECTIVES(T)                                                     \
  template void my_allreduce<T>(const xt::xtensor<T, 1>&, xt::xtensor<T, 1>&, MPI_Op,         \
                                Communicator&);                                               \
  template void my_allgather<T>(const xt::xtensor<T, 1>&, xt::xtensor<T, 1>&, Communicator&); \
  template void my_reduce_scatter<T>(const xt::xtensor<T, 1>&, xt::xtensor<T, 1>&, MPI_Op,    \
                                     Communicator&);                                          \
  template void my_alltoall<T>(const xt::xtensor<T, 1>&, xt::xtensor<T, 1>&, Communicator&);

DTK_INSTANTIATE_MY_COLLECTIVES(float)
DTK_INSTANTIATE_MY_COLLECTIVES(double)
DTK_INSTANTIATE_MY_COLLECTIVES(std::int32_t)

}  // namespace dtk
