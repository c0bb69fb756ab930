// The GPT: a decoder-only transformer, GPT-2's or a Llama's (GptConfig::arch), with its
// forward and backward passes.
//
//   tokens (B · S)       row b · S + s: the token at position s of sequence b
//   → Embedding          x = wte[token] + wpe[position]                          (B · S, h)
//   → L × Block          x = x + Attention(LN1(x));  x = x + MLP(LN2(x))         (B · S, h)
//   → LayerNorm ln_f     → f → LM head  logits = x · W_head                      (B · S, V)
//   → loss               mean cross-entropy of each position's next token
//
// A Llama (Touvron et al., 2023) is the same skeleton with four layers changed: no wpe (its
// attention turns q and k by their positions: rotary.hpp), RMSNorm for every LayerNorm
// (layer_norm.hpp), SwiGLU for GELU (mlp.hpp), kv key/value heads shared by a/kv query heads
// each (attention.hpp), and no biases anywhere.
//
// Each weight (named as in the PyTorch model), what this rank holds of it (GptLayout), and the
// Part whose functions make the split work. A data-parallel or context-parallel rank holds what
// its tensor-parallel rank does (Part 11 splits the sequence, not the weights). Gradients are
// summed (trainer.cpp's GradientSum) over the dp · cp ranks of the same tp_idx, a replicated
// weight's over every rank under sequence parallelism (each saw its own positions), an
// expert's over the replicas holding it.
//
//   weight                      whole    this rank holds                       Part
//   wte.weight                  (V, h)   rows [tp_idx · V/tp, + V/tp)          10.2
//   wpe.weight                  (S, h)   all (GPT-2's only)
//   blocks.l.ln1, ln2 (w, b)    (1, h)   all (a Llama's: w only)               10.4 (sp)
//   blocks.l.attn.qkv (w, b)    (h, 3h)  the Q, K and V columns of its heads   10.1
//                                        (a Llama's: (h, (a + 2kv) d), w only)
//   blocks.l.attn.proj.weight   (h, h)   the rows of its heads                 10.1
//   blocks.l.attn.proj.bias     (1, h)   all (GPT-2's only)
//   blocks.l.mlp.fc1 (w, b)     (h, f)   columns [tp_idx · f/tp, + f/tp)       provided
//                                        (a Llama's: [W_gate | W_up] (h, 2f), those columns of
//                                        each, w only)
//   blocks.l.mlp.fc2.weight     (f, h)   the same rows                         provided
//   blocks.l.mlp.fc2.bias       (1, h)   all (GPT-2's only)
//   blocks.l.moe.router.weight  (h, E)   all
//   blocks.l.moe.experts.e.*    an MLP   experts [expert_begin, expert_end)    12
//   ln_f (w, b)                 (1, h)   all (a Llama's: w only)
//   lm_head.weight              (h, V)   columns [tp_idx · V/tp, + V/tp)       10.3
//
// 10.1 attention_heads, qkv_columns; 10.2 vocab_parallel_embedding and its _grad; 10.3
// vocab_parallel_cross_entropy; 10.4 sp_all_gather, sp_reduce_scatter; 12 local_experts, and
// moe_dispatch and moe_combine, which take the rows to the experts and back.
//
// To add a layer: (1) its header and source in gpt/, one layer per file, its weights Parameters
// made with whole, column_slice or row_slice (parameter.hpp) with the Sharing that says who
// else holds them; (2) its forward and backward on (rows, width) matrices, what it keeps for
// the backward in a Saved struct per micro-batch slot (slots.hpp), counted in its
// activation_bytes() and given back by release(slot) (full recomputation, config.hpp's
// Recompute), the matrices of it a bf16 run holds as bf16 listed by kept(slot) (bf16_store.hpp),
// and its other buffers in workspace_bytes(),
// any communication through GptCommunication, never MPI; (3) its weights in parameters()'s
// fixed order and in the table above; (4) the same layer in the PyTorch oracle's model
// (tests/kit/gpt/check_oracle.py, oracle_case.cpp), its products in training_flops and its
// weights in parameter_count; (5) kit_gpt_train_* still training the one-rank model in every
// layout.
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

#include <algorithm>
#include <cstdint>
#include <optional>
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
  // The model as `layout` says this rank holds it, starting from the weights of `seed` (a
  // weight is the same whichever pieces of the model a rank holds).
  // Throws std::invalid_argument when config_problem or layout_problem say why not.
  Gpt(const GptConfig& config, const GptLayout& layout, std::uint32_t seed,
      GptCommunication<T> comm = one_rank_communication<T>());
  Gpt(const Gpt&) = delete;  // its layers refer to its communication
  Gpt& operator=(const Gpt&) = delete;

  // The forward pass; with targets, the loss. Keeps what backward needs in slot `slot`
  // (slots.hpp: one per micro-batch in flight), `batch` included: it must stay unchanged until
  // the slot's backward.
  GptLoss forward(const GptBatch& batch, int slot = 0);
  // Adds d loss / d parameter to every parameter's grad (after slot's forward, with targets),
  // where loss = Σ cross-entropy / batch.loss_tokens + the load-balancing losses.
  void backward(int slot = 0);
  void zero_grad();

  // A pipeline stage's pieces (GptLayout::piece_begin, piece_end). Without the embedding the
  // forward starts from `stream`, the residual stream the stage before returned for `batch`
  // (N, h), read during the forward only; without the head it ends at the
  // residual stream after its last piece, stream_output(), and its loss has no cross-entropy
  // (the blocks' load-balancing losses only). Only the stage holding the head has a loss.
  GptLoss forward(const GptBatch& batch, const Matrix<T>& stream, int slot);
  const Matrix<T>& stream_output() const;  // of the last forward, without the head
  // Without the head, the backward starts from stream_grad, d loss / d stream_output() (N, h);
  // without the embedding it ends at d loss / d the forward's `stream`, stream_input_grad().
  void backward(const Matrix<T>& stream_grad, int slot);
  const Matrix<T>& stream_input_grad() const;  // of the last backward, without the embedding

  // Logits of the last forward: this rank's vocabulary columns (N, V/tp).
  const Matrix<T>& logits() const { return logits_; }
  const GptCommunication<T>& communication() const { return comm_; }
  const GptConfig& config() const { return config_; }
  const GptLayout& layout() const { return layout_; }
  const std::vector<Block<T>>& blocks() const { return blocks_; }  // this rank's
  // Rows of this rank's residual stream for `batch`: B times its positions (S/tp of them under
  // sequence parallelism). A pipeline stage receives and sends (stream_rows, h).
  std::size_t stream_rows(const GptBatch& batch) const;
  // A mixture of experts: the (token, choice) rows each expert of this rank's blocks got in
  // slot's last forward, block after block (E values each). Empty for the dense model.
  std::vector<double> expert_rows(int slot) const;
  // The bytes the first of this rank's blocks keeps for the backward (0 without blocks; its
  // input alone with full recomputation).
  std::size_t first_block_activation_bytes() const;

  // Every parameter this rank holds, named as in the PyTorch model's state dict, in a fixed
  // order: wte, wpe, each block's (ln1, attn.qkv, attn.proj, ln2, mlp or moe), ln_f, lm_head.
  std::vector<Parameter<T>*> parameters();
  // The same, piece by piece (GptLayout's pieces: the embedding's, each block's, the head's).
  const std::vector<std::vector<Parameter<T>*>>& pieces() { return pieces_; }
  // Bytes kept between the forward and the backward pass, every slot's (at their peak, right
  // after the forwards), and with recomputation what the backward makes again, one block's at a
  // time (the most it took in a backward so far: none before the first): with full
  // recomputation each block's input and one block's activations, as Part 13's simulator counts.
  std::size_t activation_bytes() const;
  // Bytes of the layers' other buffers: outputs passed on, gradients of inputs, scratch.
  std::size_t workspace_bytes() const;

 private:
  GptLoss run_forward(const GptBatch& batch, const Matrix<T>* stream, int slot);
  void run_backward(const Matrix<T>* stream_grad, int slot);
  std::size_t block_piece(std::size_t block) const;  // this rank's block's index in pieces_
  // GptCommunication's piece_starts, piece_ends and gradients_ready for pieces_[piece], where
  // given.
  void piece_starts(std::size_t piece, bool backward);
  void piece_ends(std::size_t piece, bool backward);
  void gradients_ready(std::size_t piece);

  GptConfig config_;
  GptLayout layout_;
  GptCommunication<T> comm_;  // before the layers, which refer to it
  std::optional<Embedding<T>> embedding_;
  std::vector<Block<T>> blocks_;
  std::optional<LayerNorm<T>> final_norm_;
  std::optional<Linear<T>> lm_head_;
  std::vector<std::vector<Parameter<T>*>> pieces_;  // each piece's parameters, in order

  struct Saved {
    const GptBatch* batch = nullptr;
    const Matrix<T>* head_input = nullptr;  // f(ln_f(x)): ln_f's output or head_entered
    Matrix<T> head_entered;                 // f(ln_f(x)) when f communicates
    VocabParallelLoss<T> loss;              // its logits_grad, of the mean over the rows
    std::vector<Matrix<T>> block_inputs;    // Recompute::Full: each block's input (rows, h)
  };
  // A bf16 run (bf16_store.hpp): what the head keeps (ln_f's, f(ln_f(x)) when f made it, the
  // loss's logits_grad), held as bf16 between the passes.
  std::vector<Matrix<T>*> head_kept(Saved& s, int slot);
  void pack_head(Saved& s, int slot);
  void unpack_head(Saved& s, int slot);
  Slots<Saved> saved_;
  PackedSlots head_packed_;  // a bf16 run's: head_kept of each slot
  Matrix<T> logits_, logits_grad_, head_input_grad_;
  const Matrix<T>* stream_output_ = nullptr;      // without the head
  const Matrix<T>* stream_input_grad_ = nullptr;  // without the embedding
  std::size_t recomputed_peak_ = 0;  // Recompute::Full: a block's activations, made again
};

// Model FLOPs of one training step on `tokens` tokens (of sequences of seq_len), by Part 4's
// method: matrix products only, 2 FLOPs per multiply-add, the full T × T scores (no causal
// halving), the backward twice the forward. With experts, each token's k experts and the router.
double training_flops(const GptConfig& config, double tokens);

// The FLOPs recomputation adds to one training step on `tokens` tokens (Part 4's method):
// selective, the MLP's first product again (each of a token's k experts' with experts); full,
// every block's forward again. Not counted by training_flops: MFU is of the model's FLOPs.
double recompute_flops(const GptConfig& config, double tokens, Recompute recompute);

// The forward FLOPs per token of each of the model's L + 2 pieces (GptLayout): the embedding (a
// lookup: none), each block, the head (the LM head; ln_f and the loss are not products). Their
// sum is a third of training_flops per token: what a pipeline's stages are balanced by.
std::vector<double> piece_flops(const GptConfig& config);

// The number of parameters of the whole model (every rank's together).
std::int64_t parameter_count(const GptConfig& config);

// The most bytes a model's activations took at the moments noted, all of them and its first
// block's: noted after each forward and each backward (recomputation makes some again there).
struct ActivationPeak {
  std::size_t all = 0, first_block = 0;
  template <class T>
  void note(const Gpt<T>& model) {
    all = std::max(all, model.activation_bytes());
    first_block = std::max(first_block, model.first_block_activation_bytes());
  }
};

}  // namespace dtk::gpt
