// What gpt_train's layouts should cost, counted from the model's shape alone (the handout's
// "Training the GPT"): the bytes each group (and each pipeline stage) sends in a training step and
// the activations one block keeps, per rank. print_results sets them beside what the ranks
// measured.
//
// Notation (dtk/gpt/config.hpp): h, a, kv, d, f, L, V, T, E, k; e bytes per value; on one rank
// N = B/dp · T/cp rows, kv_w = kv · d/tp columns of K and of V (d when kv < tp: one key/value
// head, held by tp/kv ranks). The Communicator counts an
// all-reduce of n bytes over p ranks as 2 (p − 1) n / p, an all-gather as (p − 1) n of its input, a
// reduce-scatter as (p − 1) n of its output (communicator.hpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "gpt_train.hpp"

namespace dtk::gpt_train {

namespace {

double allreduce(double bytes, int ranks) {
  return ranks > 1 ? 2.0 * (ranks - 1) * bytes / ranks : 0;
}

// Values of each parameter class on one rank: tensor-parallel slices, replicated tensors,
// experts, a replicated key/value head's K and V columns (parameter.hpp's Sharing).
struct ParameterClasses {
  double sliced, replicated, experts, key_values;
  ParameterClasses operator+(const ParameterClasses& o) const {
    return {sliced + o.sliced, replicated + o.replicated, experts + o.experts,
            key_values + o.key_values};
  }
};

// Columns of K (and of V) on one rank.
double key_value_columns(const gpt::GptTrainOptions& t, const gpt::GptConfig& m) {
  return double(std::max(m.key_value_heads() / t.tp, 1)) * m.head_size();
}

// Of piece `piece` of the model (0 the embedding, 1 .. L the blocks, L + 1 the head). A Llama
// has no biases, no norm biases and no wpe (biases = 0); its W1 is [W_gate | W_up], 2f wide.
ParameterClasses piece_classes(const gpt::GptTrainOptions& t, const gpt::GptConfig& m, int piece) {
  const double h = m.hidden, V = m.vocab_size, p = t.tp, qkv = m.qkv_width(), f = m.mlp_width();
  const double biases = m.llama() ? 0 : 1, norm = (1 + biases) * h, fc1 = m.fc1_width();
  if (piece == 0) return {V * h / p, biases * m.seq_len * h, 0, 0};  // wte's rows, wpe
  if (piece == m.layers + 1) return {V * h / p, norm, 0, 0};         // the LM head, ln_f
  // W_qkv, b_qkv, W_proj; W_qkv's K and V columns a class of their own when tp/kv ranks hold
  // each key/value head.
  const bool replicated_key_values = m.key_value_heads() < t.tp;
  const double key_values = replicated_key_values ? 2 * h * key_value_columns(t, m) : 0;
  const double attention =
      (h * (replicated_key_values ? m.heads * m.head_size() : qkv) + biases * qkv + h * h) / p;
  const double one_mlp = h * fc1 + biases * fc1 + f * h;  // W1, b1, W2
  const double mlp = m.mixture_of_experts() ? 0 : one_mlp / p;
  // Two norms, b_proj, and b2 or the router.
  const double replicated =
      2 * norm + biases * h + (m.mixture_of_experts() ? h * m.experts : biases * h);
  return {attention + mlp, replicated, double(m.experts) / t.ep * (one_mlp + biases * h),
          key_values};
}

// Of the pieces [begin, end).
ParameterClasses pieces_classes(const gpt::GptTrainOptions& t, const gpt::GptConfig& m, int begin,
                                int end) {
  ParameterClasses sum{0, 0, 0, 0};
  for (int piece = begin; piece < end; ++piece) sum = sum + piece_classes(t, m, piece);
  return sum;
}

// Of the pieces of a rank's chunks (each [begin, end)).
ParameterClasses chunks_classes(const gpt::GptTrainOptions& t, const gpt::GptConfig& m,
                                const std::vector<std::array<int, 2>>& chunks) {
  ParameterClasses sum{0, 0, 0, 0};
  for (const auto& [begin, end] : chunks) sum = sum + pieces_classes(t, m, begin, end);
  return sum;
}

// The segments of the flat vectors (gpt/model_states.hpp) of a rank holding `c`: each a number of
// values and the ranks that sum them.
std::array<std::pair<double, int>, 4> segments(const gpt::GptTrainOptions& t,
                                               const gpt::GptConfig& m, const ParameterClasses& c) {
  const int replicas = t.dp * t.cp;
  return {{{c.experts, t.dp / t.ep * t.cp},
           {t.sequence_parallel ? c.replicated : 0, t.tp * replicas},
           {c.sliced + (t.sequence_parallel ? 0 : c.replicated), replicas},
           {c.key_values, std::max(t.tp / m.key_value_heads(), 1) * replicas}}};
}

// Part 9.2's shard of n values over p ranks (all of them on one rank).
double shard(double n, int p) { return std::ceil(n / p); }

}  // namespace

std::array<double, 4> analytic_bytes_per_step(const gpt::GptTrainOptions& t,
                                              const gpt::GptConfig& m,
                                              const std::vector<std::array<int, 2>>& chunks,
                                              std::size_t e) {
  const double h = m.hidden, p = t.tp, cp = t.cp;
  const double N = double(t.batch_size / t.dp) * (m.seq_len / t.cp);
  const double kv_w = key_value_columns(t, m);  // columns of K and of V
  // What the rank holds of the model's pieces (0 the embedding, 1 .. L the blocks, L + 1 the
  // head): its blocks L, and R of them run forward again in the backward (every one with full
  // recomputation).
  bool embedding = false, head = false;
  double L = 0;
  for (const auto& [begin, end] : chunks) {
    for (int piece = begin; piece < end; ++piece) {
      embedding |= piece == 0;
      head |= piece == m.layers + 1;
      L += piece > 0 && piece <= m.layers;
    }
  }
  const double R = t.recompute == gpt::Recompute::Full ? L : 0;
  std::array<double, 4> bytes{};  // tensor, context, data, expert parallel
  if (t.tp > 1) {
    // Per block f and g twice (attention, MLP) forward and backward: all-reduces of (N, h), or
    // under --sp all-gathers and reduce-scatters of (N/tp, h) each; full recomputation runs each
    // block's forward twice, its half of those again. The embedding's all-reduce of (N, h) (and
    // under --sp its gradient gathered back); the LM head's f forward and backward and the
    // cross-entropy's three all-reduces of N values.
    const double sp_piece = (p - 1) * (N / p) * h * e;
    bytes[0] = t.sequence_parallel ? (8 * L + 4 * R) * sp_piece
                                   : (4 * L + 2 * R) * allreduce(N * h * e, t.tp);
    if (embedding) bytes[0] += allreduce(N * h * e, t.tp) + (t.sequence_parallel ? sp_piece : 0);
    if (head) {
      bytes[0] += 3 * allreduce(N * e, t.tp) +
                  (t.sequence_parallel ? 2 * sp_piece : allreduce(N * h * e, t.tp));
    }
  }
  if (t.cp > 1) {
    // Per block: the ring forward passes K and V (cp − 1) times; its backward passes K, V
    // (cp − 1) times and dK, dV cp times (the last hop takes them home); each (N, kv · d/tp).
    // The positions that travel with a block are not counted.
    bytes[1] = (L * (4 * (cp - 1) + 2 * cp) + R * 2 * (cp - 1)) * N * kv_w * e;
  }
  // The gradient sums: slices over dp · cp ranks, replicated tensors too (over tp · dp · cp under
  // --sp), experts over their dp/ep · cp replicas, replicated key/value heads over tp/kv · dp · cp;
  // with experts, the router's statistics (2E doubles per block and micro-batch) over dp · cp. Part
  // 15's buckets (--bucket_mb) sum in double. ZeRO-1 gathers the updated shards after the
  // all-reduce (an all-gather of s values); ZeRO-2 reduce-scatters instead, then gathers: 2 (p − 1)
  // s values. ZeRO-3: each piece gathered before its forward and its backward and its gradient
  // reduce-scattered, per micro-batch: 3 (p − 1) s values of each group of the piece.
  const int replicas = t.dp * t.cp;
  const std::size_t g = t.bucket_mb > 0 ? sizeof(double) : e;
  for (const auto& [begin, end] : chunks) {
    for (int piece = begin; t.zero_stage == 3 && piece < end; ++piece) {
      for (const auto& [n, p] : segments(t, m, piece_classes(t, m, piece)))
        bytes[2] += t.microbatches * 3.0 * (p - 1) * shard(n, p) * e;
    }
  }
  for (const auto& [n, p] : segments(t, m, chunks_classes(t, m, chunks))) {
    if (p == 1 || t.zero_stage == 3) continue;
    const double s = shard(n, p);
    bytes[2] += t.zero_stage == 2 ? 2.0 * (p - 1) * s * e
                                  : allreduce(n * g, p) + (t.zero_stage == 1 ? (p - 1) * s * e : 0);
  }
  if (m.mixture_of_experts())
    bytes[2] += t.microbatches * (L + R) * allreduce(2.0 * m.experts * 8, replicas);
  if (t.ep > 1) {
    // If the router spread the rows evenly: dispatch and combine, forward and backward, each
    // send the (ep − 1)/ep of the k · N rows whose experts are elsewhere.
    bytes[3] = (L * 4 + R * 2) * m.top_k * N * h * e * (t.ep - 1) / t.ep;
  }
  return bytes;
}

ActivationCounts analytic_activations_per_block(const gpt::GptTrainOptions& t,
                                                const gpt::GptConfig& m, std::size_t e) {
  const double h = m.hidden, a = m.heads, p = t.tp, s = double(m.seq_len) / t.cp;
  const double b = t.batch_size / t.dp, N = b * s;
  const double stream = t.sequence_parallel ? N / p : N;  // rows of the residual stream
  const double kv_w = key_value_columns(t, m);            // columns of K and of V
  const double fc1 = m.fc1_width();                       // of x · W1
  // Two norms (x̂, 1/σ, y), Q, K, V and the attention's out and lse, the MLP's x · W1 (+ b1) and
  // its activation (not with selective recomputation), and under --sp the gathered inputs of the
  // attention and of the MLP; with full recomputation, the block's input alone.
  const bool selective = t.recompute == gpt::Recompute::Selective;
  const bool full = t.recompute == gpt::Recompute::Full;
  // Of those, what a bf16 run keeps in float (bf16_store.hpp), its other values in 2 bytes: the
  // statistics (each LayerNorm's 1/σ and the attention's log-sum-exp), or with full
  // recomputation the block's input (the residual stream).
  const double statistics = 2 * stream + N * a / p;
  const double values = full ? stream * h
                             : 2 * (2 * stream * h) + N * (2 * h / p + 2 * kv_w) + statistics +
                                   (selective ? 0 : N * (fc1 + m.mlp_width()) / p) +
                                   (t.sequence_parallel ? 2 * N * h : 0);
  const double in_float = full ? values : statistics;
  const double bytes = t.bf16 ? 2 * (values - in_float) + sizeof(float) * in_float : values * e;
  // Korthikanti et al.'s count (2022, eq. 5 divided by t; eq. 6 and section 5 for
  // recomputation): 16-bit values, dropout masks, the a · s² scores kept: s · b · h · (34 +
  // 5 a s / h) / tp bytes with sequence parallelism (the LayerNorms' and dropouts' 10 s b h not
  // divided by tp without it); selective drops the 5 a s / h of the scores, full keeps the
  // block's input, 2 s b h (/ tp with sequence parallelism).
  const double scores = selective ? 0 : 5 * a * s / h;
  const double korthikanti =
      t.recompute == gpt::Recompute::Full ? 2 * s * b * h / (t.sequence_parallel ? p : 1)
      : t.sequence_parallel || t.tp == 1  ? s * b * h * (34 + scores) / p
                                          : s * b * h * (10 + (24 + scores) / p);
  return {bytes, korthikanti};
}

double micro_batch_stream_rows(const gpt::GptTrainOptions& t) {
  const int positions = t.model.seq_len / t.cp / (t.sequence_parallel ? t.tp : 1);
  return double(t.batch_size) / t.dp / t.microbatches * positions;
}

double analytic_pipeline_bytes_per_step(const gpt::GptTrainOptions& t, int pp_idx, std::size_t e) {
  // Each of the rank's chunks (the model's chunk c = v · pp + pp_idx) sends its stream on unless
  // it is the model's last, and its gradient back unless it is the first.
  const int chunks = t.pp * t.virtual_stages;
  int directions = 0;
  for (int c = pp_idx; c < chunks; c += t.pp) directions += (c < chunks - 1) + (c > 0);
  return directions * t.microbatches * micro_batch_stream_rows(t) * t.model.hidden * double(e);
}

ModelStateCounts analytic_model_states(const gpt::GptTrainOptions& t, const gpt::GptConfig& m,
                                       const std::vector<std::array<int, 2>>& chunks,
                                       std::size_t e) {
  const ParameterClasses held = chunks_classes(t, m, chunks);
  ModelStateCounts count;
  const bool adam = t.optimizer == gpt::Optimizer::Adam;
  if (t.zero_stage == 3) {
    // Every piece's shards, and one piece whole at a time; the optimizer keeps a copy of the
    // shards beside Adam's m and v (fully_sharded.hpp).
    double shards = 0, largest = 0;
    for (const auto& [begin, end] : chunks) {
      for (int piece = begin; piece < end; ++piece) {
        double whole = 0;
        for (const auto& [n, p] : segments(t, m, piece_classes(t, m, piece))) {
          shards += n > 0 ? shard(n, p) : 0;
          whole += n;
        }
        largest = std::max(largest, whole);
      }
    }
    return {(shards + largest) * e, shards * e, (adam ? 3 : 1) * shards * e};
  }
  for (const auto& [n, p] : segments(t, m, held)) {
    const double s = t.zero_stage > 0 ? shard(n, p) : n;
    if (t.bf16) {  // 2 + 2 + 12 bytes a value (mixed_precision.hpp)
      count.parameters += 2 * n;
      count.gradients += 2 * (t.zero_stage == 2 ? s : n);
      count.optimizer += 12 * s;
      continue;
    }
    count.parameters += n * e;
    count.gradients += (t.zero_stage == 2 ? s : n) * e;
    count.optimizer += adam ? 2 * s * e : 0;
  }
  return count;
}

}  // namespace dtk::gpt_train
