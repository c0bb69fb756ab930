// The GPT: GPT-2's decoder-only transformer, with its forward and backward passes.
//
//   tokens (B · S)       row b · S + s: the token at position s of sequence b
//   → Embedding          x = wte[token] + wpe[position]                          (B · S, h)
//   → L × Block          x = x + Attention(LN1(x));  x = x + MLP(LN2(x))         (B · S, h)
//   → LayerNorm ln_f     → f → LM head  logits = x · W_head                      (B · S, V)
//   → loss               mean cross-entropy of each position's next token
//
// W_head (h, V) is its own matrix (untied from wte). Every communication goes through the
// GptCommunication the model is given: with one_rank_communication() (the default) it runs on
// one rank; Parts 10, 11 and 12 train the same model split over ranks by giving it theirs.
//
//   GptBatch batch = ...;             // tokens, next tokens, positions
//   GptLoss loss = model.forward(batch);
//   model.zero_grad();  model.backward();
//   for (Parameter<float>* p : model.parameters()) ... p->value, p->grad ...
#pragma once

#include <cstdint>
#include <vector>

#include "dtk/gpt/batch.hpp"
#include "dtk/gpt/block.hpp"
#include "dtk/gpt/communication.hpp"
#include "dtk/gpt/config.hpp"
#include "dtk/gpt/embedding.hpp"
#include "dtk/gpt/layer_norm.hpp"
#include "dtk/gpt/linear.hpp"

namespace dtk::gpt {

struct GptLoss {
  double cross_entropy_sum = 0;  // over the rows this rank's LM head scored
  std::size_t scored = 0;        // those rows
  double aux_loss = 0;           // the load-balancing losses of all blocks (the whole batch's)
};

template <class T>
class Gpt {
 public:
  // The model as `layout` says this rank holds it, starting from the weights of `seed`.
  // Throws std::invalid_argument when config_problem or layout_problem say why not.
  Gpt(const GptConfig& config, const GptLayout& layout, std::uint32_t seed,
      GptCommunication<T> comm = one_rank_communication<T>());
  Gpt(const Gpt&) = delete;  // its layers refer to its communication
  Gpt& operator=(const Gpt&) = delete;

  // The forward pass; with targets, the loss. Keeps what backward needs, `batch` included: it
  // must stay unchanged until backward().
  GptLoss forward(const GptBatch& batch);
  // Adds d loss / d parameter to every parameter's grad (after a forward with targets), where
  // loss = Σ cross-entropy / batch.loss_tokens + the load-balancing losses.
  void backward();
  void zero_grad();

  // Logits of the last forward: this rank's vocabulary columns (N, V/tp).
  const Matrix<T>& logits() const { return lm_head_.output(); }
  const GptCommunication<T>& communication() const { return comm_; }
  const GptConfig& config() const { return config_; }
  const GptLayout& layout() const { return layout_; }
  const std::vector<Block<T>>& blocks() const { return blocks_; }

  // Every parameter this rank holds, named as in the PyTorch model's state dict, in a fixed
  // order: wte, wpe, each block's (ln1, attn.qkv, attn.proj, ln2, mlp or moe), ln_f, lm_head.
  std::vector<Parameter<T>*> parameters();
  // Bytes kept between the forward and the backward pass (at their peak, right after forward).
  std::size_t activation_bytes() const;
  // Bytes of the layers' other buffers: outputs passed on, gradients of inputs, scratch.
  std::size_t workspace_bytes() const;

 private:
  GptConfig config_;
  GptLayout layout_;
  GptCommunication<T> comm_;  // before the layers, which refer to it
  Embedding<T> embedding_;
  std::vector<Block<T>> blocks_;
  LayerNorm<T> final_norm_;
  Linear<T> lm_head_;

  const GptBatch* batch_ = nullptr;
  Matrix<T> head_entered_;  // f(ln_f(x)) when f communicates
  VocabParallelLoss<T> loss_;
  Matrix<T> logits_grad_;
};

// Model FLOPs of one training step on `tokens` tokens (of sequences of seq_len), by Part 4's
// method: matrix products only, 2 FLOPs per multiply-add, the full T × T scores (no causal
// halving), the backward twice the forward. With experts, each token's k experts and the router.
double training_flops(const GptConfig& config, double tokens);

// The number of parameters of the whole model (every rank's together).
std::int64_t parameter_count(const GptConfig& config);

}  // namespace dtk::gpt
