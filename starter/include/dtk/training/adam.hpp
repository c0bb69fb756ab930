// Adam (Kingma and Ba, 2015) with bias correction, over a flat vector of parameters or over the
// shard of it that one ZeRO rank owns (Part 9).
#pragma once

#include <cstddef>

#include <xtensor/xtensor.hpp>

namespace dtk {

// The usual defaults (PyTorch's and the paper's).
struct AdamOptions {
  double beta1 = 0.9;    // decay of the momentum m, the running mean of the gradients
  double beta2 = 0.999;  // decay of the variance v, the running mean of the squared gradients
  double eps = 1e-8;     // keeps the step finite where v is 0
};

// T is float or double.
template <class T>
class Adam {
 public:
  // The optimizer states of `size` consecutive parameters, m and v, zero at the start. Plain data
  // parallelism keeps them for all numel parameters; a ZeRO rank (stage 1 and up) only for its
  // shard [begin, end) of zero_shard_range: size = end - begin. That is the memory ZeRO-1 saves.
  explicit Adam(std::size_t size, AdamOptions options = {});

  // One bias-corrected step (step t = steps() + 1) of params[offset, offset + size()), with the
  // gradients grad[0, size()) and the states [0, size()):
  //   m = beta1 m + (1 - beta1) g          v = beta2 v + (1 - beta2) g²
  //   param -= lr (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
  // grad may be longer than size(), e.g. a ZeRO shard of s values whose padding is ignored:
  //   plain data parallelism  step(params, 0, summed_grad)        params: numel values
  //   ZeRO-1 and ZeRO-2       step(params, begin, grad_shard)     params: numel values
  //   ZeRO-3                  step(param_shard, 0, grad_shard)    param_shard: s values
  // Throws std::invalid_argument when params or grad is too short.
  void step(xt::xtensor<T, 1>& params, std::size_t offset, const xt::xtensor<T, 1>& grad, T lr);

  std::size_t size() const { return m_.size(); }
  long steps() const { return steps_; }
  // The bytes of the states this optimizer keeps from step to step: m and v.
  std::size_t state_bytes() const { return (m_.size() + v_.size()) * sizeof(T); }

 private:
  AdamOptions options_;
  xt::xtensor<T, 1> m_, v_;
  long steps_ = 0;
};

}  // namespace dtk
