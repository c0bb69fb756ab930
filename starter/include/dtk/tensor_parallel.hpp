// Part 10 (assignment 3): tensor and sequence parallelism of a transformer (Megatron-LM: Shoeybi
// et al. 2019, "Megatron-LM: Training Multi-Billion Parameter Language Models Using Model
// Parallelism"; Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
// Models"). You implement these functions in tensor_parallel/tensor_parallel.cpp; the provided
// GPT (include/dtk/gpt/) calls them when gpt_train runs with --tp and --sp.
//
// Conventions used throughout:
//   - the tensor-parallel group is tp_comm: tp = tp_comm.Get_size() ranks, this one being
//     r = tp_comm.Get_rank() (tp_idx); functions that take no communicator get tp_size and
//     tp_idx as arguments;
//   - activations are 2-D, one row per token: row b · S + s holds position s of sequence b
//     (B sequences of S positions), columns are features (the model's hidden width h);
//   - the vocabulary of V tokens is split into tp equal slices: rank r holds the V/tp token ids
//     [vocab_begin, vocab_begin + V/tp), with vocab_begin = r · V/tp (rows of the embedding
//     table, columns of the logits);
//   - T is float or double;
//   - a bad argument throws std::invalid_argument with a message naming the function and the
//     bad value. Every rank of tp_comm passes the same sizes, so every rank throws alike.
#pragma once

#include <cstdint>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "dtk/communicator.hpp"
#include "dtk/not_implemented.hpp"  // what the stubs throw until you write them

namespace dtk {

// ---------------------------------------------------------------------------------------------
// 10.1 Which heads a rank owns
// ---------------------------------------------------------------------------------------------

// Heads [begin, end) of a layer's attention.
struct HeadRange {
  int begin;
  int end;
};

// The heads rank tp_idx of tp_size owns: num_heads / tp_size consecutive heads,
// [tp_idx · num_heads/tp_size, (tp_idx + 1) · num_heads/tp_size).
// Example: 12 heads on 4 ranks: rank 0 {0, 3}, rank 1 {3, 6}, rank 2 {6, 9}, rank 3 {9, 12}.
// Requires num_heads >= 1, tp_size >= 1, 0 <= tp_idx < tp_size and tp_size dividing num_heads.
HeadRange attention_heads(int num_heads, int tp_size, int tp_idx);

// The columns of the fused QKV weight, (hidden, 3 · hidden), that rank tp_idx owns. That
// weight's columns are [Q | K | V]: Q in columns [0, h), K in [h, 2h), V in [2h, 3h); inside
// each, head j has the d = hidden / num_heads columns [j · d, (j + 1) · d). A rank owning heads
// [begin, end) needs the Q, K and V columns of those heads. Returns 3 · hidden / tp_size
// column indices: its Q columns, then its K columns, then its V columns, increasing within each.
// Example: hidden 8, 4 heads (d = 2), 2 ranks: rank 0 {0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19}
// and rank 1 {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23}. A contiguous block of the fused
// weight ({0, ..., 11} for rank 0) is wrong: it holds all of Q and half of K, and no V.
// Requires hidden >= 1, num_heads dividing hidden, and what attention_heads requires.
std::vector<int> qkv_columns(int hidden, int num_heads, int tp_size, int tp_idx);

// The same for a Llama's grouped-query attention (gpt_train --arch llama --kv_heads): the fused
// weight is (hidden, (num_heads + 2 · num_kv_heads) · d), its columns [Q | K | V] with Q in
// [0, h), K in [h, h + kv · d) and V in [h + kv · d, h + 2 · kv · d), kv = num_kv_heads. Query
// head j reads key/value head j / (num_heads / kv). A rank owning query heads [begin, end)
// (attention_heads) needs their Q columns and the K and V columns of exactly the key/value
// heads they read:
//   tp_size dividing kv: kv / tp_size key/value heads of its own;
//   kv dividing tp_size: ONE key/value head, which tp_size / kv ranks hold alike (replicated:
//     each replica adds its own query heads' share to its gradient, so those gradients must be
//     summed over the replicas).
// Returns its Q columns, then its K columns, then its V columns, increasing within each: with
// kv = num_heads, qkv_columns' answer.
// Example: hidden 8, 4 heads (d = 2), 2 key/value heads (K in [8, 12), V in [12, 16)), 2 ranks:
// rank 0 {0, 1, 2, 3, 8, 9, 12, 13} and rank 1 {4, 5, 6, 7, 10, 11, 14, 15}; on 4 ranks, 1
// query head each: rank 1 {2, 3, 8, 9, 12, 13} (head 1 reads key/value head 0, as rank 0's does).
// Requires what qkv_columns requires, num_kv_heads >= 1 dividing num_heads, and tp_size
// dividing num_kv_heads or num_kv_heads dividing tp_size.
std::vector<int> gqa_qkv_columns(int hidden, int num_heads, int num_kv_heads, int tp_size,
                                 int tp_idx);

// ---------------------------------------------------------------------------------------------
// 10.2 The vocabulary-parallel embedding
// ---------------------------------------------------------------------------------------------

// tokens (N): token ids, the same on every rank of tp_comm. local_table (V/tp, h): this rank's
// rows [vocab_begin, vocab_begin + V/tp) of the (V, h) embedding table. Returns the whole
// lookup, (N, h), row i = table row tokens[i], on every rank: each rank fills the rows of the
// tokens it holds and leaves the others zero (a token outside its slice is another rank's),
// then ONE tp_comm.Allreduce (sum) of the (N, h) result completes every row.
// Requires vocab_begin >= 0 and every token >= 0.
template <class T>
xt::xtensor<T, 2> vocab_parallel_embedding(const xt::xtensor<std::int32_t, 1>& tokens,
                                           const xt::xtensor<T, 2>& local_table, int vocab_begin,
                                           Communicator& tp_comm);

// Its backward, on one rank, no communication: output_grad (N, h) is the gradient of the
// lookup's rows. Returns the gradient of this rank's local_vocab rows of the table,
// (local_vocab, h): row v is the sum of the output_grad rows i with tokens[i] = vocab_begin + v
// (a token that appears twice adds both rows), zero for tokens no row looked up.
// Requires output_grad.shape(0) == tokens.size(), vocab_begin >= 0 and local_vocab >= 1.
template <class T>
xt::xtensor<T, 2> vocab_parallel_embedding_grad(const xt::xtensor<std::int32_t, 1>& tokens,
                                                const xt::xtensor<T, 2>& output_grad,
                                                int vocab_begin, int local_vocab);

// ---------------------------------------------------------------------------------------------
// 10.3 The vocabulary-parallel cross-entropy
// ---------------------------------------------------------------------------------------------

// The loss of N rows and the gradient of their mean. With a vocabulary split over tp ranks,
// logits_grad holds this rank's columns only.
template <class T>
struct VocabParallelLoss {
  xt::xtensor<T, 1> loss;  // (N): loss[i] = log Σ_v exp(logits[i, v]) − logits[i, targets[i]]
  xt::xtensor<T, 2> logits_grad;  // (N, V) on one rank, this rank's (N, V/tp) in parallel
};

// local_logits (N, V/tp): columns [vocab_begin, vocab_begin + V/tp) of the (N, V) logits.
// targets (N): global token ids in [0, V), the same on every rank. Returns, on every rank:
//   loss[i]           = log Σ_v exp(logits[i, v]) − logits[i, targets[i]], over all V columns;
//   logits_grad[i, c] = (softmax(logits[i])[vocab_begin + c] − [targets[i] == vocab_begin + c])
//                       / N, this rank's columns of the gradient of the mean loss.
// The (N, V) logits are never gathered: the only communication is three tp_comm.Allreduces of
// N values each: the maximum of every row (MPI_MAX; subtracting it keeps exp from overflowing:
// logits of ±10⁴ must work), the sum of the exponentials of every row (MPI_SUM) and the logit
// of every row's target (MPI_SUM: only the rank holding the target contributes it).
// Requires targets.size() == N, local_logits.shape(1) >= 1 and every target in
// [0, tp · local_logits.shape(1)).
template <class T>
VocabParallelLoss<T> vocab_parallel_cross_entropy(const xt::xtensor<T, 2>& local_logits,
                                                  const xt::xtensor<std::int32_t, 1>& targets,
                                                  int vocab_begin, Communicator& tp_comm);

// ---------------------------------------------------------------------------------------------
// 10.4 Sequence parallelism
// ---------------------------------------------------------------------------------------------

// Outside the tensor-parallel regions (LayerNorm, dropout, the residual stream) sequence
// parallelism splits the positions instead of replicating them: rank r holds positions
// [r · S/tp, (r + 1) · S/tp) of every one of the `batch` sequences, as (batch · S/tp, h) with
// row b · (S/tp) + s' holding position r · S/tp + s' of sequence b.

// x_local (batch · S/tp, h): this rank's positions. Returns all positions, (batch · S, h) in
// the usual row order b · S + s, on every rank: ONE tp_comm.Allgather of x_local, then the
// reordering. (The Allgather lands rank 0's rows first, then rank 1's, ...: with batch > 1
// that is not the order b · S + s.) Its backward is sp_reduce_scatter.
// Requires batch >= 1 and batch dividing x_local.shape(0).
template <class T>
xt::xtensor<T, 2> sp_all_gather(const xt::xtensor<T, 2>& x_local, int batch, Communicator& tp_comm);

// partial (batch · S, h): this rank's partial sums of all positions (a row-parallel layer's
// output), rows b · S + s. Returns this rank's positions of the sum over tp_comm,
// (batch · S/tp, h) with row b · (S/tp) + s' = Σ over ranks of partial row b · S + r · S/tp + s'.
// The reordering first, so that block q of what is reduced holds rank q's positions of every
// sequence, then ONE tp_comm.Reduce_scatter. Its backward is sp_all_gather.
// Requires batch >= 1, batch dividing partial.shape(0), and tp dividing S.
template <class T>
xt::xtensor<T, 2> sp_reduce_scatter(const xt::xtensor<T, 2>& partial, int batch,
                                    Communicator& tp_comm);

}  // namespace dtk
