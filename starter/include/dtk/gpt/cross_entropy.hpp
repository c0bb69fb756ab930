// The GPT's loss: cross-entropy of next-token prediction, and the embedding lookup at the other
// end of the model. On one rank, over the whole vocabulary; Part 10 splits the vocabulary over
// the tensor-parallel ranks (vocab_parallel_cross_entropy, vocab_parallel_embedding) without
// ever gathering the logits.
#pragma once

#include <cstdint>

#include <xtensor/xtensor.hpp>

namespace dtk {

// Per row i: loss[i] = log Σ_v exp(logits[i, v]) − logits[i, targets[i]]; logits_grad =
// (softmax(logits) − one_hot(targets)) / N, the gradient of the mean loss over the N rows (with
// a vocabulary split over ranks, of this rank's columns only).
template <class T>
struct VocabParallelLoss {
  xt::xtensor<T, 1> loss;         // (N)
  xt::xtensor<T, 2> logits_grad;  // (N, V) or this rank's (N, V / tp)
};

namespace gpt {

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

}  // namespace gpt
}  // namespace dtk
