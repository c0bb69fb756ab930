// Part 10: tensor and sequence parallelism of a transformer.
// Declared, with the exact contract of every function, in include/dtk/tensor_parallel.hpp.
// The only MPI use allowed here: tp_comm.Allreduce, tp_comm.Allgather and tp_comm.Reduce_scatter.
#include <dtk/tensor_parallel.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

namespace dtk {

// Helpers you write (argument checks, the local row of a token id, the reordering both 10.4
// functions share, ...) go in an anonymous namespace here, so that they stay private to this
// file:
// namespace {
// ...
// }  // namespace

// ----------------------------------- 10.1 -------------------------------------------------------

HeadRange attention_heads(int num_heads, int tp_size, int tp_idx) {
  // TODO (Part 10.1): reject with std::invalid_argument num_heads < 1, tp_size < 1, a tp_idx
  // outside 0 .. tp_size - 1, and a tp_size that does not divide num_heads. Then every rank owns
  // num_heads / tp_size consecutive heads, rank 0 the first ones: return {begin, end}.
  // 12 heads on 4 ranks: {0, 3}, {3, 6}, {6, 9}, {9, 12}.
  throw NotImplemented("attention_heads", "tensor_parallel/tensor_parallel.cpp");
}

std::vector<int> qkv_columns(int hidden, int num_heads, int tp_size, int tp_idx) {
  // TODO (Part 10.1): the columns of the fused (hidden, 3 · hidden) QKV weight this rank needs.
  //  1. Reject hidden < 1, a num_heads that does not divide hidden, and what attention_heads
  //     rejects (std::invalid_argument naming qkv_columns: a helper that both functions call,
  //     given the caller's name, avoids writing the checks twice). This rank owns the heads
  //     [begin, end) that attention_heads gives.
  //  2. With d = hidden / num_heads, head j's columns are [j · d, (j + 1) · d) inside each of
  //     the three blocks Q (offset 0), K (offset hidden) and V (offset 2 · hidden).
  //  3. Return the Q columns of heads [begin, end), then their K columns, then their V columns:
  //     3 · hidden / tp_size indices. Not one contiguous block of the 3 · hidden columns: rank 0
  //     would get all of Q and none of V (the handout draws it).
  throw NotImplemented("qkv_columns", "tensor_parallel/tensor_parallel.cpp");
}

std::vector<int> gqa_qkv_columns(int hidden, int num_heads, int num_kv_heads, int tp_size,
                                 int tp_idx) {
  // TODO (Part 10.1): qkv_columns for grouped-query attention (the header's contract).
  //  - Reject what qkv_columns rejects, num_kv_heads < 1 or not dividing num_heads, and a
  //    tp_size that neither divides num_kv_heads nor is a multiple of it (std::invalid_argument
  //    naming gqa_qkv_columns).
  //  - K and V are only kv · d wide each, so V starts at hidden + kv · d, not at 2 · hidden.
  //  - The key/value heads a rank needs are the ones ITS query heads read, not the heads with
  //    its query heads' numbers; when there are fewer key/value heads than ranks, several ranks
  //    need the same one.
  throw NotImplemented("gqa_qkv_columns", "tensor_parallel/tensor_parallel.cpp");
}

// ----------------------------------- 10.2 -------------------------------------------------------

template <class T>
xt::xtensor<T, 2> vocab_parallel_embedding(const xt::xtensor<std::int32_t, 1>& tokens,
                                           const xt::xtensor<T, 2>& local_table, int vocab_begin,
                                           Communicator& tp_comm) {
  // TODO (Part 10.2): the lookup, with the table's rows split over tp_comm.
  //  1. Reject vocab_begin < 0 and a negative token (std::invalid_argument).
  //  2. out = zeros (tokens.size(), h). For each i, the token's row in this rank's slice is
  //     tokens(i) − vocab_begin; copy local_table's row there into out's row i only when it is
  //     in [0, local_table.shape(0)). Otherwise another rank holds it: leave the row zero (the
  //     mask). Reading local_table at a row outside the slice, or at row 0 for every token
  //     another rank holds, counts that token on every rank.
  //  3. One tp_comm.Allreduce (MPI_SUM) of out, in place: each row is nonzero on exactly one rank.
  //     Every rank calls it, even one that holds none of the tokens.
  throw NotImplemented("vocab_parallel_embedding", "tensor_parallel/tensor_parallel.cpp");
}

template <class T>
xt::xtensor<T, 2> vocab_parallel_embedding_grad(const xt::xtensor<std::int32_t, 1>& tokens,
                                                const xt::xtensor<T, 2>& output_grad,
                                                int vocab_begin, int local_vocab) {
  // TODO (Part 10.2): the backward of the lookup, for this rank's rows only; no communication
  // (every rank already has the whole output_grad).
  //  1. Reject vocab_begin < 0, a negative token, local_vocab < 1 and an output_grad whose
  //     number of rows is not tokens.size() (std::invalid_argument).
  //  2. grad = zeros (local_vocab, h). For each i whose token is in this rank's slice, ADD
  //     output_grad's row i to grad's row tokens(i) − vocab_begin: a token that appears twice
  //     gets both rows.
  throw NotImplemented("vocab_parallel_embedding_grad", "tensor_parallel/tensor_parallel.cpp");
}

// ----------------------------------- 10.3 -------------------------------------------------------

template <class T>
VocabParallelLoss<T> vocab_parallel_cross_entropy(const xt::xtensor<T, 2>& local_logits,
                                                  const xt::xtensor<std::int32_t, 1>& targets,
                                                  int vocab_begin, Communicator& tp_comm) {
  // TODO (Part 10.3): cross-entropy over a vocabulary split by columns, without gathering the
  // logits. N = local_logits.shape(0), Vl = local_logits.shape(1) (= V / tp).
  //  1. Reject targets.size() != N, Vl < 1, vocab_begin < 0 and a target outside
  //     [0, tp · Vl) (std::invalid_argument).
  //  2. max[i]: the largest of row i's local logits, then one tp_comm.Allreduce of the N values
  //     with MPI_MAX: the row's maximum over the whole vocabulary.
  //  3. sum[i] = Σ over the local columns of exp(logit − max[i]) (keep the exponentials: they
  //     are the gradient's numerators), then one Allreduce (MPI_SUM) of the N sums. Without
  //     subtracting the max, exp(10⁴) is infinite: the tests use logits of ±10⁴.
  //  4. target[i] = local_logits(i, targets(i) − vocab_begin) on the rank whose slice holds
  //     targets(i), 0 on the others, then one Allreduce (MPI_SUM) of the N values.
  //  5. loss(i) = log(sum[i]) + (max[i] − target[i]), in that order: at logits of 10⁴,
  //     (log(sum[i]) + max[i]) − target[i] keeps only the digits a number of 10⁴ has (about
  //     10⁻³ in float);
  //     logits_grad(i, c) = exp(logit − max[i]) / sum[i] / N, minus 1 / N at the target's
  //     column on the rank that holds it.
  //  The three Allreduces move 3 · N values; gathering the N × V logits would move N · V/tp
  //  values from every rank to every other (the tests count the bytes).
  throw NotImplemented("vocab_parallel_cross_entropy", "tensor_parallel/tensor_parallel.cpp");
}

// ----------------------------------- 10.4 -------------------------------------------------------

template <class T>
xt::xtensor<T, 2> sp_all_gather(const xt::xtensor<T, 2>& x_local, int batch,
                                Communicator& tp_comm) {
  // TODO (Part 10.4): this rank's S/tp positions of each sequence -> all S positions.
  //  1. Reject batch < 1 and a batch that does not divide x_local.shape(0) (std::invalid_argument).
  //     s_local = x_local.shape(0) / batch positions per sequence, S = tp · s_local.
  //  2. One tp_comm.Allgather of x_local into a (tp · batch · s_local, h) tensor: rank q's
  //     batch · s_local rows come q-th, sequence after sequence.
  //  3. Reorder: the s_local rows of rank q's sequence b (gathered rows starting at
  //     (q · batch + b) · s_local) go to rows b · S + q · s_local ... of the result. With one
  //     sequence (batch 1) the gathered order is already right; with batch > 1 it is not.
  throw NotImplemented("sp_all_gather", "tensor_parallel/tensor_parallel.cpp");
}

template <class T>
xt::xtensor<T, 2> sp_reduce_scatter(const xt::xtensor<T, 2>& partial, int batch,
                                    Communicator& tp_comm) {
  // TODO (Part 10.4): partial sums of all positions -> this rank's positions, summed.
  //  1. Reject batch < 1, a batch that does not divide partial.shape(0), and sequences of
  //     S = partial.shape(0) / batch positions that tp does not divide (std::invalid_argument).
  //     s_local = S / tp.
  //  2. Reorder first, the inverse of sp_all_gather's step 3: rows b · S + q · s_local ... (rank
  //     q's positions of sequence b) go to rows (q · batch + b) · s_local ..., so that block q
  //     of the reordered tensor is everything rank q keeps.
  //  3. One tp_comm.Reduce_scatter (MPI_SUM) of it into a (batch · s_local, h) tensor.
  throw NotImplemented("sp_reduce_scatter", "tensor_parallel/tensor_parallel.cpp");
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests link against exactly these.
// -------------------------------------------------------------------------------------------
#define DTK_INSTANTIATE_TENSOR_PARALLEL(T)                                                         \
  template xt::xtensor<T, 2> vocab_parallel_embedding<T>(                                          \
      const xt::xtensor<std::int32_t, 1>&, const xt::xtensor<T, 2>&, int, Communicator&);          \
  template xt::xtensor<T, 2> vocab_parallel_embedding_grad<T>(const xt::xtensor<std::int32_t, 1>&, \
                                                              const xt::xtensor<T, 2>&, int, int); \
  template VocabParallelLoss<T> vocab_parallel_cross_entropy<T>(                                   \
      const xt::xtensor<T, 2>&, const xt::xtensor<std::int32_t, 1>&, int, Communicator&);          \
  template xt::xtensor<T, 2> sp_all_gather<T>(const xt::xtensor<T, 2>&, int, Communicator&);       \
  template xt::xtensor<T, 2> sp_reduce_scatter<T>(const xt::xtensor<T, 2>&, int, Communicator&);

DTK_INSTANTIATE_TENSOR_PARALLEL(float)
DTK_INSTANTIATE_TENSOR_PARALLEL(double)

}  // namespace dtk
