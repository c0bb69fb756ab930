// A mixture of experts in place of a block's MLP (Switch Transformer, Mixtral), which Part 12
// spreads over ranks:
//
//   probs = softmax(x · W_router)                   W_router (h, E), no bias
//   ids   = the k most probable experts of each row, most probable first (ties: the lower id)
//   gates = their probabilities renormalised over the k:  gates[i, c] = probs[i, ids[i, c]] / Σ_c'
//   y[i]  = Σ_c gates[i, c] · expert_{ids[i, c]}(x[i])      each expert the block's MLP, h → f → h
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
#include "dtk/gpt/slots.hpp"

namespace dtk::gpt {

template <class T>
class MixtureOfExperts {
 public:
  // Parameters prefix.router.weight and prefix.experts.<e>.fc1.weight, ... for the experts
  // [expert_begin, expert_end) of the layout. `comm` must outlive the layer.
  MixtureOfExperts(const std::string& prefix, const GptConfig& config, const GptLayout& layout,
                   const InitialWeights& init, const GptCommunication<T>& comm);

  // x (N, h) → y (N, h). routed_tokens: the tokens routed together (the global batch's, or a
  // micro-batch's on every data-parallel rank: the mean of P_e and the share f_e are over them);
  // aux_weight: the share of the step's load-balancing loss theirs is (1/m under m
  // micro-batches). Without `training`, no load-balancing loss (aux_loss() 0).
  // Keeps what backward needs in slot `slot` (slots.hpp), and a reference to x, which must stay
  // unchanged until the slot's backward.
  const Matrix<T>& forward(const Matrix<T>& x, double routed_tokens, double aux_weight,
                           bool training, int slot);
  // dy (N, h) → dx (N, h), including the load-balancing loss's gradient.
  const Matrix<T>& backward(const Matrix<T>& dy, int slot);

  // The load-balancing loss of slot's last forward (the same on every rank).
  double aux_loss(int slot) const { return saved_.read(slot).aux_loss; }
  // How many of the batch's (token, choice) rows each expert got in slot's last forward.
  const std::vector<double>& expert_rows(int slot) const { return saved_.read(slot).expert_rows; }

  std::vector<Parameter<T>*> parameters();
  // Slot's buffers given back, its experts' too (full recomputation: the block's forward runs
  // again); its expert_rows and aux_loss stay.
  void release(int slot);
  // The matrices slot keeps for the backward, which a bf16 run holds as bf16 (bf16_store.hpp).
  std::vector<Matrix<T>*> kept(int slot);
  std::size_t activation_bytes() const;
  std::size_t workspace_bytes() const;
  // Selective recomputation: the most an expert's recomputed activation took (one at a time).
  std::size_t recomputed_bytes() const;

  Parameter<T> router;  // (h, E), the same on every rank

 private:
  struct Saved {
    const Matrix<T>* input = nullptr;
    double batch_tokens = 1;  // routed together
    double aux_weight = 1;
    Matrix<T> probs;                          // (N, E)
    xt::xtensor<std::int32_t, 2> expert_ids;  // (N, k)
    Matrix<T> gates;                          // (N, k)
    std::vector<double> expert_rows;          // (E) over the batch: f_e · N_batch · k
    double aux_loss = 0;
    DispatchPlan plan;
    std::vector<Matrix<T>> expert_inputs;  // each of this rank's experts' rows
    Matrix<T> choice_out;                  // (N · k, h): expert output of each (token, choice)
  };
  void route(const Matrix<T>& x, bool training, Saved& s);
  void run_experts(const Matrix<T>& rows, const std::vector<int>& rows_per_expert, bool backward,
                   int slot, Saved& s, Matrix<T>& out);

  const GptCommunication<T>& comm_;
  int num_experts_, top_k_;
  double aux_coef_;
  Bf16Rounding keep_bf16_;       // a bf16 run's: choice_out rounded as it is made
  std::vector<Mlp<T>> experts_;  // this rank's, [expert_begin, expert_end)

  Slots<Saved> saved_;
  Matrix<T> expert_out_;  // the experts' outputs, grouped by expert
  Matrix<T> y_;
  Matrix<T> choice_grad_, expert_out_grad_, expert_in_grad_, router_logits_grad_, input_grad_;
  Matrix<T> part_;  // one expert's output gradients
};

}  // namespace dtk::gpt
