#include "dtk/gpt/layer_norm.hpp"

#include <cmath>

#include "dtk/gpt/parallel.hpp"

#include "dtk/gpt/bf16_store.hpp"
#include "dtk/gpt/bytes.hpp"

namespace dtk::gpt {

template <class T>
LayerNorm<T>::LayerNorm(const std::string& name, const GptConfig& config, Bf16Rounding keep_bf16)
    : weight(whole<T>(name + ".weight", constant(1, config.hidden, 1.0))),
      bias(config.llama() ? Parameter<T>{}
                          : whole<T>(name + ".bias", constant(1, config.hidden, 0.0))),
      rms_(config.llama()),
      eps_(static_cast<T>(config.layer_norm_eps)),
      keep_bf16_(std::move(keep_bf16)) {}

template <class T>
const Matrix<T>& LayerNorm<T>::forward(const Matrix<T>& x, int slot) {
  const std::size_t rows = x.shape(0), h = x.shape(1);
  Saved& s = saved_.fill(slot);
  ensure_shape(s.normalized, rows, h);
  ensure_shape(s.y, rows, h);
  s.inv_std.resize({rows});
  const T* w = weight.value.data();
  const T* b = rms_ ? nullptr : bias.value.data();
  parallel_for(rows, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) {
      const T* in = x.data() + i * h;
      T* xhat = s.normalized.data() + i * h;
      T* out = s.y.data() + i * h;
      T mean = 0;  // RMSNorm's "variance" is mean(x²): the mean taken as 0
      if (!rms_) {
        for (std::size_t j = 0; j < h; ++j) mean += in[j];
        mean /= T(h);
      }
      T variance = 0;
      for (std::size_t j = 0; j < h; ++j) variance += (in[j] - mean) * (in[j] - mean);
      variance /= T(h);
      const T inv_std = T(1) / std::sqrt(variance + eps_);
      s.inv_std(i) = inv_std;
      for (std::size_t j = 0; j < h; ++j) {
        xhat[j] = (in[j] - mean) * inv_std;
        out[j] = b ? xhat[j] * w[j] + b[j] : xhat[j] * w[j];
      }
    }
  });
  round_in_place(s.normalized, keep_bf16_);
  round_in_place(s.y, keep_bf16_);
  return s.y;
}

template <class T>
const Matrix<T>& LayerNorm<T>::backward(const Matrix<T>& dy, int slot) {
  const std::size_t rows = dy.shape(0), h = dy.shape(1);
  const Saved& s = saved_.read(slot);
  ensure_shape(dx_, rows, h);
  const T* w = weight.value.data();
  parallel_for(rows, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) {
      const T* g = dy.data() + i * h;
      const T* xhat = s.normalized.data() + i * h;
      T* out = dx_.data() + i * h;
      // mean(dx̂) and mean(dx̂ ⊙ x̂), with dx̂ = dy ⊙ weight
      T mean_dxhat = 0, mean_dxhat_xhat = 0;
      for (std::size_t j = 0; j < h; ++j) {
        const T dxhat = g[j] * w[j];
        mean_dxhat += dxhat;
        mean_dxhat_xhat += dxhat * xhat[j];
      }
      mean_dxhat = rms_ ? T(0) : mean_dxhat / T(h);
      mean_dxhat_xhat /= T(h);
      for (std::size_t j = 0; j < h; ++j) {
        out[j] = (g[j] * w[j] - mean_dxhat - xhat[j] * mean_dxhat_xhat) * s.inv_std(i);
      }
    }
  });
  // The parameters' gradients, summed over the rows in order (the same sums every run).
  T* dw = weight.grad.data();
  T* db = rms_ ? nullptr : bias.grad.data();
  for (std::size_t i = 0; i < rows; ++i) {
    const T* g = dy.data() + i * h;
    const T* xhat = s.normalized.data() + i * h;
    for (std::size_t j = 0; j < h; ++j) dw[j] += g[j] * xhat[j];
    if (db) {
      for (std::size_t j = 0; j < h; ++j) db[j] += g[j];
    }
  }
  return dx_;
}

template <class T>
std::size_t LayerNorm<T>::activation_bytes() const {
  return saved_.total([](const Saved& s) { return bytes_of(s.normalized, s.inv_std, s.y); });
}

template <class T>
std::size_t LayerNorm<T>::workspace_bytes() const {
  return bytes_of(dx_);
}

template class LayerNorm<float>;
template class LayerNorm<double>;

}  // namespace dtk::gpt
