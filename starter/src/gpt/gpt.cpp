#include "dtk/gpt/gpt.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <xtensor/xnoalias.hpp>

#include "dtk/gpt/bytes.hpp"

namespace dtk::gpt {

namespace {

// Throws when the model cannot be built; returns the config to initialise members with.
const GptConfig& checked(const GptConfig& config, const GptLayout& layout) {
  std::string problem = config_problem(config);
  if (problem.empty()) problem = layout_problem(config, layout);
  if (!problem.empty()) throw std::invalid_argument("Gpt: " + problem);
  return config;
}

}  // namespace

template <class T>
Gpt<T>::Gpt(const GptConfig& config, const GptLayout& layout, std::uint32_t seed,
            GptCommunication<T> comm)
    : config_(checked(config, layout)), layout_(layout), comm_(std::move(comm)) {
  if (layout.keep_bf16 && !std::is_same_v<T, float>) {
    throw std::invalid_argument("Gpt: activations kept as bf16 (a bf16 run) need a float model");
  }
  const InitialWeights init(seed);
  if (layout.holds_embedding()) embedding_.emplace(config_, layout_, init, comm_);
  // No reallocation: the blocks' layers are referred to.
  blocks_.reserve(layout.block_end(config) - layout.block_begin());
  for (int l = layout.block_begin(); l < layout.block_end(config); ++l) {
    blocks_.emplace_back(l, config_, layout_, init, comm_);
  }
  if (layout.holds_head(config)) {
    final_norm_.emplace("ln_f", config_, layout.keep_bf16);
    lm_head_.emplace(column_slice<T>(
        "lm_head.weight", init.normal("lm_head.weight", config.hidden, config.vocab_size, 0.02),
        layout.vocab_begin(config), layout.vocab_begin(config) + layout.local_vocab(config)));
  }
  // The pieces' parameters, once: the layers never move (blocks_ does not reallocate).
  if (embedding_) pieces_.push_back(embedding_->parameters());
  for (Block<T>& block : blocks_) pieces_.push_back(block.parameters());
  if (lm_head_) {
    pieces_.push_back(final_norm_->parameters());
    pieces_.back().push_back(&lm_head_->weight);
  }
}

template <class T>
GptLoss Gpt<T>::forward(const GptBatch& batch, int slot) {
  if (!embedding_ || !lm_head_) {
    throw std::logic_error("Gpt::forward(batch): this rank holds pieces [" +
                           std::to_string(layout_.piece_begin) + ", " +
                           std::to_string(layout_.piece_end) +
                           ") of the model, not all of it: give the stream the stage before sent");
  }
  return run_forward(batch, nullptr, slot);
}

template <class T>
GptLoss Gpt<T>::forward(const GptBatch& batch, const Matrix<T>& stream, int slot) {
  return run_forward(batch, embedding_ ? nullptr : &stream, slot);
}

template <class T>
GptLoss Gpt<T>::run_forward(const GptBatch& batch, const Matrix<T>* stream, int slot) {
  const std::size_t per_sequence = batch.positions.size();
  if (batch.batch < 1 || per_sequence == 0 || batch.tokens.size() != batch.batch * per_sequence ||
      (batch.targets.size() != 0 && batch.targets.size() != batch.tokens.size())) {
    throw std::invalid_argument("Gpt::forward: expected " + std::to_string(batch.batch) + " x " +
                                std::to_string(per_sequence) +
                                " tokens (and as many targets), got " +
                                std::to_string(batch.tokens.size()) + " tokens and " +
                                std::to_string(batch.targets.size()) + " targets");
  }
  if (layout_.sequence_parallel && per_sequence % layout_.tp_size != 0) {
    throw std::invalid_argument("Gpt::forward: sequence parallelism over " +
                                std::to_string(layout_.tp_size) + " ranks needs S divisible by " +
                                std::to_string(layout_.tp_size) + ", got " +
                                std::to_string(per_sequence) + " positions");
  }
  Saved& s = saved_.fill(slot);
  s.batch = &batch;
  // The positions the residual stream holds: all of them, or under sequence parallelism this
  // rank's S/tp of each sequence.
  std::vector<int> stream_positions = batch.positions;
  if (layout_.sequence_parallel) {
    const std::size_t share = per_sequence / layout_.tp_size;
    stream_positions.assign(batch.positions.begin() + layout_.tp_idx * share,
                            batch.positions.begin() + (layout_.tp_idx + 1) * share);
  }
  const std::size_t rows = stream_rows(batch);
  if (stream && (stream->shape(0) != rows || stream->shape(1) != std::size_t(config_.hidden))) {
    throw std::invalid_argument(
        "Gpt::forward: the stream from the stage before is (" + std::to_string(stream->shape(0)) +
        ", " + std::to_string(stream->shape(1)) + "), expected (" + std::to_string(rows) + ", " +
        std::to_string(config_.hidden) + "): B · S rows of this rank's positions, h columns");
  }
  const Matrix<T>* x = stream;
  if (embedding_) {
    piece_starts(0, false);
    x = &embedding_->forward(batch.tokens, stream_positions, slot);
    piece_ends(0, false);
  }
  GptLoss loss;
  const bool keep_inputs_only = layout_.recompute == Recompute::Full;
  if (keep_inputs_only) s.block_inputs.resize(blocks_.size());
  const bool bf16 = bool(layout_.keep_bf16);
  for (std::size_t l = 0; l < blocks_.size(); ++l) {
    // A copy: x is the buffer the block before (or the stage before) writes its next output to.
    // (The residual stream, kept in float by a bf16 run too: bf16_store.hpp.)
    if (keep_inputs_only) s.block_inputs[l] = *x;
    piece_starts(block_piece(l), false);
    x = &blocks_[l].forward(*x, batch, slot);
    piece_ends(block_piece(l), false);
    loss.aux_loss += blocks_[l].aux_loss(slot);
    if (keep_inputs_only) {
      blocks_[l].release(slot);
    } else if (bf16) {
      blocks_[l].pack(slot, layout_.keep_bf16);
    }
  }
  if (!lm_head_) {
    stream_output_ = x;
    return loss;
  }
  piece_starts(pieces_.size() - 1, false);
  s.head_input =
      &communicate(comm_.enter_forward, final_norm_->forward(*x, slot), s.head_entered);  // f
  lm_head_->forward(*s.head_input, logits_);
  piece_ends(pieces_.size() - 1, false);
  if (batch.targets.size() != 0) {
    s.loss = comm_.cross_entropy(logits_, batch.targets, layout_.vocab_begin(config_));
    loss.cross_entropy_sum = xt::sum(s.loss.loss)();
    loss.scored = s.loss.loss.size();
  }
  if (bf16) pack_head(s, slot);
  return loss;
}

template <class T>
std::vector<Matrix<T>*> Gpt<T>::head_kept(Saved& s, int slot) {
  std::vector<Matrix<T>*> kept = final_norm_->kept(slot);
  if (comm_.enter_forward) kept.push_back(&s.head_entered);  // else ln_f's output
  kept.push_back(&s.loss.logits_grad);
  return kept;
}

template <class T>
void Gpt<T>::pack_head(Saved& s, int slot) {
  if constexpr (std::is_same_v<T, float>)
    head_packed_.pack(slot, head_kept(s, slot), layout_.keep_bf16);
}

template <class T>
void Gpt<T>::unpack_head(Saved& s, int slot) {
  if constexpr (std::is_same_v<T, float>) head_packed_.unpack(slot, head_kept(s, slot));
}

template <class T>
std::size_t Gpt<T>::block_piece(std::size_t block) const {
  return (embedding_ ? 1 : 0) + block;
}

template <class T>
void Gpt<T>::piece_starts(std::size_t piece, bool backward) {
  if (comm_.piece_starts) comm_.piece_starts(pieces_[piece], backward);
}

template <class T>
void Gpt<T>::piece_ends(std::size_t piece, bool backward) {
  if (comm_.piece_ends) comm_.piece_ends(pieces_[piece], backward);
}

template <class T>
void Gpt<T>::gradients_ready(std::size_t piece) {
  if (comm_.gradients_ready) comm_.gradients_ready(pieces_[piece]);
}

template <class T>
std::size_t Gpt<T>::stream_rows(const GptBatch& batch) const {
  return batch.batch * (batch.positions.size() / (layout_.sequence_parallel ? layout_.tp_size : 1));
}

template <class T>
std::vector<double> Gpt<T>::expert_rows(int slot) const {
  std::vector<double> rows;
  for (const Block<T>& block : blocks_) {
    if (const MixtureOfExperts<T>* moe = block.mixture()) {
      rows.insert(rows.end(), moe->expert_rows(slot).begin(), moe->expert_rows(slot).end());
    }
  }
  return rows;
}

template <class T>
std::size_t Gpt<T>::first_block_activation_bytes() const {
  if (blocks_.empty()) return 0;
  return blocks_.front().activation_bytes() + saved_.total([](const Saved& s) {
    return s.block_inputs.empty() ? 0 : bytes_of(s.block_inputs[0]);
  });
}

template <class T>
const Matrix<T>& Gpt<T>::stream_output() const {
  if (lm_head_ || !stream_output_) {
    throw std::logic_error("Gpt::stream_output: only a stage without the head has one");
  }
  return *stream_output_;
}

template <class T>
void Gpt<T>::backward(int slot) {
  if (!lm_head_) {
    throw std::logic_error(
        "Gpt::backward(slot): this rank does not hold the head: give d loss / d its output");
  }
  run_backward(nullptr, slot);
}

template <class T>
void Gpt<T>::backward(const Matrix<T>& stream_grad, int slot) {
  run_backward(lm_head_ ? nullptr : &stream_grad, slot);
}

template <class T>
void Gpt<T>::run_backward(const Matrix<T>* stream_grad, int slot) {
  Saved& s = saved_.read(slot);
  const Matrix<T>* grad = stream_grad;
  if (lm_head_) {
    if (!s.batch || s.batch->targets.size() == 0) {
      throw std::logic_error("Gpt::backward needs a forward pass with targets first");
    }
    // cross_entropy's gradient is of the mean over its N rows; the loss is the sum over
    // loss_tokens.
    if (layout_.keep_bf16) unpack_head(s, slot);
    const T scale = T(double(s.loss.loss.size()) / s.batch->loss_tokens);
    xt::noalias(logits_grad_) = s.loss.logits_grad * scale;
    piece_starts(pieces_.size() - 1, true);
    lm_head_->backward(*s.head_input, logits_grad_, head_input_grad_);
    grad = &final_norm_->backward(
        communicate(comm_.enter_backward, head_input_grad_, s.head_entered), slot);  // f's
    piece_ends(pieces_.size() - 1, true);
    if (layout_.keep_bf16) {
      for (Matrix<T>* m : head_kept(s, slot)) *m = Matrix<T>();  // read: freed
    }
    gradients_ready(pieces_.size() - 1);
  }
  const bool recompute = layout_.recompute == Recompute::Full;
  const bool bf16 = bool(layout_.keep_bf16);
  for (std::size_t l = blocks_.size(); l-- > 0;) {
    Block<T>& block = blocks_[l];
    piece_starts(block_piece(l), true);
    if (recompute) {  // the forward again, from the input kept: the same values as the first
      block.forward(s.block_inputs[l], *s.batch, slot);
      recomputed_peak_ = std::max(recomputed_peak_, block.activation_bytes());
    } else if (bf16) {
      block.unpack(slot);
    }
    grad = &block.backward(*grad, slot);
    piece_ends(block_piece(l), true);
    if (recompute) {
      block.release(slot);
    } else if (bf16) {
      block.drop(slot);
    }
    gradients_ready(block_piece(l));
  }
  if (embedding_) {
    piece_starts(0, true);
    embedding_->backward(*grad, slot);
    piece_ends(0, true);
    gradients_ready(0);
  } else {
    stream_input_grad_ = grad;
  }
}

template <class T>
const Matrix<T>& Gpt<T>::stream_input_grad() const {
  if (embedding_ || !stream_input_grad_) {
    throw std::logic_error("Gpt::stream_input_grad: only a stage without the embedding has one");
  }
  return *stream_input_grad_;
}

template <class T>
void Gpt<T>::zero_grad() {
  for (Parameter<T>* p : parameters()) p->grad.fill(T(0));
}

template <class T>
std::vector<Parameter<T>*> Gpt<T>::parameters() {
  std::vector<Parameter<T>*> all;
  for (const std::vector<Parameter<T>*>& piece : pieces_)
    all.insert(all.end(), piece.begin(), piece.end());
  return all;
}

template <class T>
std::size_t Gpt<T>::activation_bytes() const {
  // f(ln_f(x)) when f made it (else head_entered holds only f's backward: a workspace).
  const bool entered = bool(comm_.enter_forward);
  std::size_t total = saved_.total([entered](const Saved& s) {
    std::size_t bytes = (entered ? bytes_of(s.head_entered) : 0) + bytes_of(s.loss.logits_grad);
    for (const Matrix<T>& input : s.block_inputs) bytes += bytes_of(input);
    return bytes;
  });
  total += head_packed_.bytes();
  if (final_norm_) total += final_norm_->activation_bytes();
  // What recomputation makes again lives one block at a time.
  std::size_t recomputed = recomputed_peak_;
  for (const Block<T>& block : blocks_) {
    total += block.activation_bytes();
    recomputed = std::max(recomputed, block.recomputed_bytes());
  }
  return total + recomputed;
}

template <class T>
std::size_t Gpt<T>::workspace_bytes() const {
  const bool entered = bool(comm_.enter_forward);
  std::size_t total = saved_.total([entered](const Saved& s) {
    return (entered ? 0 : bytes_of(s.head_entered)) + bytes_of(s.loss.loss);
  });
  total += bytes_of(logits_, head_input_grad_, logits_grad_);
  if (embedding_) total += embedding_->workspace_bytes();
  if (final_norm_) total += final_norm_->workspace_bytes();
  for (const Block<T>& block : blocks_) total += block.workspace_bytes();
  return total;
}

std::vector<double> piece_flops(const GptConfig& c) {
  const double h = c.hidden, T = c.seq_len, V = c.vocab_size, f = c.mlp_width();
  const double one_mlp = 2 * (h * c.fc1_width() + f * h);  // W1, W2 (GPT-2's 16h²)
  const double mlp = c.mixture_of_experts() ? c.top_k * one_mlp + 2 * h * c.experts : one_mlp;
  // Per token: Q, K, V and the output projection (2 · h · ((a + 2kv) d + h), GPT-2's 2 · 4h²),
  // the scores and the weighted values (2 · T · h each), the MLP; and the LM head.
  std::vector<double> pieces(c.layers + 2, 2 * h * (c.qkv_width() + h) + 4 * T * h + mlp);
  pieces.front() = 0;
  pieces.back() = 2 * h * V;
  return pieces;
}

double recompute_flops(const GptConfig& c, double tokens, Recompute recompute) {
  const double h = c.hidden;
  switch (recompute) {
    case Recompute::None:
      return 0;
    case Recompute::Selective:  // W1's product of each token's MLP (its k experts' with experts)
      return c.layers * (c.mixture_of_experts() ? c.top_k : 1) * 2 * (h * c.fc1_width()) * tokens;
    case Recompute::Full:  // every block's forward
      return c.layers * piece_flops(c)[1] * tokens;
  }
  return 0;
}

double training_flops(const GptConfig& c, double tokens) {
  double per_token_forward = 0;
  for (const double piece : piece_flops(c)) per_token_forward += piece;
  return 3 * per_token_forward * tokens;  // backward: twice the forward's products
}

std::int64_t parameter_count(const GptConfig& c) {
  const std::int64_t h = c.hidden, V = c.vocab_size, T = c.seq_len, E = c.experts;
  const std::int64_t f = c.mlp_width(), qkv = c.qkv_width();
  // A Llama has no biases, no bias in its norms, no position table.
  const std::int64_t biases = c.llama() ? 0 : 1;
  const std::int64_t norm = (1 + biases) * h;
  const std::int64_t mlp = c.llama() ? 3 * h * f                        // W_gate, W_up, W2
                                     : h * f + f + f * h + h;           // W1, b1, W2, b2
  const std::int64_t attention = h * qkv + h * h + biases * (qkv + h);  // W_qkv, W_proj (+ b)
  const std::int64_t block =
      2 * norm + attention + (c.mixture_of_experts() ? h * E + E * mlp : mlp);
  return V * h + biases * T * h + c.layers * block + norm + h * V;
}

template class Gpt<float>;
template class Gpt<double>;

}  // namespace dtk::gpt
