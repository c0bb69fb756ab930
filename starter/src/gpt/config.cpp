#include "dtk/gpt/config.hpp"

#include "dtk/gpt/parameter.hpp"

namespace dtk::gpt {

namespace {

std::string text(long value) { return std::to_string(value); }

}  // namespace

std::string config_problem(const GptConfig& c) {
  if (c.vocab_size < 1 || c.seq_len < 1 || c.layers < 1 || c.hidden < 1 || c.heads < 1) {
    return "the vocabulary, context, layers, hidden width and heads must all be positive";
  }
  if (c.hidden % c.heads != 0) {
    return text(c.heads) + " heads do not divide the hidden width " + text(c.hidden) +
           ": each head is hidden / heads wide";
  }
  if (c.vocab_size % 64 != 0) {
    return "the vocabulary (" + text(c.vocab_size) + ") must be padded to a multiple of 64";
  }
  if (c.experts < 0) return "the number of experts cannot be negative";
  if (c.mixture_of_experts() && (c.top_k < 1 || c.top_k > c.experts)) {
    return "top_k " + text(c.top_k) + " must be between 1 and the " + text(c.experts) + " experts";
  }
  if (c.aux_loss_coef < 0) return "the load-balancing loss's coefficient cannot be negative";
  return "";
}

GptLayout one_rank_layout(const GptConfig& config) {
  GptLayout layout;
  layout.qkv_columns = index_range(0, 3 * config.hidden);
  layout.expert_end = config.experts;
  layout.piece_end = config.layers + 2;
  return layout;
}

std::string layout_problem(const GptConfig& c, const GptLayout& l) {
  const int tp = l.tp_size;
  if (tp < 1 || l.tp_idx < 0 || l.tp_idx >= tp) {
    return "tp_idx " + text(l.tp_idx) + " is not a rank of a group of " + text(tp);
  }
  if (c.vocab_size % tp != 0 || (4 * c.hidden) % tp != 0 || c.heads % tp != 0) {
    return "tp = " + text(tp) + " must divide the vocabulary (" + text(c.vocab_size) +
           "), the heads (" + text(c.heads) + ") and the MLP's width (" + text(4 * c.hidden) + ")";
  }
  // Whole heads: the Q block of the columns is heads of d columns each, in [0, h); the K and V
  // blocks are the same heads' columns, + h and + 2h.
  const std::size_t third = l.qkv_columns.size() / 3;
  const int d = c.head_size();
  bool whole_heads = l.qkv_columns.size() == 3 * third && third > 0 && third % d == 0;
  for (std::size_t i = 0; whole_heads && i < third; ++i) {
    const int q = l.qkv_columns[i];
    whole_heads = q >= 0 && q < c.hidden && (i % d != 0 || q % d == 0) &&
                  (i % d == 0 || q == l.qkv_columns[i - 1] + 1) &&
                  l.qkv_columns[third + i] == q + c.hidden &&
                  l.qkv_columns[2 * third + i] == q + 2 * c.hidden;
  }
  if (!whole_heads) {
    return "the QKV columns must be whole heads (d = " + text(d) +
           " columns each) of Q, then the same heads of K (+h), then of V (+2h)";
  }
  if (l.sequence_parallel && tp == 1) return "sequence parallelism needs tensor parallelism";
  if (l.expert_begin < 0 || l.expert_begin > l.expert_end || l.expert_end > c.experts) {
    return "experts [" + text(l.expert_begin) + ", " + text(l.expert_end) + ") are not among the " +
           text(c.experts);
  }
  if (l.piece_begin < 0 || l.piece_begin >= l.piece_end || l.piece_end > c.layers + 2) {
    return "pieces [" + text(l.piece_begin) + ", " + text(l.piece_end) +
           ") are not a non-empty range of the model's " + text(c.layers + 2) +
           " (the embedding, the blocks, the head)";
  }
  return "";
}

}  // namespace dtk::gpt
