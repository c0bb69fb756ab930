// The block's MLP, h → f → h. GPT-2's has GELU between (the tanh form GPT-2 uses), f = 4h:
//
//   y = g( GELU(f(x) · W1 + b1) · W2 ) + b2       W1 (h, f), b1 (1, f), W2 (f, h), b2 (1, h)
//   GELU(u) = u/2 · (1 + tanh(√(2/π) · (u + 0.044715 u³)))
//
// A Llama's is SwiGLU (Shazeer, 2020), without biases: two products of the input, one gating
// the other through SiLU. Its gate and up weights are one matrix W1 = [W_gate | W_up] (h, 2f):
//
//   [gate | up] = f(x) · W1,   y = g( (SiLU(gate) ⊙ up) · W2 )      SiLU(u) = u · σ(u)
//
// Tensor parallel (Megatron): fc1 is column-parallel, this rank holds the hidden columns
// [mlp_begin, +f/tp) of W1 and b1 (a Llama's: those columns of W_gate, then of W_up) and the
// same rows of W2 (fc2 is row-parallel); f and g are GptCommunication's enter and exit. Each
// rank's activation works on its own columns: no communication between the two products. An
// expert of a mixture of experts is the same MLP, whole, without f and g.
//
// With selective recomputation (the layout's Recompute::Selective) the forward does not keep
// x · W1 (+ b1) and its activation (2 N f/tp values; 3 N f/tp for SwiGLU): the backward computes
// them again from f(x), into buffers it frees before it returns, so that one block's exist at a
// time, not every block's.
#pragma once

#include <string>
#include <vector>

#include "dtk/gpt/communication.hpp"
#include "dtk/gpt/config.hpp"
#include "dtk/gpt/linear.hpp"
#include "dtk/gpt/slots.hpp"

namespace dtk::gpt {

template <class T>
class Mlp {
 public:
  // The block's MLP, named prefix.fc1.weight, ...: this rank's slice, with f and g from `comm`,
  // which must outlive it.
  Mlp(const std::string& prefix, const GptConfig& config, const GptLayout& layout,
      const InitialWeights& init, const GptCommunication<T>& comm);
  // Expert `prefix` of a mixture: whole (Sharing::Expert), no communication; its hidden
  // activation recomputed as the layout says.
  Mlp(const std::string& prefix, const GptConfig& config, const GptLayout& layout,
      const InitialWeights& init);

  // x (N, h) → y (N, h): the block's residual stream rows, or the rows an expert processes.
  // Keeps what backward needs in slot `slot` (slots.hpp), and a reference to x when f is
  // empty: x must stay unchanged until the slot's backward.
  const Matrix<T>& forward(const Matrix<T>& x, int slot);
  // dy (N, h) → dx (N, h); adds to the gradients of W1, b1, W2, b2 (a Llama's W1 and W2).
  const Matrix<T>& backward(const Matrix<T>& dy, int slot);

  std::vector<Parameter<T>*> parameters();
  // Every slot's buffers given back (full recomputation: the block's forward runs again).
  void release(int slot) { saved_.release(slot); }
  // The matrices slot keeps for the backward, which a bf16 run holds as bf16 (bf16_store.hpp).
  std::vector<Matrix<T>*> kept(int slot);
  std::size_t activation_bytes() const;
  std::size_t workspace_bytes() const;
  // Selective recomputation: the most the recomputed activation took at once (0 without).
  std::size_t recomputed_bytes() const { return recomputed_peak_; }

 private:
  Mlp(const std::string& prefix, const GptConfig& config, const GptLayout& layout,
      const InitialWeights& init, const std::vector<int>& hidden_columns, Sharing sharing,
      const GptCommunication<T>* comm);
  // pre_activation = input · W1 (+ b1), hidden = its GELU or SwiGLU (a bf16 run rounds each)
  void hidden_activation(const Matrix<T>& input, Matrix<T>& pre_activation, Matrix<T>& hidden);
  void release_recomputed();  // frees the recomputed buffers, noting their size

  struct Saved {
    const Matrix<T>* input = nullptr;  // f(x): x itself or entered
    Matrix<T> entered;                 // f(x) when f communicates; in backward, f's backward
    Matrix<T> pre_activation;          // x · W1 (+ b1), (N, f/tp; 2f/tp for SwiGLU)
    Matrix<T> hidden;                  // its activation (N, f/tp), for W2's gradient
  };
  const GptCommunication<T>* comm_;  // f and g; nullptr for an expert
  bool swiglu_;                      // a Llama's: SwiGLU, no biases
  Linear<T> fc1_, fc2_;              // fc2 without its bias: b2 comes after g
  Parameter<T> fc2_bias_;            // GPT-2's b2; empty for a Llama
  Slots<Saved> saved_;
  bool recompute_hidden_;
  Bf16Rounding keep_bf16_;
  // Selective: the forward's x · W1 + b1 and GELU, not kept; the backward's, freed after it.
  Matrix<T> recomputed_pre_activation_, recomputed_hidden_;
  std::size_t recomputed_peak_ = 0;
  Matrix<T> partial_, exited_, y_;  // · W2, g(·) when it communicates, + b2
  Matrix<T> hidden_grad_, pre_activation_grad_, input_grad_;
};

}  // namespace dtk::gpt
