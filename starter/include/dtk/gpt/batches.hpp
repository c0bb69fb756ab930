// The sequences the GPT reads: a window of seq_len + 1 tokens of the corpus gives seq_len
// inputs (its first seq_len tokens) and their targets (each one's next token).
//
// Training step s reads a global batch of batch_size windows whose starts are drawn uniformly
// over the training text by a generator seeded with (seed, s): the same batch in every layout.
// A data-parallel rank reads its contiguous share of it. The validation windows are fixed:
// evenly spread over the held-out text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dtk/gpt/corpus.hpp"
#include "dtk/gpt/gpt.hpp"

namespace dtk::gpt {

// Where the windows of the global batch of training step `step` (from 1) start.
std::vector<std::size_t> training_windows(const Corpus& corpus, int seq_len, int batch_size,
                                          std::uint32_t seed, long step);

// Where the validation windows start: up to `count`, spread evenly over the held-out text.
std::vector<std::size_t> validation_windows(const Corpus& corpus, int seq_len, int count);

// The batch of the windows starts[first, first + count): tokens and targets (B · T, row
// b · T + s), positions 0 ... T − 1. loss_tokens: the tokens the loss is the mean over.
GptBatch make_batch(const Corpus& corpus, const std::vector<std::size_t>& starts, std::size_t first,
                    std::size_t count, int seq_len, double loss_tokens);

// The same windows at `positions` only (the S positions a context-parallel rank holds of each,
// Part 11): tokens and targets (B · S, row b · S + s at position positions[s]).
GptBatch make_batch(const Corpus& corpus, const std::vector<std::size_t>& starts, std::size_t first,
                    std::size_t count, const std::vector<int>& positions, double loss_tokens);

}  // namespace dtk::gpt
