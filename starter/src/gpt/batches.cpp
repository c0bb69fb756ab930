#include "dtk/gpt/batches.hpp"

#include <algorithm>
#include <random>

namespace dtk::gpt {

std::vector<std::size_t> training_windows(const Corpus& corpus, int seq_len, int batch_size,
                                          std::uint32_t seed, long step) {
  std::seed_seq seq{seed, static_cast<std::uint32_t>(step), 0x9a7au};
  std::mt19937_64 rng(seq);
  // A window [start, start + T + 1) lies inside the training text.
  std::uniform_int_distribution<std::size_t> start(0, corpus.training_tokens() - seq_len - 1);
  std::vector<std::size_t> starts(batch_size);
  for (std::size_t& s : starts) s = start(rng);
  return starts;
}

std::vector<std::size_t> validation_windows(const Corpus& corpus, int seq_len, int count) {
  const std::size_t last = corpus.tokens.size() - seq_len - 1;  // the last start that fits
  const std::size_t span = last - corpus.validation_begin;
  const std::size_t windows = std::min<std::size_t>(count, span / seq_len + 1);
  std::vector<std::size_t> starts(windows);
  for (std::size_t i = 0; i < windows; ++i) {
    starts[i] = corpus.validation_begin + (windows > 1 ? span * i / (windows - 1) : 0);
  }
  return starts;
}

GptBatch make_batch(const Corpus& corpus, const std::vector<std::size_t>& starts, std::size_t first,
                    std::size_t count, int seq_len, double loss_tokens) {
  std::vector<int> positions(seq_len);
  for (int s = 0; s < seq_len; ++s) positions[s] = s;
  return make_batch(corpus, starts, first, count, positions, loss_tokens);
}

GptBatch make_batch(const Corpus& corpus, const std::vector<std::size_t>& starts, std::size_t first,
                    std::size_t count, const std::vector<int>& positions, double loss_tokens) {
  GptBatch batch;
  batch.batch = static_cast<int>(count);
  batch.positions = positions;
  const std::size_t per_sequence = positions.size();
  batch.tokens.resize({count * per_sequence});
  batch.targets.resize({count * per_sequence});
  for (std::size_t b = 0; b < count; ++b) {
    const std::int32_t* window = corpus.tokens.data() + starts[first + b];
    for (std::size_t s = 0; s < per_sequence; ++s) {
      batch.tokens(b * per_sequence + s) = window[positions[s]];
      batch.targets(b * per_sequence + s) = window[positions[s] + 1];
    }
  }
  batch.loss_tokens = loss_tokens;
  return batch;
}

}  // namespace dtk::gpt
