#include "dtk/gpt/attention.hpp"

#include <cmath>

#include <xtensor/xview.hpp>

#include "dtk/gpt/bf16_store.hpp"
#include "dtk/gpt/bytes.hpp"
#include "dtk/gpt/rotary.hpp"

namespace dtk::gpt {

namespace {

// m(i, j) += bias[j] for every row i.
template <class T>
void add_bias(Matrix<T>& m, const T* bias) {
  const std::size_t cols = m.shape(1);
  for (std::size_t i = 0; i < m.shape(0); ++i) {
    for (std::size_t j = 0; j < cols; ++j) m(i, j) += bias[j];
  }
}

// bias_grad[j] += Σ_i m(i, j)
template <class T>
void add_bias_grad(const Matrix<T>& m, T* bias_grad) {
  const std::size_t cols = m.shape(1);
  for (std::size_t i = 0; i < m.shape(0); ++i) {
    for (std::size_t j = 0; j < cols; ++j) bias_grad[j] += m(i, j);
  }
}

}  // namespace

template <class T>
CausalSelfAttention<T>::CausalSelfAttention(const std::string& prefix, const GptConfig& config,
                                            const GptLayout& layout, const InitialWeights& init,
                                            const GptCommunication<T>& comm)
    : qkv_weight(column_slice<T>(
          prefix + ".qkv.weight",
          init.normal(prefix + ".qkv.weight", config.hidden, config.qkv_width(), 0.02),
          layout.qkv_columns)),
      qkv_bias(config.llama()
                   ? Parameter<T>{}
                   : column_slice<T>(prefix + ".qkv.bias", constant(1, config.qkv_width(), 0.0),
                                     layout.qkv_columns)),
      // Its rows are the columns of out its heads fill: the same indices as its Q columns.
      proj_weight(row_slice<T>(
          prefix + ".proj.weight",
          init.normal(prefix + ".proj.weight", config.hidden, config.hidden,
                      0.02 / std::sqrt(2.0 * config.layers)),
          std::vector<int>(
              layout.qkv_columns.begin(),
              layout.qkv_columns.begin() + layout.local_heads(config) * config.head_size()))),
      proj_bias(config.llama() ? Parameter<T>{}
                               : whole<T>(prefix + ".proj.bias", constant(1, config.hidden, 0.0))),
      comm_(comm),
      keep_bf16_(layout.keep_bf16),
      llama_(config.llama()),
      rope_theta_(config.rope_theta),
      heads_(layout.local_heads(config)),
      kv_heads_(layout.local_kv_heads(config)),
      widths_{std::size_t(heads_ * config.head_size()), std::size_t(kv_heads_ * config.head_size()),
              std::size_t(kv_heads_ * config.head_size())} {
  if (layout.key_value_heads_replicated(config)) {
    // tp/kv ranks hold these K and V columns: a parameter of their own, whose gradient (of this
    // rank's query heads only) the trainer sums over them.
    kv_weight = qkv_weight;
    kv_weight.name += "[k,v]";
    kv_weight.sharing = Sharing::KeyValueReplicas;
    const std::size_t q = widths_[0];
    kv_weight.value = xt::view(qkv_weight.value, xt::all(), xt::range(q, xt::placeholders::_));
    kv_weight.grad = xt::zeros<T>(kv_weight.value.shape());
    qkv_weight.value = xt::view(qkv_weight.value, xt::all(), xt::range(0, q));
    qkv_weight.grad = xt::zeros<T>(qkv_weight.value.shape());
  }
}

template <class T>
std::pair<Parameter<T>*, std::size_t> CausalSelfAttention<T>::columns_of(std::size_t part) {
  if (part > 0 && kv_weight.value.size() > 0) return {&kv_weight, part == 1 ? 0 : widths_[1]};
  return {&qkv_weight, part == 0 ? 0 : part == 1 ? widths_[0] : widths_[0] + widths_[1]};
}

template <class T>
std::vector<Parameter<T>*> CausalSelfAttention<T>::parameters() {
  if (kv_weight.value.size() > 0) return {&qkv_weight, &kv_weight, &proj_weight};
  if (llama_) return {&qkv_weight, &proj_weight};
  return {&qkv_weight, &qkv_bias, &proj_weight, &proj_bias};
}

template <class T>
const Matrix<T>& CausalSelfAttention<T>::forward(const Matrix<T>& x,
                                                 const std::vector<int>& positions, int batch,
                                                 int slot) {
  Saved& s = saved_.fill(slot);
  s.positions = positions;
  s.batch = batch;
  s.input = &communicate(comm_.enter_forward, x, s.entered);  // f
  const Matrix<T>& in = *s.input;
  const std::size_t rows = in.shape(0), h = in.shape(1);
  // part 0, 1, 2 = q, k, v = f(x) · (block p of W_qkv's columns) + (block p of b_qkv)
  Matrix<T>* parts[3] = {&s.q, &s.k, &s.v};
  const int part_heads[2] = {heads_, kv_heads_};
  for (std::size_t p = 0; p < 3; ++p) {
    const auto [weight, first] = columns_of(p);
    const std::size_t all = weight->value.shape(1);
    ensure_shape(*parts[p], rows, widths_[p]);
    gemm<T>(false, false, rows, widths_[p], h, T(1), in.data(), h, weight->value.data() + first,
            all, T(0), parts[p]->data(), widths_[p]);
    if (llama_) {
      if (p < 2) rotate(*parts[p], part_heads[p], positions, rope_theta_);
    } else {
      add_bias(*parts[p], qkv_bias.value.data() + first);
    }
    round_in_place(*parts[p], keep_bf16_);
  }
  s.attention = comm_.attention_forward(s.q, s.k, s.v, s.positions, s.batch, heads_);
  round_in_place(s.attention.out, keep_bf16_);
  matmul(s.attention.out, proj_weight.value, partial_);
  y_ = communicate(comm_.exit_forward, partial_, exited_);  // g
  if (!llama_) add_row(y_, proj_bias.value);
  return y_;
}

template <class T>
const Matrix<T>& CausalSelfAttention<T>::backward(const Matrix<T>& dy, int slot) {
  Saved& s = saved_.read(slot);
  if (!llama_) add_column_sums(dy, proj_bias.grad);
  const Matrix<T>& partial_grad = communicate(comm_.exit_backward, dy, exited_);
  matmul_add_at_b(s.attention.out, partial_grad, proj_weight.grad);
  matmul_a_bt(partial_grad, proj_weight.value, out_grad_);
  attention_grads_ = comm_.attention_backward(s.q, s.k, s.v, s.attention.out, s.attention.lse,
                                              out_grad_, s.positions, s.batch, heads_);
  const Matrix<T>& in = *s.input;
  const std::size_t rows = in.shape(0), h = in.shape(1);
  ensure_shape(input_grad_, rows, h);
  Matrix<T>* part_grads[3] = {&attention_grads_.dq, &attention_grads_.dk, &attention_grads_.dv};
  const int part_heads[2] = {heads_, kv_heads_};
  for (std::size_t p = 0; p < 3; ++p) {
    const auto [weight, first] = columns_of(p);
    const std::size_t all = weight->value.shape(1);
    Matrix<T>& grad = *part_grads[p];
    // The gradient of q and k before their turn: turned back (a rotation's transpose).
    if (llama_ && p < 2) rotate(grad, part_heads[p], s.positions, rope_theta_, /*inverse=*/true);
    // block p of dW_qkv += f(x)ᵀ · grad, of db_qkv += Σ_rows grad
    gemm<T>(true, false, h, widths_[p], rows, T(1), in.data(), h, grad.data(), widths_[p], T(1),
            weight->grad.data() + first, all);
    if (!llama_) add_bias_grad(grad, qkv_bias.grad.data() + first);
    // d f(x) = Σ_p grad_p · (block p of W_qkv)ᵀ
    gemm<T>(false, true, rows, h, widths_[p], T(1), grad.data(), widths_[p],
            weight->value.data() + first, all, p == 0 ? T(0) : T(1), input_grad_.data(), h);
  }
  // The backward has read f(x): its buffer can take f's backward now.
  return communicate(comm_.enter_backward, input_grad_, s.entered);
}

template <class T>
std::vector<Matrix<T>*> CausalSelfAttention<T>::kept(int slot) {
  Saved& s = saved_.read(slot);
  std::vector<Matrix<T>*> kept = {&s.q, &s.k, &s.v, &s.attention.out};
  if (comm_.enter_forward) kept.push_back(&s.entered);  // else f(x) is x: its owner's
  return kept;
}

template <class T>
std::size_t CausalSelfAttention<T>::activation_bytes() const {
  // f(x) when f made it (else its owner counts it, and entered holds only f's backward: a
  // workspace), q, k, v for the attention's backward, and out with lse (FlashAttention's: the
  // probabilities are computed again, not kept).
  const bool entered = bool(comm_.enter_forward);
  return saved_.total([entered](const Saved& s) {
    return (entered ? bytes_of(s.entered) : 0) +
           bytes_of(s.q, s.k, s.v, s.attention.out, s.attention.lse);
  });
}

template <class T>
std::size_t CausalSelfAttention<T>::workspace_bytes() const {
  const bool entered = bool(comm_.enter_forward);
  return saved_.total([entered](const Saved& s) { return entered ? 0 : bytes_of(s.entered); }) +
         bytes_of(partial_, exited_, y_, out_grad_, input_grad_, attention_grads_.dq,
                  attention_grads_.dk, attention_grads_.dv);
}

template class CausalSelfAttention<float>;
template class CausalSelfAttention<double>;

}  // namespace dtk::gpt
