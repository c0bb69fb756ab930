#include "dtk/gpt/mlp.hpp"

#include <algorithm>
#include <cmath>

#include "dtk/gpt/parallel.hpp"

#include "dtk/gpt/bf16_store.hpp"
#include "dtk/gpt/bytes.hpp"

namespace dtk::gpt {

namespace {

// √(2/π) and the cubic term's coefficient of GELU's tanh form.
constexpr double kGeluScale = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;

// tanh(y) = 1 − 2 / (e^{2y} + 1): one exp, several times quicker than std::tanh, and exact to a
// rounding error in 1 + tanh (all GELU needs). e^{2y} overflowing to infinity gives 1.
template <class T>
T fast_tanh(T y) {
  return T(1) - T(2) / (std::exp(T(2) * y) + T(1));
}

// out = GELU(u)
template <class T>
void gelu(const Matrix<T>& u, Matrix<T>& out) {
  ensure_shape(out, u.shape(0), u.shape(1));
  const T c = T(kGeluScale), a = T(kGeluCubic);
  const T* in = u.data();
  T* o = out.data();
  parallel_for(u.size(), [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) {
      const T x = in[i];
      o[i] = T(0.5) * x * (T(1) + fast_tanh(c * (x + a * x * x * x)));
    }
  });
}

// grad = out_grad ⊙ GELU'(u), GELU'(u) = (1 + t)/2 + u/2 · (1 − t²) · √(2/π) · (1 + 3a u²)
// with t = tanh(√(2/π) (u + a u³)).
template <class T>
void gelu_backward(const Matrix<T>& u, const Matrix<T>& out_grad, Matrix<T>& grad) {
  ensure_shape(grad, u.shape(0), u.shape(1));
  const T c = T(kGeluScale), a = T(kGeluCubic);
  const T* in = u.data();
  const T* g = out_grad.data();
  T* o = grad.data();
  parallel_for(u.size(), [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) {
      const T x = in[i];
      const T t = fast_tanh(c * (x + a * x * x * x));
      const T derivative =
          T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * c * (T(1) + T(3) * a * x * x);
      o[i] = g[i] * derivative;
    }
  });
}

// SwiGLU: out = SiLU(gate) ⊙ up, with gate and up the two halves of each row of
// pre_activation (N, 2w).
template <class T>
void swiglu(const Matrix<T>& pre_activation, Matrix<T>& out) {
  const std::size_t rows = pre_activation.shape(0), w = pre_activation.shape(1) / 2;
  ensure_shape(out, rows, w);
  parallel_for(rows, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) {
      const T* gate = pre_activation.data() + i * 2 * w;
      const T* up = gate + w;
      T* o = out.data() + i * w;
      for (std::size_t j = 0; j < w; ++j) o[j] = gate[j] / (T(1) + std::exp(-gate[j])) * up[j];
    }
  });
}

// grad (N, 2w) = [d gate | d up] from out_grad (N, w):
//   d up = out_grad ⊙ SiLU(gate),   d gate = out_grad ⊙ up ⊙ σ(gate) (1 + gate (1 − σ(gate)))
template <class T>
void swiglu_backward(const Matrix<T>& pre_activation, const Matrix<T>& out_grad, Matrix<T>& grad) {
  const std::size_t rows = pre_activation.shape(0), w = pre_activation.shape(1) / 2;
  ensure_shape(grad, rows, 2 * w);
  parallel_for(rows, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) {
      const T* gate = pre_activation.data() + i * 2 * w;
      const T* up = gate + w;
      const T* g = out_grad.data() + i * w;
      T* d_gate = grad.data() + i * 2 * w;
      T* d_up = d_gate + w;
      for (std::size_t j = 0; j < w; ++j) {
        const T sigmoid = T(1) / (T(1) + std::exp(-gate[j]));
        d_up[j] = g[j] * gate[j] * sigmoid;
        d_gate[j] = g[j] * up[j] * sigmoid * (T(1) + gate[j] * (T(1) - sigmoid));
      }
    }
  });
}

}  // namespace

template <class T>
Mlp<T>::Mlp(const std::string& prefix, const GptConfig& config, const GptLayout& layout,
            const InitialWeights& init, const GptCommunication<T>& comm)
    : Mlp(prefix, config, layout, init,
          index_range(layout.mlp_begin(config),
                      layout.mlp_begin(config) + layout.local_mlp_width(config)),
          Sharing::TensorParallel, &comm) {}

template <class T>
Mlp<T>::Mlp(const std::string& prefix, const GptConfig& config, const GptLayout& layout,
            const InitialWeights& init)
    : Mlp(prefix, config, layout, init, index_range(0, config.mlp_width()), Sharing::Expert,
          nullptr) {}

namespace {

template <class T>
Parameter<T> shared_as(Parameter<T> p, Sharing sharing) {
  p.sharing = sharing;
  return p;
}

// fc1's columns for the hidden columns `hidden` of f: those, and for SwiGLU the same of W_up
// (+ f) after them.
std::vector<int> fc1_columns(const GptConfig& config, const std::vector<int>& hidden) {
  std::vector<int> columns = hidden;
  if (config.llama()) {
    for (const int column : hidden) columns.push_back(column + config.mlp_width());
  }
  return columns;
}

// fc1: W1 (h, f) with b1, or a Llama's [W_gate | W_up] (h, 2f) alone.
template <class T>
Linear<T> make_fc1(const std::string& prefix, const GptConfig& config, const InitialWeights& init,
                   const std::vector<int>& hidden, Sharing sharing) {
  const int width = config.fc1_width();
  const std::vector<int> columns = fc1_columns(config, hidden);
  Parameter<T> weight = shared_as(
      column_slice<T>(prefix + ".fc1.weight",
                      init.normal(prefix + ".fc1.weight", config.hidden, width, 0.02), columns),
      sharing);
  if (config.llama()) return Linear<T>(std::move(weight));
  return Linear<T>(
      std::move(weight),
      shared_as(column_slice<T>(prefix + ".fc1.bias", constant(1, width, 0.0), columns), sharing));
}

}  // namespace

template <class T>
Mlp<T>::Mlp(const std::string& prefix, const GptConfig& config, const GptLayout& layout,
            const InitialWeights& init, const std::vector<int>& hidden_columns, Sharing sharing,
            const GptCommunication<T>* comm)
    : comm_(comm),
      swiglu_(config.llama()),
      fc1_(make_fc1<T>(prefix, config, init, hidden_columns, sharing)),
      // GPT-2 scales the products that add to the residual stream by 1/√(2L).
      fc2_(shared_as(row_slice<T>(prefix + ".fc2.weight",
                                  init.normal(prefix + ".fc2.weight", config.mlp_width(),
                                              config.hidden, 0.02 / std::sqrt(2.0 * config.layers)),
                                  hidden_columns),
                     sharing)),
      fc2_bias_(config.llama()
                    ? Parameter<T>{}
                    : whole<T>(prefix + ".fc2.bias", constant(1, config.hidden, 0.0),
                               sharing == Sharing::Expert ? Sharing::Expert : Sharing::Replicated)),
      recompute_hidden_(layout.recompute == Recompute::Selective),
      keep_bf16_(layout.keep_bf16) {}

template <class T>
void Mlp<T>::hidden_activation(const Matrix<T>& input, Matrix<T>& pre_activation,
                               Matrix<T>& hidden) {
  fc1_.forward(input, pre_activation);
  round_in_place(pre_activation, keep_bf16_);
  if (swiglu_) {
    swiglu(pre_activation, hidden);
  } else {
    gelu(pre_activation, hidden);
  }
  round_in_place(hidden, keep_bf16_);
}

template <class T>
void Mlp<T>::release_recomputed() {
  recomputed_peak_ =
      std::max(recomputed_peak_, bytes_of(recomputed_pre_activation_, recomputed_hidden_));
  recomputed_pre_activation_ = Matrix<T>();
  recomputed_hidden_ = Matrix<T>();
}

template <class T>
const Matrix<T>& Mlp<T>::forward(const Matrix<T>& x, int slot) {
  Saved& s = saved_.fill(slot);
  s.input = comm_ ? &communicate(comm_->enter_forward, x, s.entered) : &x;  // f
  Matrix<T>& hidden = recompute_hidden_ ? recomputed_hidden_ : s.hidden;
  hidden_activation(*s.input, recompute_hidden_ ? recomputed_pre_activation_ : s.pre_activation,
                    hidden);
  fc2_.forward(hidden, partial_);
  if (recompute_hidden_) release_recomputed();
  y_ = comm_ ? communicate(comm_->exit_forward, partial_, exited_) : partial_;  // g
  if (!swiglu_) add_row(y_, fc2_bias_.value);
  return y_;
}

template <class T>
const Matrix<T>& Mlp<T>::backward(const Matrix<T>& dy, int slot) {
  Saved& s = saved_.read(slot);
  if (!swiglu_) add_column_sums(dy, fc2_bias_.grad);
  const Matrix<T>& partial_grad = comm_ ? communicate(comm_->exit_backward, dy, exited_) : dy;
  if (recompute_hidden_)
    hidden_activation(*s.input, recomputed_pre_activation_, recomputed_hidden_);
  const Matrix<T>& pre_activation =
      recompute_hidden_ ? recomputed_pre_activation_ : s.pre_activation;
  fc2_.backward(recompute_hidden_ ? recomputed_hidden_ : s.hidden, partial_grad, hidden_grad_);
  if (swiglu_) {
    swiglu_backward(pre_activation, hidden_grad_, pre_activation_grad_);
  } else {
    gelu_backward(pre_activation, hidden_grad_, pre_activation_grad_);
  }
  fc1_.backward(*s.input, pre_activation_grad_, input_grad_);
  if (recompute_hidden_) release_recomputed();
  // fc1's backward has read f(x): its buffer can take f's backward now.
  return comm_ ? communicate(comm_->enter_backward, input_grad_, s.entered) : input_grad_;
}

template <class T>
std::vector<Parameter<T>*> Mlp<T>::parameters() {
  std::vector<Parameter<T>*> all = fc1_.parameters();
  all.push_back(&fc2_.weight);
  if (!swiglu_) all.push_back(&fc2_bias_);
  return all;
}

template <class T>
std::vector<Matrix<T>*> Mlp<T>::kept(int slot) {
  Saved& s = saved_.read(slot);
  std::vector<Matrix<T>*> kept;
  if (!recompute_hidden_) kept = {&s.pre_activation, &s.hidden};
  if (comm_ && comm_->enter_forward) kept.push_back(&s.entered);  // else f(x) is x: its owner's
  return kept;
}

template <class T>
std::size_t Mlp<T>::activation_bytes() const {
  // f(x) for W1's gradient when f made it (else entered holds only f's backward: a
  // workspace), x · W1 (+ b1) for the activation's, the activation for W2's (empty when
  // recomputed).
  const bool entered = comm_ && comm_->enter_forward;
  return saved_.total([entered](const Saved& s) {
    return (entered ? bytes_of(s.entered) : 0) + bytes_of(s.pre_activation, s.hidden);
  });
}

template <class T>
std::size_t Mlp<T>::workspace_bytes() const {
  const bool entered = comm_ && comm_->enter_forward;
  return saved_.total([entered](const Saved& s) { return entered ? 0 : bytes_of(s.entered); }) +
         bytes_of(partial_, exited_, y_, hidden_grad_, pre_activation_grad_, input_grad_);
}

template class Mlp<float>;
template class Mlp<double>;

}  // namespace dtk::gpt
