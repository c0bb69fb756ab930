// Causal attention over a block of keys: the GPT's attention (the block over all keys) and the
// building block of ring attention (Part 11), which attends a rank's queries to one block of
// keys at a time and merges the partial results.
//
// Layouts (as everywhere in the GPT: row b · S + s holds position s of sequence b):
//   q          (batch · S_q, heads · d)   queries at the absolute positions q_positions (S_q)
//   k, v       (batch · S_k, kv · d)      keys and values at k_positions (S_k): kv heads, kv
//                                         dividing heads; query head h reads key/value head
//                                         h / (heads / kv) (grouped-query attention; kv = heads:
//                                         multi-head, GPT-2's)
//   out        (batch · S_q, heads · d)   head h in columns [h · d, (h + 1) · d)
//   lse        (batch · S_q, heads)       per row and head: log Σ_j exp(s_j) over the keys j it
//                                         sees, s_j = q · k_j / √d (natural log)
// Causal by absolute position: query i sees key j when k_positions[j] <= q_positions[i]. A row
// that sees no key of the block has lse = -infinity and out = 0 ("no keys yet"), which is what
// Part 11's merge_attention expects.
//
// Over two disjoint sets of keys A and B, the attention over A ∪ B is the merge of the two
// blocks' results (Part 11.2); over all keys it is the model's attention.
//
// What the kernels return, AttentionOutput and AttentionGrads, is defined in Part 11's header
// (dtk/context_parallel.hpp), where students read it.
#pragma once

#include <vector>

#include <xtensor/xtensor.hpp>

#include "dtk/context_parallel.hpp"

namespace dtk {

// Forward over one block of keys: the softmax of the scaled scores over the keys each query
// sees, times the values; and the lse of those scores. Throws std::invalid_argument for shapes
// that do not match the positions, batch and heads. T is float or double.
template <class T>
AttentionOutput<T> attention_block_forward(const xt::xtensor<T, 2>& q, const xt::xtensor<T, 2>& k,
                                           const xt::xtensor<T, 2>& v,
                                           const std::vector<int>& q_positions,
                                           const std::vector<int>& k_positions, int batch,
                                           int heads);

// Backward over one block of keys, FlashAttention-2's: given the FINAL out and lse of the
// queries (over all the keys they see, not only this block's) and dout = d loss / d out,
// returns this block's share of dq and the whole dk and dv of its keys (a key/value head's
// summed over the query heads that read it). Per row i and head:
//   D_i = Σ_c dout_ic · out_ic,   P_ij = exp(s_ij − lse_i)   (0 where key j is not seen)
//   dV = Pᵀ · dout,   dP = dout · Vᵀ,   dS = P ⊙ (dP − D),   dQ = dS · K / √d,   dK = dSᵀ · Q / √d
// Summed over every block of keys, the dq are the attention's dq.
template <class T>
AttentionGrads<T> attention_block_backward(
    const xt::xtensor<T, 2>& q, const xt::xtensor<T, 2>& k, const xt::xtensor<T, 2>& v,
    const xt::xtensor<T, 2>& out, const xt::xtensor<T, 2>& lse, const xt::xtensor<T, 2>& dout,
    const std::vector<int>& q_positions, const std::vector<int>& k_positions, int batch, int heads);

// The CPU seconds (every thread of this process) spent in the two kernels so far: a rank's
// attention work, without the time a ring spends waiting for its neighbours (gpt_train reports
// it per rank: the imbalance of contiguous slices under context parallelism).
double attention_kernel_cpu_seconds();

}  // namespace dtk
