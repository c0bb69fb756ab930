// Writing text with a trained GPT: one character at a time, each drawn from the model's
// distribution of the next character given the last T before it.
#pragma once

#include <cstdint>
#include <vector>

#include "dtk/gpt/gpt.hpp"

namespace dtk::gpt {

// `count` tokens following `prompt` (at least one token). Each is drawn from softmax(logits /
// temperature) of the model's last position over the first alphabet_size tokens (the padding
// tokens never occur), with a generator seeded by `seed`. Collective over the ranks holding the
// model (its communication's).
template <class T>
std::vector<std::int32_t> generate(Gpt<T>& model, const std::vector<std::int32_t>& prompt,
                                   int count, int alphabet_size, double temperature,
                                   std::uint32_t seed);

}  // namespace dtk::gpt
