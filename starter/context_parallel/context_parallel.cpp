// Part 11: context parallelism, ring attention.
// Declared, with the exact contract of every function, in include/dtk/context_parallel.hpp.
// The attention of one block of keys is the provided kernels' (include/dtk/gpt/
// attention_kernels.hpp). Only cp_comm.Send, cp_comm.Recv and cp_comm.Sendrecv may move data
// here.
#include <dtk/communicator.hpp>
#include <dtk/context_parallel.hpp>
#include <dtk/gpt/attention_kernels.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dtk {

// Helpers you write (argument checks, one step of the ring, ...) go in an anonymous namespace
// here, so that they stay private to this file:
// namespace {
// ...
// }  // namespace

// ----------------------------------- 11.1 -------------------------------------------------------

std::vector<int> cp_positions(int seq_len, int cp_size, int cp_idx, bool zigzag) {
  // TODO (Part 11.1): the positions rank cp_idx holds, in increasing order.
  //  1. Reject bad input with std::invalid_argument naming cp_positions and the bad value:
  //     seq_len <= 0, cp_size < 1, cp_idx outside 0 .. cp_size - 1, and a seq_len that
  //     cp_size (contiguous) or 2 * cp_size (zig-zag) does not divide.
  //  2. Contiguous: cut the sequence into cp_size chunks of seq_len / cp_size positions; rank
  //     cp_idx holds chunk cp_idx.
  //  3. Zig-zag: cut it into 2 * cp_size chunks of c = seq_len / (2 * cp_size) positions; rank
  //     cp_idx holds chunk cp_idx (positions cp_idx * c .. cp_idx * c + c - 1), then chunk
  //     2 * cp_size - 1 - cp_idx. seq_len = 8, cp_size = 2: rank 0 {0, 1, 6, 7}, rank 1
  //     {2, 3, 4, 5}.
  throw NotImplemented("cp_positions", "context_parallel/context_parallel.cpp");
}

// ----------------------------------- 11.2 -------------------------------------------------------

template <class T>
void merge_attention(xt::xtensor<T, 2>& out, xt::xtensor<T, 2>& lse,
                     const xt::xtensor<T, 2>& block_out, const xt::xtensor<T, 2>& block_lse) {
  // TODO (Part 11.2): merge (block_out, block_lse) into (out, lse), in place.
  //  1. Reject mismatched shapes with std::invalid_argument: block_out must have out's shape
  //     (rows, heads * d), block_lse lse's (rows, heads), and the heads, lse.shape(1), must
  //     divide out.shape(1).
  //  2. For each row i and head h, with a = lse(i, h) and b = block_lse(i, h):
  //       - b = -infinity (the block saw no key): nothing changes (two empty sides stay empty);
  //       - otherwise m = max(a, b), wa = exp(a - m), wb = exp(b - m) (never exp(a) itself:
  //         exp(1000) overflows, exp(-1000) is 0, and 0 / 0 is NaN); then for the head's d
  //         columns c in [h * d, (h + 1) * d):
  //           out(i, c) = (wa * out(i, c) + wb * block_out(i, c)) / (wa + wb)
  //         and lse(i, h) = m + log(wa + wb). An empty out side (a = -infinity) gets wa = 0.
  throw NotImplemented("merge_attention", "context_parallel/context_parallel.cpp");
}

// ----------------------------------- 11.3 -------------------------------------------------------

template <class T>
AttentionOutput<T> ring_attention_forward(const xt::xtensor<T, 2>& q, const xt::xtensor<T, 2>& k,
                                          const xt::xtensor<T, 2>& v,
                                          const std::vector<int>& positions, int batch, int heads,
                                          Communicator& cp_comm) {
  // TODO (Part 11.3): causal ring attention, forward, on p = cp_comm.Get_size() ranks.
  //  1. Reject bad input with std::invalid_argument: batch or heads < 1, q not
  //     (batch * positions.size(), heads * d), k not (q.shape(0), kv * d) for a kv that
  //     divides heads (grouped-query attention: fewer key/value heads than queries), v not of
  //     k's shape.
  //  2. Start with this rank's own block: result = attention_block_forward(q, k, v, positions,
  //     positions, batch, heads) (every query sees at least itself: no row is empty).
  //  3. p - 1 steps: pass the block you hold to rank r + 1 and take rank r - 1's, all three of
  //     its pieces: its keys, its values AND its positions (the kernel masks by absolute
  //     position: a block is attended at ITS positions, never at this rank's or at 0 .. S-1).
  //     Each piece is one cp_comm.Sendrecv(send, (r + 1) % p, recv, (r + p - 1) % p) into a
  //     buffer of the same size (send and recv must be different buffers; a std::vector<int>
  //     of positions travels like a tensor). Never Send then Recv: every rank would be
  //     sending, and past MPI's small eager limit nobody would receive.
  //  4. After each step, partial = attention_block_forward(q, block_k, block_v, positions,
  //     block_positions, batch, heads), and merge_attention(result.out, result.lse,
  //     partial.out, partial.lse). A block wholly in this rank's future gives empty rows
  //     (lse -infinity), which the merge leaves out.
  throw NotImplemented("ring_attention_forward", "context_parallel/context_parallel.cpp");
}

// ----------------------------------- 11.4 -------------------------------------------------------

template <class T>
AttentionGrads<T> ring_attention_backward(const xt::xtensor<T, 2>& q, const xt::xtensor<T, 2>& k,
                                          const xt::xtensor<T, 2>& v, const xt::xtensor<T, 2>& out,
                                          const xt::xtensor<T, 2>& lse,
                                          const xt::xtensor<T, 2>& dout,
                                          const std::vector<int>& positions, int batch, int heads,
                                          Communicator& cp_comm) {
  // TODO (Part 11.4): ring attention, backward, on p = cp_comm.Get_size() ranks.
  //  1. Reject bad input as in 11.3; out and dout have q's shape, lse is (q.shape(0), heads).
  //  2. dq (q's shape) starts at 0 and stays here. dk and dv accumulators (k's shape, zeros)
  //     travel WITH the block of keys they belong to.
  //  3. p steps, the block you hold at step s being rank (r - s)'s (step 0: your own; before
  //     each later step, pass the block AND its dk, dv accumulators on to r + 1 and take
  //     r - 1's, each with a Sendrecv as in 11.3). At each step,
  //       share = attention_block_backward(q, block_k, block_v, out, lse, dout, positions,
  //                                        block_positions, batch, heads)
  //     and add share.dq to dq, share.dk and share.dv to the accumulators you hold.
  //  4. After the last step you hold rank r + 1's block's accumulators, complete: one more
  //     Sendrecv of dk and of dv takes them home to r + 1 and brings yours from r - 1. Return
  //     {dq, dk, dv}. (With p = 1 there is nothing to send.)
  throw NotImplemented("ring_attention_backward", "context_parallel/context_parallel.cpp");
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests link against exactly these.
// -------------------------------------------------------------------------------------------
#define DTK_INSTANTIATE_CONTEXT_PARALLEL(T)                                             \
  template void merge_attention<T>(xt::xtensor<T, 2>&, xt::xtensor<T, 2>&,              \
                                   const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&); \
  template AttentionOutput<T> ring_attention_forward<T>(                                \
      const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&,     \
      const std::vector<int>&, int, int, Communicator&);                                \
  template AttentionGrads<T> ring_attention_backward<T>(                                \
      const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&,     \
      const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&,     \
      const std::vector<int>&, int, int, Communicator&);

DTK_INSTANTIATE_CONTEXT_PARALLEL(float)
DTK_INSTANTIATE_CONTEXT_PARALLEL(double)

}  // namespace dtk
