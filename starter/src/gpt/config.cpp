#include "dtk/gpt/config.hpp"

#include <algorithm>

#include "dtk/gpt/parameter.hpp"

namespace dtk::gpt {

namespace {

std::string text(long value) { return std::to_string(value); }

// The heads (counted from column `first`) whose columns `columns` holds from `at` on: `count`
// whole heads of d columns each; false when they are not whole heads.
bool heads_at(const std::vector<int>& columns, std::size_t at, std::size_t count, int first, int d,
              std::vector<int>& heads) {
  heads.clear();
  if (at + count * d > columns.size()) return false;
  for (std::size_t i = 0; i < count * d; ++i) {
    const int column = columns[at + i] - first;
    if (i % d == 0) {
      if (column < 0 || column % d != 0) return false;
      heads.push_back(column / d);
    } else if (columns[at + i] != columns[at + i - 1] + 1) {
      return false;
    }
  }
  return true;
}

// The layout's QKV columns: whole query heads of Q (below a · d), then of K exactly the
// key/value heads those query heads read, then the same heads of V.
bool whole_heads(const GptConfig& c, const std::vector<int>& columns) {
  const int d = c.head_size(), a = c.heads, kv = c.key_value_heads();
  const std::size_t queries =
      std::count_if(columns.begin(), columns.end(), [&](int column) { return column < a * d; });
  if (queries == 0 || queries % d != 0 || columns.size() == queries ||
      (columns.size() - queries) % (2 * d) != 0) {
    return false;  // no whole query heads, or no key/value heads for them
  }
  const std::size_t q_heads = queries / d, kv_heads = (columns.size() - queries) / (2 * d);
  std::vector<int> q, k, v;
  if (!heads_at(columns, 0, q_heads, 0, d, q) ||
      !heads_at(columns, queries, kv_heads, a * d, d, k) ||
      !heads_at(columns, queries + kv_heads * d, kv_heads, (a + kv) * d, d, v) || k != v ||
      *std::max_element(k.begin(), k.end()) >= kv) {
    return false;
  }
  std::vector<int> distinct = q;
  std::sort(distinct.begin(), distinct.end());
  if (std::unique(distinct.begin(), distinct.end()) != distinct.end()) return false;
  std::vector<int> read;  // the key/value head of each query head, a/kv of them share one
  for (const int head : q) {
    if (read.empty() || read.back() != head / (a / kv)) read.push_back(head / (a / kv));
  }
  return read == k;
}

}  // namespace

int GptLayout::local_heads(const GptConfig& c) const {
  const int queries =
      static_cast<int>(std::count_if(qkv_columns.begin(), qkv_columns.end(),
                                     [&](int column) { return column < c.heads * c.head_size(); }));
  return queries / c.head_size();
}

const char* architecture_name(Architecture arch) {
  return arch == Architecture::Llama ? "llama" : "gpt2";
}

std::string config_problem(const GptConfig& c) {
  if (c.vocab_size < 1 || c.seq_len < 1 || c.layers < 1 || c.hidden < 1 || c.heads < 1) {
    return "the vocabulary, context, layers, hidden width and heads must all be positive";
  }
  if (c.hidden % c.heads != 0) {
    return text(c.heads) + " heads do not divide the hidden width " + text(c.hidden) +
           ": each head is hidden / heads wide";
  }
  if (c.kv_heads < 0 || c.heads % c.key_value_heads() != 0) {
    return text(c.kv_heads) + " key/value heads must divide the " + text(c.heads) +
           " query heads: each key/value head serves a/kv of them";
  }
  if (!c.llama() && c.key_value_heads() != c.heads) {
    return "GPT-2 has one key/value head per query head: grouped-query attention (kv_heads) is "
           "a Llama's";
  }
  if (c.llama() && c.head_size() % 2 != 0) {
    return "a Llama's rotary positions turn pairs of a head's columns: d = " + text(c.head_size()) +
           " must be even";
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
  layout.qkv_columns = index_range(0, config.qkv_width());
  layout.expert_end = config.experts;
  layout.piece_end = config.layers + 2;
  return layout;
}

std::string layout_problem(const GptConfig& c, const GptLayout& l) {
  const int tp = l.tp_size;
  if (tp < 1 || l.tp_idx < 0 || l.tp_idx >= tp) {
    return "tp_idx " + text(l.tp_idx) + " is not a rank of a group of " + text(tp);
  }
  if (c.vocab_size % tp != 0 || c.mlp_width() % tp != 0 || c.heads % tp != 0) {
    return "tp = " + text(tp) + " must divide the vocabulary (" + text(c.vocab_size) +
           "), the heads (" + text(c.heads) + ") and the MLP's width (" + text(c.mlp_width()) + ")";
  }
  if (!whole_heads(c, l.qkv_columns)) {
    return "the QKV columns must be whole heads (d = " + text(c.head_size()) +
           " columns each) of Q, then the key/value heads those query heads read, of K (from "
           "a · d) and of V (from (a + kv) · d)";
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
