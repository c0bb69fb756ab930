// The GPT's shape (GptConfig) and how one rank holds it (GptLayout).
//
// Notation used in every file of dtk/gpt:
//   V  vocabulary (padded to a multiple of 64)   T  positions the model knows (its context)
//   L  blocks                                    h  hidden width    a  heads    d = h / a
//   kv key/value heads (a Llama's; a for GPT-2)  f  the MLP's hidden width (4h for GPT-2)
//   E  experts (0: the dense MLP)                k  experts per token
//   B  sequences in a batch                      S  positions of each sequence this rank holds
//   N  rows of an activation: B · S, row b · S + s holds position s of sequence b
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dtk::gpt {

// The two blocks the model can be built of (gpt.hpp shows both):
//   Gpt2   LayerNorm, learned positions, GELU MLP, multi-head attention, biases (GPT-2)
//   Llama  RMSNorm, rotary positions, SwiGLU MLP, grouped-query attention, no biases (Llama 2)
enum class Architecture { Gpt2, Llama };

struct GptConfig {
  Architecture arch = Architecture::Gpt2;
  int vocab_size = 128;  // V
  int seq_len = 128;     // T
  int layers = 4;        // L
  int hidden = 256;      // h
  int heads = 4;         // a
  // A Llama's key/value heads, kv (grouped-query attention, Ainslie et al., 2023): the a/kv
  // query heads [j · a/kv, (j + 1) · a/kv) share key/value head j. 0: kv = a (multi-head; GPT-2's
  // only choice); 1: one key/value head for all (multi-query attention).
  int kv_heads = 0;
  double rope_theta = 10000;  // a Llama's rotary base: pair i turns by position · θ^(-2i/d)
  int experts = 0;            // E: 0 for GPT-2's MLP, else a mixture of E experts in every block
  int top_k = 1;              // k
  // Switch Transformer's load-balancing loss, α · E · Σ_e f_e · P_e per block, added to the
  // loss (mixture of experts only). The Switch paper's α.
  double aux_loss_coef = 0.01;
  double layer_norm_eps = 1e-5;  // the norms' epsilon: GPT-2's LayerNorm's, Llama 2's RMSNorm's

  bool llama() const { return arch == Architecture::Llama; }
  int head_size() const { return hidden / heads; }                                 // d
  int key_value_heads() const { return kv_heads > 0 ? kv_heads : heads; }          // kv
  int qkv_width() const { return (heads + 2 * key_value_heads()) * head_size(); }  // (a + 2kv) d
  // f: GPT-2's 4h; a Llama's SwiGLU 2/3 of that (its three matrices cost what GPT-2's two do),
  // rounded up to a multiple of 64 (Llama rounds to 256: too coarse for these widths).
  int mlp_width() const { return llama() ? (8 * hidden / 3 + 63) / 64 * 64 : 4 * hidden; }
  // W1's columns: f, or a Llama's 2f (its W_gate and W_up side by side).
  int fc1_width() const { return (llama() ? 2 : 1) * mlp_width(); }
  bool mixture_of_experts() const { return experts > 0; }
};

// "gpt2" or "llama", as gpt_train's --arch and the reports name them.
const char* architecture_name(Architecture arch);

// Why this shape cannot be built, in one sentence ("" when it can): sizes not positive, h not a
// multiple of a, kv not dividing a (or set for GPT-2), d odd for a Llama's rotary pairs, V not a
// multiple of 64, k not in [1, E].
std::string config_problem(const GptConfig& config);

// What a rank keeps from a forward for its backward (Part 16.4; Korthikanti et al., 2022):
//   None       every activation the backward reads
//   Selective  all but the MLP's hidden activation (x · W1 + b1 and its GELU, 2 N f/tp values
//              per block, the largest; a Llama's 3 N f/tp): the backward computes it again from
//              the MLP's input.
//              The attention's scores are never kept (the kernels recompute them, as
//              FlashAttention does), so this is Korthikanti's selective recomputation here.
//   Full       each block's input only: the backward runs the block's forward again, its
//              communication included, just before the block's backward
// Every mode trains bit-identical weights: the same operations run again on the same values.
enum class Recompute { None, Selective, Full };

// Rounds `count` floats to the nearest bf16 (their 16 bits each) into `bits`: Part 16.1's
// to_bf16 on each, as gpt_train binds it.
using Bf16Rounding =
    std::function<void(const float* values, std::size_t count, std::uint16_t* bits)>;

// How this rank holds the model. One rank (one_rank_layout) holds all of it; the trainers of
// Parts 10 and 12 fill in the slices their students' functions give.
struct GptLayout {
  // Tensor parallelism (Part 10): rank tp_idx of tp_size holds the heads whose QKV columns are
  // `qkv_columns` (10.1's qkv_columns: its Q columns, then its K columns, then its V columns, of
  // the (h, (a + 2kv) d) weight; the K and V heads its query heads read), the MLP's hidden
  // columns [tp_idx · f/tp, +f/tp), and the vocabulary rows [tp_idx · V/tp, +V/tp) of the
  // embedding and columns of the LM head.
  int tp_size = 1;
  int tp_idx = 0;
  std::vector<int> qkv_columns;
  // Sequence parallelism (Part 10.4): outside the tensor-parallel regions this rank holds
  // positions [tp_idx · S/tp, +S/tp) of each sequence.
  bool sequence_parallel = false;
  // Expert parallelism (Part 12): the experts [expert_begin, expert_end) this rank holds.
  int expert_begin = 0;
  int expert_end = 0;
  // Pipeline parallelism: the model is L + 2 pieces in a row, the embedding (piece 0), the
  // blocks (pieces 1 .. L) and the head: ln_f, the LM head and the loss (piece L + 1). This
  // rank's stage holds the pieces [piece_begin, piece_end); one rank holds all of them.
  int piece_begin = 0;
  int piece_end = 0;
  // What the blocks keep for the backward.
  Recompute recompute = Recompute::None;
  // A bf16 run (a float model only): what the blocks and the head keep for the backward is held
  // as bf16, rounded by this (bf16_store.hpp). Empty: kept as computed.
  Bf16Rounding keep_bf16;

  int vocab_begin(const GptConfig& c) const { return tp_idx * (c.vocab_size / tp_size); }
  int local_vocab(const GptConfig& c) const { return c.vocab_size / tp_size; }
  int mlp_begin(const GptConfig& c) const { return tp_idx * local_mlp_width(c); }
  int local_mlp_width(const GptConfig& c) const { return c.mlp_width() / tp_size; }
  // This rank's query heads (its Q columns are those below a · d) and key/value heads.
  int local_heads(const GptConfig& c) const;
  int local_kv_heads(const GptConfig& c) const {
    return (static_cast<int>(qkv_columns.size()) / c.head_size() - local_heads(c)) / 2;
  }
  // Fewer key/value heads than tensor-parallel ranks: each is held by tp/kv ranks.
  bool key_value_heads_replicated(const GptConfig& c) const {
    return tp_size > c.key_value_heads();
  }
  bool holds_embedding() const { return piece_begin == 0; }
  bool holds_head(const GptConfig& c) const { return piece_end == c.layers + 2; }
  // The blocks [block_begin, block_end) of the pieces this rank holds.
  int block_begin() const { return std::max(piece_begin - 1, 0); }
  int block_end(const GptConfig& c) const { return std::min(piece_end - 1, c.layers); }
};

// The whole model on one rank: every QKV column, every expert, every piece.
GptLayout one_rank_layout(const GptConfig& config);

// Why this rank cannot hold the model as `layout` says ("" when it can): tp_size not dividing
// V, f or a; QKV columns that are not whole heads of Q, then the K and V heads those query
// heads read; experts out of range; no pieces, or pieces outside the model's L + 2.
std::string layout_problem(const GptConfig& config, const GptLayout& layout);

}  // namespace dtk::gpt
