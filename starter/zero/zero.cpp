// Part 9: ZeRO, sharded data parallelism.
// Declared, with the exact contract of every function, in include/dtk/zero.hpp.
// The only MPI use allowed here: dp_comm.Allreduce in zero1_grad_shard, dp_comm.Reduce_scatter
// in zero2_grad_shard, dp_comm.Allgather in zero_gather_params (one call each).
#include <dtk/zero.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include <xtensor/xview.hpp>

namespace dtk {

// Helpers you write (argument checks, the shard size s, ...) go in an anonymous namespace
// here, so that they stay private to this file:
// namespace {
// ...
// }  // namespace

// ----------------------------------- 9.1 --------------------------------------------------------

double zero_memory_per_rank(double num_params, int dp_size, int stage, double k) {
  // TODO (Part 9.1): the ZeRO paper's model of the model states per rank.
  //  1. Reject bad input with std::invalid_argument: num_params < 0, dp_size < 1, a stage
  //     outside 0 .. 3, k < 0 (say which argument and its value).
  //  2. Per parameter: 2 bytes of fp16 parameter, 2 of fp16 gradient, k of optimizer states.
  //     Stage 1 divides the optimizer states by dp_size, stage 2 the gradients too, stage 3
  //     the parameters too. Check: Ψ = 7.5e9, N_d = 64, k = 12 give 120e9, 31.40625e9,
  //     16.640625e9 and 1.875e9 bytes.
  throw NotImplemented("zero_memory_per_rank", "zero/zero.cpp");
}

// ----------------------------------- 9.2 --------------------------------------------------------

std::pair<std::size_t, std::size_t> zero_shard_range(std::size_t numel, int dp_size, int dp_idx) {
  // TODO (Part 9.2): reject dp_size < 1 and a dp_idx outside 0 .. dp_size - 1. Then
  // s = ceil(numel / dp_size) in integers ((numel + dp_size - 1) / dp_size); rank dp_idx owns
  // [dp_idx * s, (dp_idx + 1) * s), both ends clamped to numel (the last shards may be shorter,
  // or empty). numel = 10 on 4 ranks: {0, 3}, {3, 6}, {6, 9}, {9, 10}.
  throw NotImplemented("zero_shard_range", "zero/zero.cpp");
}

// ----------------------------------- 9.3 --------------------------------------------------------

template <class T>
xt::xtensor<T, 1> zero1_grad_shard(const xt::xtensor<T, 1>& flat_grad, Communicator& dp_comm) {
  // TODO (Part 9.3): ZeRO-1's gradient step.
  //  1. Sum the gradient over the group: one dp_comm.Allreduce of all numel = flat_grad.size()
  //     values (MPI_SUM; do not divide by the number of ranks).
  //  2. Return this rank's shard of the sum: a tensor of s values, zeros to start with
  //     (xt::zeros<T>({s})), into which you copy elements [begin, end) of zero_shard_range.
  //     The rest stays 0: that is the padding of the last shards.
  throw NotImplemented("zero1_grad_shard", "zero/zero.cpp");
}

// ----------------------------------- 9.4 --------------------------------------------------------

template <class T>
xt::xtensor<T, 1> zero2_grad_shard(const xt::xtensor<T, 1>& flat_grad, Communicator& dp_comm) {
  // TODO (Part 9.4): ZeRO-2's gradient step, the same result as zero1_grad_shard.
  //  1. Copy flat_grad into a zero tensor of p * s values: rank r's block is then elements
  //     [r * s, (r + 1) * s), exactly its shard, and the padding is 0 on every rank.
  //  2. One dp_comm.Reduce_scatter of it into a tensor of s values, and return that.
  //  (An Allreduce gives the same values but sends twice the bytes: the tests count them.)
  throw NotImplemented("zero2_grad_shard", "zero/zero.cpp");
}

// ----------------------------------- 9.5 --------------------------------------------------------

template <class T>
xt::xtensor<T, 1> zero_gather_params(const xt::xtensor<T, 1>& shard, std::size_t numel,
                                     Communicator& dp_comm) {
  // TODO (Part 9.5): the shards back into one flat vector.
  //  1. Reject a shard whose size is not s = ceil(numel / p) (say both sizes).
  //  2. One dp_comm.Allgather of the shard into a tensor of p * s values: rank 0's shard first.
  //  3. Return its first numel values, xt::view(gathered, xt::range(0, numel)): that drops
  //     the padding.
  throw NotImplemented("zero_gather_params", "zero/zero.cpp");
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests link against exactly these.
// -------------------------------------------------------------------------------------------
#define DTK_INSTANTIATE_ZERO(T)                                                            \
  template xt::xtensor<T, 1> zero1_grad_shard<T>(const xt::xtensor<T, 1>&, Communicator&); \
  template xt::xtensor<T, 1> zero2_grad_shard<T>(const xt::xtensor<T, 1>&, Communicator&); \
  template xt::xtensor<T, 1> zero_gather_params<T>(const xt::xtensor<T, 1>&, std::size_t,  \
                                                   Communicator&);

DTK_INSTANTIATE_ZERO(float)
DTK_INSTANTIATE_ZERO(double)

}  // namespace dtk
