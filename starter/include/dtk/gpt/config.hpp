// The GPT's shape (GptConfig) and how one rank holds it (GptLayout).
//
// Notation used in every file of dtk/gpt:
//   V  vocabulary (padded to a multiple of 64)   T  positions the model knows (its context)
//   L  blocks                                    h  hidden width    a  heads    d = h / a
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

struct GptConfig {
  int vocab_size = 128;  // V
  int seq_len = 128;     // T
  int layers = 4;        // L
  int hidden = 256;      // h
  int heads = 4;         // a
  int experts = 0;       // E: 0 for GPT-2's MLP, else a mixture of E experts in every block
  int top_k = 1;         // k
  // Switch Transformer's load-balancing loss, α · E · Σ_e f_e · P_e per block, added to the
  // loss (mixture of experts only). The Switch paper's α.
  double aux_loss_coef = 0.01;
  double layer_norm_eps = 1e-5;  // PyTorch's and GPT-2's

  int head_size() const { return hidden / heads; }  // d
  bool mixture_of_experts() const { return experts > 0; }
};

// Why this shape cannot be built, in one sentence ("" when it can): sizes not positive, h not a
// multiple of a, V not a multiple of 64, k not in [1, E].
std::string config_problem(const GptConfig& config);

// What a rank keeps from a forward for its backward (Part 16.4; Korthikanti et al., 2022):
//   None       every activation the backward reads
//   Selective  all but the MLP's hidden activation (x · W1 + b1 and its GELU, 8 N h/tp values
//              per block, the largest): the backward computes it again from the MLP's input.
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
  // the (h, 3h) weight), the MLP's hidden columns [tp_idx · 4h/tp, +4h/tp), and the vocabulary
  // rows [tp_idx · V/tp, +V/tp) of the embedding and columns of the LM head.
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
  int mlp_begin(const GptConfig& c) const { return tp_idx * (4 * c.hidden / tp_size); }
  int local_mlp_width(const GptConfig& c) const { return 4 * c.hidden / tp_size; }
  int local_heads(const GptConfig& c) const {
    return static_cast<int>(qkv_columns.size()) / 3 / c.head_size();
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
// V, 4h or a; QKV columns that are not whole heads of Q, K and V; experts out of range; no
// pieces, or pieces outside the model's L + 2.
std::string layout_problem(const GptConfig& config, const GptLayout& layout);

}  // namespace dtk::gpt
