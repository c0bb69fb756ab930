// Causal multi-head self-attention, GPT-2's (a Llama's below), with a fused QKV weight:
//
//   [q | k | v] = f(x) · W_qkv + b_qkv        W_qkv (h, 3h): columns [Q | K | V], head j's d
//                                             columns [j·d, (j+1)·d) inside each of Q, K and V
//   out, lse    = attention(q, k, v)          per head: softmax(q kᵀ / √d, causal) · v
//   y           = g(out · W_proj) + b_proj    W_proj (h, h)
//
// A Llama's differs in three ways: no biases; grouped-query attention, kv key/value heads that
// a/kv query heads each read (W_qkv (h, (a + 2kv) d): Q's a · d columns, then K's and V's kv · d;
// query head j reads key/value head j / (a/kv)); and rotary positions (rotary.hpp), q and k
// turned by their rows' absolute positions before the attention (so cached k and v, and context
// parallelism's ring, carry turned keys):
//
//   q, k ← rotate(q), rotate(k)               before attention(q, k, v)
//
// Tensor parallel (Megatron, Part 10): this rank holds some heads. `qkv_columns` (the layout's,
// from 10.1's qkv_columns) are its columns of W_qkv and b_qkv: its Q columns, then the K columns
// of the key/value heads its query heads read, then their V columns; its rows of W_proj are its
// Q columns (the rows that multiply its heads' outputs). Its q and out are (N, h/tp), k and v
// (N, its kv heads · d); the heads never talk to each other, so the attention itself needs no
// communication. With fewer key/value heads than ranks (kv < tp) tp/kv ranks hold each one: its
// K and V columns are then a parameter of their own, kv_weight, whose gradient on one rank
// covers that rank's query heads only (the trainer sums it over the replicas, parameter.hpp's
// Sharing::KeyValueReplicas). The attention is GptCommunication's
// attention_forward/backward: the block kernel over all keys on one rank, ring attention under
// context parallelism (Part 11).
//
// q, k and v are computed by three products straight from W_qkv's three blocks of columns into
// three matrices, the layout the attention kernels take, so nothing is copied between them.
#pragma once

#include <string>
#include <utility>
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
  // dy (rows of the residual stream, h) → dx (same); adds to the parameters' gradients.
  const Matrix<T>& backward(const Matrix<T>& dy, int slot);

  // qkv.weight, qkv.bias, proj.weight, proj.bias (a Llama's: the two weights, and kv_weight
  // after qkv.weight when it holds any).
  std::vector<Parameter<T>*> parameters();
  // Slot's buffers given back (full recomputation: the block's forward runs again).
  void release(int slot) { saved_.release(slot); }
  // The matrices slot keeps for the backward, which a bf16 run holds as bf16 (bf16_store.hpp).
  std::vector<Matrix<T>*> kept(int slot);
  std::size_t activation_bytes() const;
  std::size_t workspace_bytes() const;

  Parameter<T> qkv_weight;  // (h, 3h/tp); a Llama's (h, (a + 2kv) d/tp), or its Q columns alone
  Parameter<T> kv_weight;   // replicated key/value heads: their K and V columns (h, 2d); else empty
  Parameter<T> qkv_bias;    // (1, 3h/tp); empty for a Llama
  Parameter<T> proj_weight;  // (h/tp, h)
  Parameter<T> proj_bias;    // (1, h), added after g; empty for a Llama

 private:
  const GptCommunication<T>& comm_;
  Bf16Rounding keep_bf16_;  // a bf16 run's: q, k, v and out rounded as they are made
  bool llama_;              // no biases; rotary positions of base rope_theta_
  double rope_theta_;
  int heads_, kv_heads_;  // this rank's query heads and key/value heads
  // Columns of q (and out), then of k and of v: this rank's query heads' and kv heads' · d.
  std::size_t widths_[3];
  // Block `part` of W_qkv's columns (0 Q, 1 K, 2 V): the parameter holding it, and its first
  // column there.
  std::pair<Parameter<T>*, std::size_t> columns_of(std::size_t part);
  struct Saved {
    std::vector<int> positions;
    int batch = 0;
    const Matrix<T>* input = nullptr;  // f(x): x itself or entered
    Matrix<T> entered;                 // f(x) when f communicates; in backward, f's backward
    Matrix<T> q, k, v;                 // (N, widths_[0..2]); q and k turned (a Llama's)
    AttentionOutput<T> attention;      // out (N, h/tp), lse (N, heads/tp)
  };
  Slots<Saved> saved_;
  Matrix<T> partial_, exited_, y_;  // out · W_proj, g(·), + b_proj
  Matrix<T> out_grad_, input_grad_;
  AttentionGrads<T> attention_grads_;
};

}  // namespace dtk::gpt
