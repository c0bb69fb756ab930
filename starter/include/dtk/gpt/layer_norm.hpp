// The norm over the features of each row, before the attention, before the MLP and after the
// last block. GPT-2's is LayerNorm (Ba, Kiros and Hinton, 2016):
//
//   y = x̂ · weight + bias,   x̂ = (x − mean) / √(var + eps)
//
// with the mean and the biased variance of each row's h values. A Llama's is RMSNorm (Zhang and
// Sennrich, 2019): the same without centring and without the bias,
//
//   y = x̂ · weight,          x̂ = x / √(mean(x²) + eps)
//
// Its parameters (1, h) are the same on every rank (Sharing::Replicated).
#pragma once

#include <string>
#include <vector>

#include "dtk/gpt/config.hpp"  // Bf16Rounding
#include "dtk/gpt/parameter.hpp"
#include "dtk/gpt/slots.hpp"

namespace dtk::gpt {

template <class T>
class LayerNorm {
 public:
  // The config's norm (LayerNorm, a Llama's RMSNorm) with its eps: parameters name.weight, and
  // name.bias for LayerNorm. weight starts at 1, bias at 0 (PyTorch's nn.LayerNorm). keep_bf16:
  // a bf16 run's rounding of x̂ and y (bf16_store.hpp).
  LayerNorm(const std::string& name, const GptConfig& config, Bf16Rounding keep_bf16 = {});

  // x (N, h) → y (N, h). Keeps x̂, 1 / √(var + eps) of each row and y in slot `slot` (slots.hpp)
  // for backward: y because the product after it reads it again.
  const Matrix<T>& forward(const Matrix<T>& x, int slot);

  // dy (N, h) → dx (N, h); adds to weight.grad (Σ_rows dy ⊙ x̂) and bias.grad (Σ_rows dy):
  //   dx̂ = dy ⊙ weight,   dx = (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂)) / √(var + eps)
  // (RMSNorm: without the mean(dx̂) term, which centring brought.)
  const Matrix<T>& backward(const Matrix<T>& dy, int slot);

  std::vector<Parameter<T>*> parameters() {
    return rms_ ? std::vector<Parameter<T>*>{&weight} : std::vector<Parameter<T>*>{&weight, &bias};
  }
  // Activations: what the slots keep for a backward pass, every slot's. Workspace: dx.
  // Slot's buffers given back (full recomputation: the block's forward runs again).
  void release(int slot) { saved_.release(slot); }
  // The matrices slot keeps for the backward, which a bf16 run holds as bf16 (bf16_store.hpp).
  std::vector<Matrix<T>*> kept(int slot) {
    Saved& s = saved_.read(slot);
    return {&s.normalized, &s.y};
  }
  std::size_t activation_bytes() const;
  std::size_t workspace_bytes() const;

  Parameter<T> weight, bias;  // bias: LayerNorm's only (empty for RMSNorm)

 private:
  struct Saved {
    Matrix<T> normalized;  // x̂ (N, h)
    Vector<T> inv_std;     // (N)
    Matrix<T> y;           // (N, h)
  };
  bool rms_;  // RMSNorm: no centring, no bias
  T eps_;
  Bf16Rounding keep_bf16_;
  Slots<Saved> saved_;
  Matrix<T> dx_;
};

}  // namespace dtk::gpt
