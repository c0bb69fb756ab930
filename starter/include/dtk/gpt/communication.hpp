// Everything the GPT's layers need from other ranks, given to them as functions: the model
// never calls MPI itself. one_rank_communication() computes on one rank and communicates
// nothing; the trainers of Parts 10, 11 and 12 replace the functions with ones that call their
// students' functions on their communicators, and the model does not change.
//
// Megatron-LM's tensor parallelism (Part 10) wraps each block's two halves in a pair of
// conjugate operators: f before the column-parallel product (QKV, fc1, the LM head), g after the
// row-parallel one (the attention's output projection, fc2).
//
//                forward                          backward
//   f (enter)    identity                         sum over the tensor-parallel group
//   g (exit)     sum over the group               identity
//   with sequence parallelism (10.4), where the residual stream holds S/tp positions:
//   f (enter)    sp_all_gather: all S positions   sp_reduce_scatter
//   g (exit)     sp_reduce_scatter                sp_all_gather
//
// An empty MatrixOp means "nothing to do": the layer uses its input as it is, without a copy.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "dtk/gpt/attention_kernels.hpp"
#include "dtk/gpt/cross_entropy.hpp"
#include "dtk/gpt/matmul.hpp"
#include "dtk/gpt/moe_routing.hpp"
#include "dtk/gpt/parameter.hpp"

namespace dtk::gpt {

template <class T>
using MatrixOp = std::function<Matrix<T>(const Matrix<T>&)>;
using Tokens = xt::xtensor<std::int32_t, 1>;

template <class T>
struct GptCommunication {
  // Megatron's f and g, forward and backward (above). Empty on one rank.
  MatrixOp<T> enter_forward, enter_backward, exit_forward, exit_backward;

  // The token embedding (Part 10.2's signatures): `tokens` are all B · S tokens of this rank's
  // sequences, local_table the rows [vocab_begin, vocab_begin + V/tp) of the (V, h) table.
  // Returns the rows of the residual stream (B · S of them; with sequence parallelism this
  // rank's B · S/tp). Its backward takes the gradient of those rows and returns the gradient of
  // the local table's rows.
  std::function<Matrix<T>(const Tokens& tokens, const Matrix<T>& local_table, int vocab_begin)>
      embedding_forward;
  std::function<Matrix<T>(const Tokens& tokens, const Matrix<T>& stream_grad, int vocab_begin,
                          int local_vocab)>
      embedding_backward;

  // The loss (Part 10.3's signature): local_logits (N, V/tp) are the columns [vocab_begin, +V/tp)
  // of the logits of all N rows; targets (N) are global token ids.
  std::function<VocabParallelLoss<T>(const Matrix<T>& local_logits, const Tokens& targets,
                                     int vocab_begin)>
      cross_entropy;
  // The whole vocabulary's logits of some rows from this rank's columns, for sampling. Empty on
  // one rank (its columns are all of them).
  MatrixOp<T> gather_vocabulary;

  // The attention of this rank's queries over ALL keys of their sequences (Part 11's ring
  // attention, without its communicator): q, k, v (B · S, heads · d) at `positions` (S).
  std::function<AttentionOutput<T>(const Matrix<T>& q, const Matrix<T>& k, const Matrix<T>& v,
                                   const std::vector<int>& positions, int batch, int heads)>
      attention_forward;
  std::function<AttentionGrads<T>(const Matrix<T>& q, const Matrix<T>& k, const Matrix<T>& v,
                                  const Matrix<T>& out, const Matrix<T>& lse, const Matrix<T>& dout,
                                  const std::vector<int>& positions, int batch, int heads)>
      attention_backward;

  // A mixture of experts' routing (Part 12's signatures, without the communicator).
  std::function<std::pair<Matrix<T>, DispatchPlan>(
      const Matrix<T>& x, const xt::xtensor<std::int32_t, 2>& expert_ids, int num_experts)>
      moe_dispatch;
  std::function<Matrix<T>(const Matrix<T>& expert_out, const DispatchPlan& plan,
                          const Matrix<T>& gates)>
      moe_combine;

  // Sums `values` over every rank holding other tokens of the same step (data- and
  // context-parallel ranks; tensor-parallel ones too under sequence parallelism): the router's
  // statistics of the whole batch, which the load-balancing loss needs. Empty on one rank.
  std::function<void(std::vector<double>& values)> sum_over_batch;

  // Called by the backward as gradients become final, so that their sum over the data-parallel
  // ranks can start while the earlier layers are still computed (Part 15's buckets): after the
  // head with the final LayerNorm's and the head's parameters, after each block with its own,
  // after the embedding with its own. Empty: nothing is called.
  std::function<void(const std::vector<Parameter<T>*>& ready)> gradients_ready;

  // Fully sharded parameters (ZeRO-3, Part 16.3): called before a piece of the model (the
  // embedding, a block, the head) computes with its parameters, forward or backward, and after
  // it (a block recomputed by full recomputation inside its backward's pair). Before, the
  // trainer gathers the piece's values (and, backward, gives it zero gradients); after, it frees
  // them (and, backward, sums the gradients into its shard). Empty: the parameters stay whole.
  std::function<void(const std::vector<Parameter<T>*>&piece, bool backward)> piece_starts,
      piece_ends;
};

// One rank: every function computes over what this rank holds, nothing is sent.
template <class T>
GptCommunication<T> one_rank_communication();

// op(x), or x itself when op is empty. The result is `buffer` (holding op(x)) or x.
template <class T>
const Matrix<T>& communicate(const MatrixOp<T>& op, const Matrix<T>& x, Matrix<T>& buffer) {
  if (!op) return x;
  buffer = op(x);
  return buffer;
}

}  // namespace dtk::gpt
