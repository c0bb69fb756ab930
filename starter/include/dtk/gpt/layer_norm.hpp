// LayerNorm over the features of each row (Ba, Kiros and Hinton, 2016), as GPT-2 places it
// before the attention, before the MLP and after the last block:
//
//   y = x̂ · weight + bias,   x̂ = (x − mean) / √(var + eps)
//
// with the mean and the biased variance of each row's h values. Its parameters (1, h) are the
// same on every rank (Sharing::Replicated).
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
  // weight starts at 1, bias at 0 (PyTorch's nn.LayerNorm). keep_bf16: a bf16 run's rounding of
  // x̂ and y (bf16_store.hpp).
  LayerNorm(const std::string& name, int width, double eps, Bf16Rounding keep_bf16 = {});

  // x (N, h) → y (N, h). Keeps x̂, 1 / √(var + eps) of each row and y in slot `slot` (slots.hpp)
  // for backward: y because the product after it reads it again.
  const Matrix<T>& forward(const Matrix<T>& x, int slot);

  // dy (N, h) → dx (N, h); adds to weight.grad (Σ_rows dy ⊙ x̂) and bias.grad (Σ_rows dy):
  //   dx̂ = dy ⊙ weight,   dx = (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂)) / √(var + eps)
  const Matrix<T>& backward(const Matrix<T>& dy, int slot);

  std::vector<Parameter<T>*> parameters() { return {&weight, &bias}; }
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

  Parameter<T> weight, bias;

 private:
  struct Saved {
    Matrix<T> normalized;  // x̂ (N, h)
    Vector<T> inv_std;     // (N)
    Matrix<T> y;           // (N, h)
  };
  T eps_;
  Bf16Rounding keep_bf16_;
  Slots<Saved> saved_;
  Matrix<T> dx_;
};

}  // namespace dtk::gpt
