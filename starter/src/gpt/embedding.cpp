#include "dtk/gpt/embedding.hpp"

#include <stdexcept>
#include <string>

#include "dtk/gpt/bytes.hpp"

namespace dtk::gpt {

template <class T>
Embedding<T>::Embedding(const GptConfig& config, const GptLayout& layout,
                        const InitialWeights& init, const GptCommunication<T>& comm)
    : token_table(row_slice<T>(
          "wte.weight", init.normal("wte.weight", config.vocab_size, config.hidden, 0.02),
          index_range(layout.vocab_begin(config),
                      layout.vocab_begin(config) + layout.local_vocab(config)))),
      position_table(config.llama()
                         ? Parameter<T>{}
                         : whole<T>("wpe.weight", init.normal("wpe.weight", config.seq_len,
                                                              config.hidden, 0.02))),
      comm_(comm),
      seq_len_(config.seq_len),
      vocab_begin_(layout.vocab_begin(config)),
      local_vocab_(layout.local_vocab(config)) {}

template <class T>
std::vector<Parameter<T>*> Embedding<T>::parameters() {
  if (position_table.value.size() == 0) return {&token_table};
  return {&token_table, &position_table};
}

template <class T>
const Matrix<T>& Embedding<T>::forward(const Tokens& tokens,
                                       const std::vector<int>& stream_positions, int slot) {
  Saved& s = saved_.fill(slot);
  s.tokens = &tokens;
  s.stream_positions = stream_positions;
  x_ = comm_.embedding_forward(tokens, token_table.value, vocab_begin_);
  const std::size_t per_sequence = stream_positions.size(), h = x_.shape(1);
  if (per_sequence == 0 || x_.shape(0) % per_sequence != 0) {
    throw std::logic_error("Embedding: the lookup returned " + std::to_string(x_.shape(0)) +
                           " rows for sequences of " + std::to_string(per_sequence) + " positions");
  }
  for (std::size_t row = 0; row < x_.shape(0); ++row) {
    const int position = stream_positions[row % per_sequence];
    if (position < 0 || position >= seq_len_) {
      throw std::invalid_argument("Embedding: position " + std::to_string(position) +
                                  " is outside the model's context [0, " +
                                  std::to_string(seq_len_) + ")");
    }
    if (position_table.value.size() == 0) continue;  // a Llama's: rotary positions
    const T* wpe = position_table.value.data() + position * h;
    for (std::size_t c = 0; c < h; ++c) x_(row, c) += wpe[c];
  }
  return x_;
}

template <class T>
void Embedding<T>::backward(const Matrix<T>& stream_grad, int slot) {
  const Saved& s = saved_.read(slot);
  const std::size_t per_sequence = s.stream_positions.size(), h = stream_grad.shape(1);
  for (std::size_t row = 0; position_table.value.size() != 0 && row < stream_grad.shape(0); ++row) {
    T* wpe = position_table.grad.data() + s.stream_positions[row % per_sequence] * h;
    for (std::size_t c = 0; c < h; ++c) wpe[c] += stream_grad(row, c);
  }
  token_table.grad += comm_.embedding_backward(*s.tokens, stream_grad, vocab_begin_, local_vocab_);
}

template <class T>
std::size_t Embedding<T>::workspace_bytes() const {
  return bytes_of(x_);
}

template class Embedding<float>;
template class Embedding<double>;

}  // namespace dtk::gpt
