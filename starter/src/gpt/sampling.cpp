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
  const std::size_t multiple = model.layout().sequence_parallel ? model.layout().tp_size : 1;
  for (int n = 0; n < count; ++n) {
    // The last T tokens, at positions 0 ... T − 1 as in training. Under sequence parallelism
    // the positions must split evenly over tp: the last token is repeated up to a multiple of
    // tp (T is one), which changes nothing before it, the attention being causal.
    const std::size_t length = std::min(text.size(), context);
    const std::size_t padded = (length + multiple - 1) / multiple * multiple;
    GptBatch batch;
    batch.batch = 1;
    batch.tokens = Tokens::from_shape({padded});
    batch.tokens.fill(text.back());
    std::copy(text.end() - length, text.end(), batch.tokens.begin());
    for (std::size_t s = 0; s < padded; ++s) batch.positions.push_back(static_cast<int>(s));
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
