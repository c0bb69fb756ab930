#include "dtk/gpt/cross_entropy.hpp"

#include <algorithm>
#include <cmath>

#include <stdexcept>
#include <string>
#include "dtk/gpt/parallel.hpp"

namespace dtk::gpt {

namespace {

void check_token(std::int32_t token, std::size_t vocab, const char* function) {
  if (token < 0 || std::size_t(token) >= vocab) {
    throw std::invalid_argument(std::string(function) + ": token " + std::to_string(token) +
                                " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  }
}

}  // namespace

template <class T>
VocabParallelLoss<T> cross_entropy(const xt::xtensor<T, 2>& logits,
                                   const xt::xtensor<std::int32_t, 1>& targets) {
  const std::size_t n = logits.shape(0), vocab = logits.shape(1);
  if (targets.size() != n) {
    throw std::invalid_argument("cross_entropy: " + std::to_string(n) + " rows of logits but " +
                                std::to_string(targets.size()) + " targets");
  }
  VocabParallelLoss<T> result{xt::empty<T>({n}), xt::empty<T>({n, vocab})};
  for (std::size_t i = 0; i < n; ++i) check_token(targets(i), vocab, "cross_entropy");
  parallel_for(n, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) {
      const T* row = logits.data() + i * vocab;
      T* grad = result.logits_grad.data() + i * vocab;
      // log Σ exp, stable: max + log Σ exp(x - max).
      const T max = *std::max_element(row, row + vocab);
      T sum = 0;
      for (std::size_t v = 0; v < vocab; ++v) sum += grad[v] = std::exp(row[v] - max);
      const T log_sum = max + std::log(sum);
      result.loss(i) = log_sum - row[targets(i)];
      for (std::size_t v = 0; v < vocab; ++v) grad[v] /= sum * T(n);
      grad[targets(i)] -= T(1) / T(n);
    }
  });
  return result;
}

template <class T>
xt::xtensor<T, 2> embedding_lookup(const xt::xtensor<std::int32_t, 1>& tokens,
                                   const xt::xtensor<T, 2>& table) {
  const std::size_t width = table.shape(1);
  xt::xtensor<T, 2> out({tokens.size(), width});
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    check_token(tokens(i), table.shape(0), "embedding_lookup");
    std::copy_n(table.data() + tokens(i) * width, width, out.data() + i * width);
  }
  return out;
}

template <class T>
xt::xtensor<T, 2> embedding_lookup_grad(const xt::xtensor<std::int32_t, 1>& tokens,
                                        const xt::xtensor<T, 2>& output_grad, int vocab_size) {
  const std::size_t width = output_grad.shape(1);
  xt::xtensor<T, 2> grad = xt::zeros<T>({std::size_t(vocab_size), width});
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    check_token(tokens(i), grad.shape(0), "embedding_lookup_grad");
    T* row = grad.data() + tokens(i) * width;
    const T* g = output_grad.data() + i * width;
    for (std::size_t c = 0; c < width; ++c) row[c] += g[c];
  }
  return grad;
}

#define DTK_GPT_INSTANTIATE(T)                                                          \
  template VocabParallelLoss<T> cross_entropy(const xt::xtensor<T, 2>&,                 \
                                              const xt::xtensor<std::int32_t, 1>&);     \
  template xt::xtensor<T, 2> embedding_lookup(const xt::xtensor<std::int32_t, 1>&,      \
                                              const xt::xtensor<T, 2>&);                \
  template xt::xtensor<T, 2> embedding_lookup_grad(const xt::xtensor<std::int32_t, 1>&, \
                                                   const xt::xtensor<T, 2>&, int);
DTK_GPT_INSTANTIATE(float)
DTK_GPT_INSTANTIATE(double)

}  // namespace dtk::gpt
