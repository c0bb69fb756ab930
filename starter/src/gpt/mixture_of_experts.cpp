#include "dtk/gpt/mixture_of_experts.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "dtk/gpt/bf16_store.hpp"
#include "dtk/gpt/bytes.hpp"

namespace dtk::gpt {

template <class T>
MixtureOfExperts<T>::MixtureOfExperts(const std::string& prefix, const GptConfig& config,
                                      const GptLayout& layout, const InitialWeights& init,
                                      const GptCommunication<T>& comm)
    : router(whole<T>(prefix + ".router.weight",
                      init.normal(prefix + ".router.weight", config.hidden, config.experts, 0.02))),
      comm_(comm),
      num_experts_(config.experts),
      top_k_(config.top_k),
      aux_coef_(config.aux_loss_coef),
      keep_bf16_(layout.keep_bf16) {
  experts_.reserve(layout.expert_end - layout.expert_begin);
  for (int e = layout.expert_begin; e < layout.expert_end; ++e) {
    experts_.emplace_back(prefix + ".experts." + std::to_string(e), config, layout, init);
  }
}

template <class T>
void MixtureOfExperts<T>::route(const Matrix<T>& x, bool training, Saved& s) {
  const std::size_t rows = x.shape(0), experts = num_experts_, k = top_k_;
  matmul(x, router.value, s.probs);
  ensure_shape(s.gates, rows, k);
  s.expert_ids.resize({rows, k});
  // [f_e as row counts..., Σ_i probs(i, e)...]: this rank's, then the whole batch's.
  std::vector<double> statistics(2 * experts, 0.0);
  std::vector<int> order(experts);
  for (std::size_t i = 0; i < rows; ++i) {
    T* p = s.probs.data() + i * experts;
    const T max = *std::max_element(p, p + experts);
    T sum = 0;
    for (std::size_t e = 0; e < experts; ++e) sum += p[e] = std::exp(p[e] - max);
    for (std::size_t e = 0; e < experts; ++e) p[e] /= sum;
    // The k most probable, ties to the lower id.
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    T chosen = 0;
    for (std::size_t c = 0; c < k; ++c) chosen += p[order[c]];
    for (std::size_t c = 0; c < k; ++c) {
      s.expert_ids(i, c) = order[c];
      s.gates(i, c) = p[order[c]] / chosen;
      statistics[order[c]] += 1;
    }
    for (std::size_t e = 0; e < experts; ++e) statistics[experts + e] += p[e];
  }
  s.aux_loss = 0;
  if (!training) return;
  if (comm_.sum_over_batch) comm_.sum_over_batch(statistics);
  s.expert_rows.assign(statistics.begin(), statistics.begin() + experts);
  for (std::size_t e = 0; e < experts; ++e) {
    const double share = s.expert_rows[e] / (s.batch_tokens * k);       // f_e
    const double mean_prob = statistics[experts + e] / s.batch_tokens;  // P_e
    s.aux_loss += s.aux_weight * aux_coef_ * experts * share * mean_prob;
  }
}

// Each of this rank's experts on its block of `rows` (grouped by expert, rows_per_expert of
// each): its forward, or with `backward` its backward (rows are then output gradients).
template <class T>
void MixtureOfExperts<T>::run_experts(const Matrix<T>& rows,
                                      const std::vector<int>& rows_per_expert, bool backward,
                                      int slot, Saved& s, Matrix<T>& out) {
  const std::size_t width = rows.shape(1);
  ensure_shape(out, rows.shape(0), width);
  std::size_t first = 0;
  for (std::size_t e = 0; e < experts_.size(); ++e) {
    const std::size_t count = rows_per_expert[e];
    // An expert keeps its input for its backward: one matrix each.
    Matrix<T>& block = backward ? part_ : s.expert_inputs[e];
    ensure_shape(block, count, width);
    std::copy_n(rows.data() + first * width, count * width, block.data());
    const Matrix<T>& result =
        backward ? experts_[e].backward(block, slot) : experts_[e].forward(block, slot);
    std::copy_n(result.data(), count * width, out.data() + first * width);
    first += count;
  }
}

template <class T>
const Matrix<T>& MixtureOfExperts<T>::forward(const Matrix<T>& x, double routed_tokens,
                                              double aux_weight, bool training, int slot) {
  Saved& s = saved_.fill(slot);
  s.input = &x;
  s.batch_tokens = routed_tokens;
  s.aux_weight = aux_weight;
  s.expert_inputs.resize(experts_.size());
  route(x, training, s);
  auto [rows, plan] = comm_.moe_dispatch(x, s.expert_ids, num_experts_);
  s.plan = std::move(plan);
  run_experts(rows, s.plan.tokens_per_local_expert, false, slot, s, expert_out_);
  // The experts' outputs back, one row per (token, choice): gates of 1, (N · k, 1).
  const std::size_t n = x.shape(0), k = top_k_, width = x.shape(1);
  s.choice_out = comm_.moe_combine(expert_out_, s.plan, xt::ones<T>({n * k, std::size_t(1)}));
  round_in_place(s.choice_out, keep_bf16_);
  ensure_shape(y_, n, width);
  y_.fill(T(0));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < k; ++c) {
      const T gate = s.gates(i, c);
      const T* out = s.choice_out.data() + (i * k + c) * width;
      for (std::size_t j = 0; j < width; ++j) y_(i, j) += gate * out[j];
    }
  }
  return y_;
}

template <class T>
const Matrix<T>& MixtureOfExperts<T>::backward(const Matrix<T>& dy, int slot) {
  Saved& s = saved_.read(slot);
  const std::size_t n = dy.shape(0), k = top_k_, width = dy.shape(1), experts = num_experts_;
  // d out(i, c) = gates[i, c] · dy[i];  d gates[i, c] = dy[i] · out(i, c)
  ensure_shape(choice_grad_, n * k, width);
  Matrix<T> gates_grad({n, k});
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < k; ++c) {
      const T* out = s.choice_out.data() + (i * k + c) * width;
      T* grad = choice_grad_.data() + (i * k + c) * width;
      T dot = 0;
      for (std::size_t j = 0; j < width; ++j) {
        grad[j] = s.gates(i, c) * dy(i, j);
        dot += dy(i, j) * out[j];
      }
      gates_grad(i, c) = dot;
    }
  }
  // To the experts, one row per (token, choice), in the order dispatch gave the forward.
  xt::xtensor<std::int32_t, 2> choice_ids = s.expert_ids;
  choice_ids.reshape({n * k, std::size_t(1)});
  expert_out_grad_ = comm_.moe_dispatch(choice_grad_, choice_ids, num_experts_).first;
  run_experts(expert_out_grad_, s.plan.tokens_per_local_expert, true, slot, s, expert_in_grad_);
  // Back to the tokens, a token's k rows summed: gates of 1, (N, k).
  input_grad_ = comm_.moe_combine(expert_in_grad_, s.plan, xt::ones<T>({n, k}));

  // The router: d probs from the gates (renormalised over the chosen) and from the
  // load-balancing loss (α · E · f_e / N_batch on probs(i, e)), then the softmax's backward.
  ensure_shape(router_logits_grad_, n, experts);
  std::vector<T> probs_grad(experts);
  for (std::size_t i = 0; i < n; ++i) {
    const T* p = s.probs.data() + i * experts;
    for (std::size_t e = 0; e < experts; ++e) {
      const double share = s.expert_rows[e] / (s.batch_tokens * k);
      probs_grad[e] = T(s.aux_weight * aux_coef_ * experts * share / s.batch_tokens);
    }
    // gates_c = p_c / Σ: d p_c = (d gates_c − Σ_c' d gates_c' · gates_c') / Σ
    T chosen = 0, weighted = 0;
    for (std::size_t c = 0; c < k; ++c) {
      chosen += p[s.expert_ids(i, c)];
      weighted += gates_grad(i, c) * s.gates(i, c);
    }
    for (std::size_t c = 0; c < k; ++c) {
      probs_grad[s.expert_ids(i, c)] += (gates_grad(i, c) - weighted) / chosen;
    }
    T dot = 0;
    for (std::size_t e = 0; e < experts; ++e) dot += p[e] * probs_grad[e];
    for (std::size_t e = 0; e < experts; ++e) {
      router_logits_grad_(i, e) = p[e] * (probs_grad[e] - dot);
    }
  }
  matmul_add_at_b(*s.input, router_logits_grad_, router.grad);
  Matrix<T> router_input_grad;
  matmul_a_bt(router_logits_grad_, router.value, router_input_grad);
  input_grad_ += router_input_grad;
  return input_grad_;
}

template <class T>
std::vector<Parameter<T>*> MixtureOfExperts<T>::parameters() {
  std::vector<Parameter<T>*> all = {&router};
  for (Mlp<T>& expert : experts_) {
    for (Parameter<T>* p : expert.parameters()) all.push_back(p);
  }
  return all;
}

template <class T>
void MixtureOfExperts<T>::release(int slot) {
  if (std::size_t(slot) >= saved_.size()) return;
  Saved& s = saved_.read(slot);
  std::vector<double> expert_rows = std::move(s.expert_rows);
  const double aux_loss = s.aux_loss;
  saved_.release(slot);
  s.expert_rows = std::move(expert_rows);
  s.aux_loss = aux_loss;
  for (Mlp<T>& expert : experts_) expert.release(slot);
}

template <class T>
std::vector<Matrix<T>*> MixtureOfExperts<T>::kept(int slot) {
  Saved& s = saved_.read(slot);
  std::vector<Matrix<T>*> kept = {&s.choice_out};
  for (Matrix<T>& rows : s.expert_inputs) kept.push_back(&rows);
  for (Mlp<T>& expert : experts_) {
    for (Matrix<T>* m : expert.kept(slot)) kept.push_back(m);
  }
  return kept;
}

template <class T>
std::size_t MixtureOfExperts<T>::activation_bytes() const {
  std::size_t total = saved_.total([](const Saved& s) {
    std::size_t bytes = bytes_of(s.probs, s.expert_ids, s.gates, s.choice_out);
    for (const Matrix<T>& rows : s.expert_inputs) bytes += bytes_of(rows);
    return bytes;
  });
  for (const Mlp<T>& expert : experts_) total += expert.activation_bytes();
  return total;
}

template <class T>
std::size_t MixtureOfExperts<T>::workspace_bytes() const {
  std::size_t total = bytes_of(expert_out_, y_, choice_grad_, expert_out_grad_, expert_in_grad_,
                               router_logits_grad_, input_grad_, part_);
  for (const Mlp<T>& expert : experts_) total += expert.workspace_bytes();
  return total;
}

template <class T>
std::size_t MixtureOfExperts<T>::recomputed_bytes() const {
  std::size_t most = 0;
  for (const Mlp<T>& expert : experts_) most = std::max(most, expert.recomputed_bytes());
  return most;
}

template class MixtureOfExperts<float>;
template class MixtureOfExperts<double>;

}  // namespace dtk::gpt
