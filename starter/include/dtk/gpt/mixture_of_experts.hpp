// A mixture of experts in place of a block's MLP (Switch Transformer, Mixtral), which Part 12
// spreads over ranks:
//
//   probs = softmax(x · W_router)                   W_router (h, E), no bias
//   ids   = the k most probable experts of each row, most probable first (ties: the lower id)
//   gates = their probabilities renormalised over the k:  gates[i, c] = probs[i, ids[i, c]] / Σ_c'
//   y[i]  = Σ_c gates[i, c] · expert_{ids[i, c]}(x[i])      each expert a GPT-2 MLP h → 4h → h
//
// Each (token, choice) pair is a row of its own: GptCommunication's moe_dispatch groups the rows
// by expert (on one rank it only reorders them; Part 12 sends them to the ranks holding their
// experts), each of this rank's experts processes its rows, and moe_combine brings the outputs
// back. The gates weight them here, on the token's rank: combine is called with gates of 1 and
// a row per (token, choice), (N · k, 1), which returns the expert outputs unsummed, in
// (token · k + choice) order; their gradients need them one by one. The backward reuses the two
// the other way round: dispatch sends the outputs' gradients to the experts (again a row per
// pair, ids (N · k, 1)), combine with gates of 1 (N, k) sums the inputs' gradients of a token's
// k rows.
//
// Load balance (Switch Transformer's auxiliary loss), added to the model's loss per block:
//   aux = α · E · Σ_e f_e · P_e,  f_e = share of the (token, choice) rows routed to e,
//                                 P_e = mean router probability of e,
// both over the whole global batch (sum_over_batch), so that every layout trains the same
// model; f is a count (no gradient), P carries the gradient to the router.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dtk/gpt/communication.hpp"
#include "dtk/gpt/config.hpp"
#include "dtk/gpt/mlp.hpp"

namespace dtk::gpt {

template <class T>
class MixtureOfExperts {
 public:
  // Parameters prefix.router.weight and prefix.experts.<e>.fc1.weight, ... for the experts
  // [expert_begin, expert_end) of the layout. `comm` must outlive the layer.
  MixtureOfExperts(const std::string& prefix, const GptConfig& config, const GptLayout& layout,
                   const InitialWeights& init, const GptCommunication<T>& comm);

  // x (N, h) → y (N, h). batch_tokens: the tokens of the global batch (the mean of P_e and the
  // share f_e are over them). Without `training`, no load-balancing loss (aux_loss() 0).
  const Matrix<T>& forward(const Matrix<T>& x, double batch_tokens, bool training);
  // dy (N, h) → dx (N, h), including the load-balancing loss's gradient.
  const Matrix<T>& backward(const Matrix<T>& dy);

  // The load-balancing loss of the last forward (the same on every rank).
  double aux_loss() const { return aux_loss_; }
  // How many of the batch's (token, choice) rows each expert got in the last forward.
  const std::vector<double>& expert_rows() const { return expert_rows_; }

  std::vector<Parameter<T>*> parameters();
  std::size_t activation_bytes() const;
  std::size_t workspace_bytes() const;

  Parameter<T> router;  // (h, E), the same on every rank

 private:
  void route(const Matrix<T>& x, bool training);
  void run_experts(const Matrix<T>& rows, const std::vector<int>& rows_per_expert, bool backward,
                   Matrix<T>& out);

  const GptCommunication<T>& comm_;
  int num_experts_, top_k_;
  double aux_coef_;
  std::vector<Mlp<T>> experts_;  // this rank's, [expert_begin, expert_end)

  const Matrix<T>* input_ = nullptr;
  double batch_tokens_ = 1;
  Matrix<T> probs_;                          // (N, E)
  xt::xtensor<std::int32_t, 2> expert_ids_;  // (N, k)
  Matrix<T> gates_;                          // (N, k)
  std::vector<double> expert_rows_;          // (E) over the batch: f_e · N_batch · k
  double aux_loss_ = 0;
  DispatchPlan plan_;
  std::vector<Matrix<T>> expert_inputs_;  // each of this rank's experts' rows, kept for backward
  Matrix<T> expert_out_;                  // their outputs, grouped by expert
  Matrix<T> choice_out_;                  // (N · k, h): expert output of each (token, choice)
  Matrix<T> y_;
  Matrix<T> choice_grad_, expert_out_grad_, expert_in_grad_, router_logits_grad_, input_grad_;
  Matrix<T> part_;  // one expert's output gradients
};

}  // namespace dtk::gpt
