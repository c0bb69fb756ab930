// The GPT's input: a learned vector per token and a learned vector per position, added.
//
//   x[b · S + s] = wte[tokens[b · S + s]] + wpe[positions[s]]      wte (V, h), wpe (T, h)
//
// A Llama has no wpe: its attention turns queries and keys by their positions (rotary.hpp).
//
// Tensor parallel (Part 10.2): this rank holds the rows [vocab_begin, +V/tp) of wte and
// GptCommunication's embedding_forward sums the ranks' lookups. With sequence parallelism the
// residual stream holds only this rank's S/tp positions of each sequence: the lookup returns
// those rows, and each gets its own position's vector.
#pragma once

#include <string>
#include <vector>

#include "dtk/gpt/communication.hpp"
#include "dtk/gpt/config.hpp"
#include "dtk/gpt/parameter.hpp"
#include "dtk/gpt/slots.hpp"

namespace dtk::gpt {

template <class T>
class Embedding {
 public:
  // Parameters wte.weight and wpe.weight (a Llama's: wte.weight). `comm` must outlive the layer.
  Embedding(const GptConfig& config, const GptLayout& layout, const InitialWeights& init,
            const GptCommunication<T>& comm);

  // tokens: all B · S tokens of this rank's sequences; stream_positions: the positions of each
  // sequence that the residual stream holds (all S of them, or this rank's S/tp under sequence
  // parallelism). Returns the residual stream, (B · stream_positions.size(), h). Keeps the
  // positions and a reference to `tokens` in slot `slot` (slots.hpp): the tokens must stay
  // unchanged until the slot's backward.
  const Matrix<T>& forward(const Tokens& tokens, const std::vector<int>& stream_positions,
                           int slot);
  // stream_grad: d loss / d the residual stream; adds to both tables' gradients.
  void backward(const Matrix<T>& stream_grad, int slot);

  std::vector<Parameter<T>*> parameters();
  std::size_t workspace_bytes() const;

  Parameter<T> token_table;     // wte (V/tp, h)
  Parameter<T> position_table;  // wpe (T, h), the same on every rank; empty for a Llama

 private:
  const GptCommunication<T>& comm_;
  int seq_len_, vocab_begin_, local_vocab_;
  struct Saved {
    const Tokens* tokens = nullptr;
    std::vector<int> stream_positions;
  };
  Slots<Saved> saved_;
  Matrix<T> x_;
};

}  // namespace dtk::gpt
