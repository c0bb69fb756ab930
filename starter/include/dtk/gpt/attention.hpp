// Causal multi-head self-attention, GPT-2's, with a fused QKV weight:
//
//   [q | k | v] = f(x) · W_qkv + b_qkv        W_qkv (h, 3h): columns [Q | K | V], head j's d
//                                             columns [j·d, (j+1)·d) inside each of Q, K and V
//   out, lse    = attention(q, k, v)          per head: softmax(q kᵀ / √d, causal) · v
//   y           = g(out · W_proj) + b_proj    W_proj (h, h)
//
// Tensor parallel (Megatron, Part 10): this rank holds some heads. `qkv_columns` (the layout's,
// from 10.1's qkv_columns) are its columns of W_qkv and b_qkv: its Q columns, then its K
// columns, then its V columns; its rows of W_proj are its Q columns (the rows that multiply its
// heads' outputs). Its q, k, v, out are (N, h/tp); the heads never talk to each other, so the
// attention itself needs no communication. The attention is GptCommunication's
// attention_forward/backward: the block kernel over all keys on one rank, ring attention under
// context parallelism (Part 11).
//
// q, k and v are computed by three products straight from W_qkv's three blocks of columns into
// three matrices, the layout the attention kernels take, so nothing is copied between them.
#pragma once

#include <string>
#include <vector>

#include "dtk/gpt/communication.hpp"
#include "dtk/gpt/config.hpp"
#include "dtk/gpt/parameter.hpp"
#include "dtk/gpt/slots.hpp"

namespace dtk::gpt {

template <class T>
class CausalSelfAttention {
 public:
  // Parameters prefix.qkv.weight, prefix.qkv.bias, prefix.proj.weight, prefix.proj.bias. `comm`
  // must outlive the layer.
  CausalSelfAttention(const std::string& prefix, const GptConfig& config, const GptLayout& layout,
                      const InitialWeights& init, const GptCommunication<T>& comm);

  // x (rows of the residual stream, h) → y (same). positions: the S positions of each of the
  // `batch` sequences that f(x) holds (rows b · S + s). Keeps what backward needs in slot
  // `slot` (slots.hpp), and a reference to x when f is empty: x must stay unchanged until then.
  const Matrix<T>& forward(const Matrix<T>& x, const std::vector<int>& positions, int batch,
                           int slot);
  // dy (rows of the residual stream, h) → dx (same); adds to the four parameters' gradients.
  const Matrix<T>& backward(const Matrix<T>& dy, int slot);

  std::vector<Parameter<T>*> parameters() {
    return {&qkv_weight, &qkv_bias, &proj_weight, &proj_bias};
  }
  // Slot's buffers given back (full recomputation: the block's forward runs again).
  void release(int slot) { saved_.release(slot); }
  // The matrices slot keeps for the backward, which a bf16 run holds as bf16 (bf16_store.hpp).
  std::vector<Matrix<T>*> kept(int slot);
  std::size_t activation_bytes() const;
  std::size_t workspace_bytes() const;

  Parameter<T> qkv_weight;   // (h, 3h/tp)
  Parameter<T> qkv_bias;     // (1, 3h/tp)
  Parameter<T> proj_weight;  // (h/tp, h)
  Parameter<T> proj_bias;    // (1, h), added after g

 private:
  const GptCommunication<T>& comm_;
  Bf16Rounding keep_bf16_;   // a bf16 run's: q, k, v and out rounded as they are made
  int heads_;                // this rank's
  std::size_t local_width_;  // h/tp: columns of q, k, v and out
  struct Saved {
    std::vector<int> positions;
    int batch = 0;
    const Matrix<T>* input = nullptr;  // f(x): x itself or entered
    Matrix<T> entered;                 // f(x) when f communicates; in backward, f's backward
    Matrix<T> q, k, v;                 // (N, h/tp)
    AttentionOutput<T> attention;      // out (N, h/tp), lse (N, heads/tp)
  };
  Slots<Saved> saved_;
  Matrix<T> partial_, exited_, y_;  // out · W_proj, g(·), + b_proj
  Matrix<T> out_grad_, input_grad_;
  AttentionGrads<T> attention_grads_;
};

}  // namespace dtk::gpt
