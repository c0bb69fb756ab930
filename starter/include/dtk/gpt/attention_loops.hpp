// Causal attention over a block of keys, written as plain loops: the same contract and result
// as attention_block_forward (attention_kernels.hpp), which is what the model runs. Read this
// one first: it is the formula, one query, head and key at a time. The fast kernel computes the
// same with matrix products over blocks of rows, skips the keys a causal block of queries
// cannot see, and runs (sequence, head) pairs on threads; kit_gpt_kernels checks the two agree.
#pragma once

#include <vector>

#include <xtensor/xtensor.hpp>

#include "dtk/context_parallel.hpp"

namespace dtk {

// For each sequence b, head h and query i: the scores s_j = q_i · k_j / √d over the keys j it
// sees (k_positions[j] <= q_positions[i]; k and v of the key/value head h reads), their softmax
// (the largest score subtracted first, so exp never overflows), out_i = Σ_j softmax_j · v_j, and
// lse_i = log Σ_j exp(s_j). A query that sees no key: out 0, lse −∞. Shapes as in
// attention_kernels.hpp.
template <class T>
AttentionOutput<T> attention_block_forward_loops(
    const xt::xtensor<T, 2>& q, const xt::xtensor<T, 2>& k, const xt::xtensor<T, 2>& v,
    const std::vector<int>& q_positions, const std::vector<int>& k_positions, int batch, int heads);

}  // namespace dtk
