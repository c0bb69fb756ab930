#include "dtk/gpt/attention_loops.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dtk {

template <class T>
AttentionOutput<T> attention_block_forward_loops(const xt::xtensor<T, 2>& q,
                                                 const xt::xtensor<T, 2>& k,
                                                 const xt::xtensor<T, 2>& v,
                                                 const std::vector<int>& q_positions,
                                                 const std::vector<int>& k_positions, int batch,
                                                 int heads) {
  const std::size_t sq = q_positions.size(), sk = k_positions.size();
  const std::size_t d = q.shape(1) / heads;
  const std::size_t group = q.shape(1) / k.shape(1);  // query heads per key/value head
  const T scale = T(1) / std::sqrt(T(d));
  AttentionOutput<T> r{
      xt::zeros<T>(q.shape()),
      xt::xtensor<T, 2>({q.shape(0), std::size_t(heads)}, -std::numeric_limits<T>::infinity())};
  std::vector<T> scores(sk);
  for (std::size_t b = 0; b < std::size_t(batch); ++b) {
    for (std::size_t h = 0; h < std::size_t(heads); ++h) {
      const std::size_t kv = h / group;  // the key/value head query head h reads
      for (std::size_t i = 0; i < sq; ++i) {
        const std::size_t row = b * sq + i;  // query i of sequence b
        // The scores of the keys query i sees, and the largest of them.
        T largest = -std::numeric_limits<T>::infinity();
        for (std::size_t j = 0; j < sk; ++j) {
          if (k_positions[j] > q_positions[i]) continue;
          T s = 0;
          for (std::size_t c = 0; c < d; ++c) s += q(row, h * d + c) * k(b * sk + j, kv * d + c);
          scores[j] = s * scale;
          largest = std::max(largest, scores[j]);
        }
        if (largest == -std::numeric_limits<T>::infinity()) continue;  // no key seen
        // Softmax weights exp(s_j − largest) / Σ, and the weighted sum of the values.
        T total = 0;
        for (std::size_t j = 0; j < sk; ++j) {
          if (k_positions[j] <= q_positions[i]) total += std::exp(scores[j] - largest);
        }
        for (std::size_t j = 0; j < sk; ++j) {
          if (k_positions[j] > q_positions[i]) continue;
          const T weight = std::exp(scores[j] - largest) / total;
          for (std::size_t c = 0; c < d; ++c)
            r.out(row, h * d + c) += weight * v(b * sk + j, kv * d + c);
        }
        r.lse(row, h) = largest + std::log(total);
      }
    }
  }
  return r;
}

#define DTK_GPT_INSTANTIATE(T)                                                      \
  template AttentionOutput<T> attention_block_forward_loops(                        \
      const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&, \
      const std::vector<int>&, const std::vector<int>&, int, int);
DTK_GPT_INSTANTIATE(float)
DTK_GPT_INSTANTIATE(double)

}  // namespace dtk
