#include "dtk/gpt/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace dtk::gpt {

template <class T>
std::vector<std::int32_t> generate(Gpt<T>& model, const std::vector<std::int32_t>& prompt,
                                   int count, int alphabet_size, double temperature,
                                   std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::int32_t> text = prompt;
  const std::size_t context = model.config().seq_len;
  std::vector<double> weights(alphabet_size);
  for (int n = 0; n < count; ++n) {
    // The last T tokens, at positions 0 ... T − 1 as in training.
    const std::size_t length = std::min(text.size(), context);
    GptBatch batch;
    batch.batch = 1;
    batch.tokens.resize({length});
    std::copy(text.end() - length, text.end(), batch.tokens.begin());
    for (std::size_t s = 0; s < length; ++s) batch.positions.push_back(static_cast<int>(s));
    model.forward(batch);
    const Matrix<T>& local = model.logits();
    const auto& gather = model.communication().gather_vocabulary;
    const Matrix<T> logits = gather ? gather(local) : local;
    const T* last = logits.data() + (length - 1) * logits.shape(1);
    const T max = *std::max_element(last, last + alphabet_size);
    for (int v = 0; v < alphabet_size; ++v) {
      weights[v] = std::exp((last[v] - max) / temperature);
    }
    std::discrete_distribution<int> next(weights.begin(), weights.end());
    text.push_back(next(rng));
  }
  return std::vector<std::int32_t>(text.begin() + prompt.size(), text.end());
}

template std::vector<std::int32_t> generate(Gpt<float>&, const std::vector<std::int32_t>&, int, int,
                                            double, std::uint32_t);
template std::vector<std::int32_t> generate(Gpt<double>&, const std::vector<std::int32_t>&, int,
                                            int, double, std::uint32_t);

}  // namespace dtk::gpt
