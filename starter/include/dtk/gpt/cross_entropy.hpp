// The GPT's loss: cross-entropy of next-token prediction, and the embedding lookup at the other
// end of the model. On one rank, over the whole vocabulary; Part 10 splits the vocabulary over
// the tensor-parallel ranks (vocab_parallel_cross_entropy, vocab_parallel_embedding) without
// ever gathering the logits.
#pragma once

#include <cstdint>

#include <xtensor/xtensor.hpp>

#include "dtk/tensor_parallel.hpp"  // VocabParallelLoss, the loss's result on one rank or several

namespace dtk::gpt {

// The whole vocabulary on one rank: logits (N, V), targets (N) in [0, V). Throws
// std::invalid_argument for a target outside the vocabulary.
template <class T>
VocabParallelLoss<T> cross_entropy(const xt::xtensor<T, 2>& logits,
                                   const xt::xtensor<std::int32_t, 1>& targets);

// The whole table on one rank: out[i] = table[tokens[i]], (N, h).
template <class T>
xt::xtensor<T, 2> embedding_lookup(const xt::xtensor<std::int32_t, 1>& tokens,
                                   const xt::xtensor<T, 2>& table);

// Its backward: d table, (V, h): row v is the sum of the output_grad rows of the tokens v.
template <class T>
xt::xtensor<T, 2> embedding_lookup_grad(const xt::xtensor<std::int32_t, 1>& tokens,
                                        const xt::xtensor<T, 2>& output_grad, int vocab_size);

}  // namespace dtk::gpt
