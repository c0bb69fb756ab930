// Part 11 public tests: cp_positions, merge_attention, ring_attention_forward and
// ring_attention_backward, on 4 ranks.
//   mpirun -n 4 ./build/tests/test_context_parallel
// 11.1 against written-out tables. 11.2 against attention over the union of two sets of keys,
// computed here from the definition, and against the formula at scores 1000 apart. 11.3 and 11.4
// on context-parallel groups of 1, 2 and 4 ranks cut from the 4, contiguous and zig-zag, against
// the attention of the whole sequence and its gradients, computed here as one rank would
// (softmax over the keys at positions <= the query's), in double, also with grouped-query
// attention's keys and values of fewer heads; and with blocks of keys of 1 MB, where a ring that
// sends before it receives deadlocks.
#include "dtk_test.hpp"

#include <dtk/context_parallel.hpp>
#include <dtk/gpt/attention_kernels.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

constexpr int kRanks = 4;

using dtk::testing::Checks;
using dtk::testing::expect_invalid_argument;
using dtk::testing::report_first_few;
using Matrix = xt::xtensor<double, 2>;

constexpr double kMinusInfinity = -std::numeric_limits<double>::infinity();

std::string list_text(const std::vector<int>& values) {
  std::string text = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(values[i]);
  }
  return text + "}";
}

// ----------------------------------- 11.1 ----------------------------------------------------

// The positions of chunks `first`, then `second` (-1: none) of seq_len / chunks positions each.
std::vector<int> chunks_of(int seq_len, int chunks, int first, int second = -1) {
  std::vector<int> positions;
  const int chunk = seq_len / chunks;
  for (int c : {first, second}) {
    for (int i = 0; c >= 0 && i < chunk; ++i) positions.push_back(c * chunk + i);
  }
  return positions;
}

// What cp_positions' known mistakes give rank r.
dtk::testing::KnownMistakes<std::vector<int>> positions_mistakes(int seq_len, int cp, int r,
                                                                 bool zigzag) {
  if (!zigzag) {
    if (seq_len % (2 * cp) != 0) return {};
    return {{"zig-zag chunks where contiguous slices were asked",
             chunks_of(seq_len, 2 * cp, r, 2 * cp - 1 - r)}};
  }
  return {{"the two chunks swapped (chunk 2 cp_size - 1 - r before chunk r)",
           chunks_of(seq_len, 2 * cp, 2 * cp - 1 - r, r)},
          {"the ranks mirrored (rank r holding chunks cp_size - 1 - r and cp_size + r)",
           chunks_of(seq_len, 2 * cp, cp - 1 - r, cp + r)},
          {"contiguous slices (the zig-zag ignored)", chunks_of(seq_len, cp, r)}};
}

// Every rank's cp_positions(seq_len, cp_size, rank, zigzag) against the table `expected`.
void check_positions(Checks& check, int seq_len, int cp_size, bool zigzag,
                     const std::vector<std::vector<int>>& expected) {
  for (int rank = 0; rank < cp_size; ++rank) {
    const std::vector<int> actual = dtk::cp_positions(seq_len, cp_size, rank, zigzag);
    check.that(actual == expected[rank],
               "cp_positions(" + std::to_string(seq_len) + ", " + std::to_string(cp_size) + ", " +
                   std::to_string(rank) + ", " + (zigzag ? "true" : "false") + "): expected " +
                   list_text(expected[rank]) + ", got " + list_text(actual) + "." +
                   dtk::testing::known_mistake(positions_mistakes(seq_len, cp_size, rank, zigzag),
                                               actual));
  }
}

// ----------------------------------- helpers of 11.2 - 11.4 ----------------------------------

// Whether `actual` equals `expected` within the tolerance of T, relative and, below 1, absolute
// (the same infinity counts as equal: an empty row's lse is -infinity; and NaN as NaN, which only
// a known mistake's value holds).
template <class T>
bool close_enough(double expected, double actual) {
  const double rtol = std::is_same_v<T, float> ? 1e-4 : 1e-9;
  if (expected == actual || (std::isnan(expected) && std::isnan(actual))) return true;
  return std::abs(actual - expected) <= rtol * std::max(1.0, std::abs(expected));
}

// The inputs behind one element (row, column) of a result, in words.
using InputsOf = std::function<std::string(std::size_t row, std::size_t column)>;

// Records a failure unless `actual` equals `expected`, shown as every public test shows a
// tensor: whole up to 256 values, else by its first difference and that row. `inputs`, when
// given, names what went into the first element that differs, so that it can be redone by hand.
template <class T>
void check_matrix(Checks& check, const std::string& what, const Matrix& expected,
                  const xt::xtensor<T, 2>& actual, const InputsOf& inputs = {},
                  const dtk::testing::KnownMistakes<Matrix>& mistakes = {}) {
  std::string label = what;
  if (inputs && actual.shape() == expected.shape()) {
    for (std::size_t i = 0; i < expected.size(); ++i) {
      if (close_enough<T>(expected.flat(i), actual.flat(i))) continue;
      const std::size_t row = i / expected.shape(1), column = i % expected.shape(1);
      label += " (the first difference, at (" + std::to_string(row) + ", " +
               std::to_string(column) + "), from " + inputs(row, column) + ")";
      break;
    }
  }
  check.close_by(label, expected, actual, close_enough<T>, mistakes);
}

template <class T>
xt::xtensor<T, 2> as(const Matrix& m) {
  return xt::xtensor<T, 2>(xt::cast<T>(m));
}

// The attention of `queries` rows of q over the keys `keys` (rows of k and v, the same for every
// query row): per head, lse = log Σ exp(s_j) and out = Σ softmax(s)_j v_j, s_j = q · k_j / √d.
// No key: lse -infinity, out 0.
struct Partial {
  Matrix out, lse;
};
Partial attention_over(const Matrix& q, const Matrix& k, const Matrix& v, int heads,
                       const std::vector<std::size_t>& keys) {
  const std::size_t rows = q.shape(0), width = q.shape(1), d = width / heads;
  Partial result{xt::zeros<double>({rows, width}), Matrix({rows, std::size_t(heads)})};
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t h = 0; h < std::size_t(heads); ++h) {
      std::vector<double> scores;
      for (std::size_t j : keys) {
        double s = 0;
        for (std::size_t c = h * d; c < (h + 1) * d; ++c) s += q(i, c) * k(j, c);
        scores.push_back(s / std::sqrt(double(d)));
      }
      double sum = 0, max = kMinusInfinity;
      for (double s : scores) max = std::max(max, s);
      for (double s : scores) sum += std::exp(s - max);
      result.lse(i, h) = keys.empty() ? kMinusInfinity : max + std::log(sum);
      for (std::size_t n = 0; n < keys.size(); ++n) {
        const double weight = std::exp(scores[n] - result.lse(i, h));
        for (std::size_t c = h * d; c < (h + 1) * d; ++c)
          result.out(i, c) += weight * v(keys[n], c);
      }
    }
  }
  return result;
}

// A readable, deterministic matrix: element (i, c) is amplitude · sin(phase + 1.1 i + 0.37 c).
Matrix waves(std::size_t rows, std::size_t cols, double phase, double amplitude) {
  Matrix m({rows, cols});
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t c = 0; c < cols; ++c)
      m(i, c) = amplitude * std::sin(phase + 1.1 * i + 0.37 * c);
  }
  return m;
}

// (out, lse) of `side` merged with `block`'s as a known mistake merges them, row by row and head
// by head in T: weights_of(lse, block_lse) gives the two sides' weights and the merged lse, or
// nothing for a row the merge leaves as it is.
template <class T>
struct Weights {
  T side, block, lse;
};
template <class T, class WeightsOf>
Partial merged_by(const Partial& side, const Partial& block, WeightsOf weights_of) {
  Partial merged = side;
  const std::size_t heads = side.lse.shape(1), d = side.out.shape(1) / heads;
  for (std::size_t i = 0; i < side.lse.shape(0); ++i) {
    for (std::size_t h = 0; h < heads; ++h) {
      const std::optional<Weights<T>> w = weights_of(T(side.lse(i, h)), T(block.lse(i, h)));
      if (!w) continue;
      for (std::size_t c = h * d; c < (h + 1) * d; ++c) {
        merged.out(i, c) =
            (w->side * T(side.out(i, c)) + w->block * T(block.out(i, c))) / (w->side + w->block);
      }
      merged.lse(i, h) = w->lse;
    }
  }
  return merged;
}

// What merge_attention's known mistakes give for out and for lse.
struct MergeMistakes {
  dtk::testing::KnownMistakes<Matrix> out, lse;
};
template <class T>
MergeMistakes merge_mistakes(const Partial& side, const Partial& block) {
  using W = std::optional<Weights<T>>;
  const T minus_infinity = -std::numeric_limits<T>::infinity();
  const std::string no_shift =
      "the merge without the max shift (e^lse overflows to infinity past lse ≈ 88 in float, 709 "
      "in double, or underflows to 0)";
  const Partial unshifted = merged_by<T>(side, block, [](T a, T b) -> W {
    return Weights<T>{std::exp(a), std::exp(b), std::log(std::exp(a) + std::exp(b))};
  });
  const std::string empty =
      "two empty sides merged with the shift (-infinity - (-infinity) is NaN)";
  const Partial nan_when_empty = merged_by<T>(side, block, [&](T a, T b) -> W {
    const T m = std::max(a, b), nan = std::numeric_limits<T>::quiet_NaN();
    if (m == minus_infinity) return Weights<T>{nan, nan, nan};
    const T wa = std::exp(a - m), wb = std::exp(b - m);
    return Weights<T>{wa, wb, m + std::log(wa + wb)};
  });
  const Partial averaged = merged_by<T>(side, block, [&](T, T b) -> W {
    if (b == minus_infinity) return std::nullopt;  // an empty block adds nothing
    return Weights<T>{1, 1, 0};                    // (its lse is not this mistake's)
  });
  return {{{no_shift, unshifted.out},
           {empty, nan_when_empty.out},
           {"the two sides weighted equally, (out + block_out) / 2 (by count, not by e^lse)",
            averaged.out}},
          {{no_shift, unshifted.lse}, {empty, nan_when_empty.lse}}};
}

// ----------------------------------- helpers of 11.3 - 11.4 ----------------------------------

// One attention problem over whole sequences, and what one rank holding all of it computes.
// Rows b · length + t hold position t of sequence b. k and v have kv heads (grouped-query
// attention when kv < heads: query head h reads key/value head h / (heads / kv)).
struct Problem {
  int batch, heads, d, length, kv;
  Matrix q, k, v, dout;
};

Problem make_problem(int batch, int heads, int d, int length, int kv) {
  const std::size_t rows = std::size_t(batch) * length, width = std::size_t(heads) * d;
  return {batch,
          heads,
          d,
          length,
          kv,
          waves(rows, width, 0.0, 2.0),
          waves(rows, std::size_t(kv) * d, 1.0, 2.0),
          waves(rows, std::size_t(kv) * d, 2.0, 1.0),
          waves(rows, width, 3.0, 1.0)};
}

struct Serial {
  Matrix out, lse, dq, dk, dv;
};

// Causal attention and its gradients straight from the definitions, for every position of every
// sequence: P = softmax over the keys at positions <= the query's, out = P v;
// dV += Pᵀ dout, dP = dout vᵀ, dS = P ⊙ (dP − rowsum(P ⊙ dP)), dQ = dS k / √d, dK = dSᵀ q / √d.
Serial serial_attention(const Problem& pb) {
  const std::size_t rows = pb.q.shape(0), width = pb.q.shape(1), d = pb.d;
  const std::size_t kv_width = std::size_t(pb.kv) * d, group = pb.heads / pb.kv;
  Serial s{xt::zeros<double>({rows, width}), Matrix({rows, std::size_t(pb.heads)}),
           xt::zeros<double>({rows, width}), xt::zeros<double>({rows, kv_width}),
           xt::zeros<double>({rows, kv_width})};
  const double scale = 1 / std::sqrt(double(d));
  std::vector<double> p(pb.length), dp(pb.length);
  for (int b = 0; b < pb.batch; ++b) {
    const std::size_t first = std::size_t(b) * pb.length;  // row of position 0
    for (int t = 0; t < pb.length; ++t) {
      const std::size_t i = first + t;
      for (std::size_t h = 0; h < std::size_t(pb.heads); ++h) {
        // Query head h's columns [c0, c1) of q, out and dout; its key/value head's from kv0.
        const std::size_t c0 = h * d, c1 = c0 + d, kv0 = (h / group) * d;
        double max = kMinusInfinity;
        for (int j = 0; j <= t; ++j) {
          double score = 0;
          for (std::size_t c = c0; c < c1; ++c) score += pb.q(i, c) * pb.k(first + j, kv0 + c - c0);
          p[j] = score * scale;
          max = std::max(max, p[j]);
        }
        double sum = 0;
        for (int j = 0; j <= t; ++j) sum += std::exp(p[j] - max);
        s.lse(i, h) = max + std::log(sum);
        double row_sum = 0;  // Σ_j P_j dP_j
        for (int j = 0; j <= t; ++j) {
          p[j] = std::exp(p[j] - s.lse(i, h));
          dp[j] = 0;
          for (std::size_t c = c0; c < c1; ++c) {
            s.out(i, c) += p[j] * pb.v(first + j, kv0 + c - c0);
            s.dv(first + j, kv0 + c - c0) += p[j] * pb.dout(i, c);
            dp[j] += pb.dout(i, c) * pb.v(first + j, kv0 + c - c0);
          }
          row_sum += p[j] * dp[j];
        }
        for (int j = 0; j <= t; ++j) {
          const double ds = p[j] * (dp[j] - row_sum) * scale;
          for (std::size_t c = c0; c < c1; ++c) {
            s.dq(i, c) += ds * pb.k(first + j, kv0 + c - c0);
            s.dk(first + j, kv0 + c - c0) += ds * pb.q(i, c);
          }
        }
      }
    }
  }
  return s;
}

// The rows of `whole` (rows b · length + t) at `positions`, as a rank holding them lays them
// out: row b · S + s is position positions[s] of sequence b.
template <class T>
xt::xtensor<T, 2> rows_at(const Matrix& whole, const std::vector<int>& positions, int batch,
                          int length) {
  const std::size_t cols = whole.shape(1), S = positions.size();
  xt::xtensor<T, 2> local({std::size_t(batch) * S, cols});
  for (int b = 0; b < batch; ++b) {
    for (std::size_t s = 0; s < S; ++s) {
      const std::size_t from = std::size_t(b) * length + positions[s];
      for (std::size_t c = 0; c < cols; ++c) local(b * S + s, c) = static_cast<T>(whole(from, c));
    }
  }
  return local;
}

// This rank's positions, written here (not with cp_positions: a test of 11.3 or 11.4 does not
// depend on 11.1): contiguous slices, or the zig-zag's chunks r and 2p - 1 - r.
std::vector<int> positions_of(int length, int p, int r, bool zigzag) {
  std::vector<int> positions;
  const int chunks = zigzag ? 2 * p : p, chunk = length / chunks;
  for (int c : {r, 2 * p - 1 - r}) {
    for (int i = 0; i < chunk; ++i) positions.push_back(c * chunk + i);
    if (!zigzag) break;
  }
  return positions;
}

// The 4 ranks cut into context-parallel groups of `size` consecutive ranks.
dtk::Communicator group_of(int size) {
  dtk::Communicator world;
  return world.Split(world.Get_rank() / size, world.Get_rank());
}

struct Layout {
  dtk::Communicator comm;
  bool zigzag;
  std::vector<int> positions;
  std::string text;  // "2 ranks, zig-zag, rank 1 (positions {2, 3, 4, 5})"
};

Layout layout_of(dtk::Communicator comm, int length, bool zigzag) {
  const int p = comm.Get_size(), r = comm.Get_rank();
  std::vector<int> positions = positions_of(length, p, r, zigzag);
  std::string text = std::to_string(p) + " rank(s), " + (zigzag ? "zig-zag" : "contiguous") +
                     ", rank " + std::to_string(r) + " (positions ";
  text += positions.size() <= 16
              ? list_text(positions)
              : std::to_string(positions.size()) + " of " + std::to_string(length);
  return {comm, zigzag, positions, text + ")"};
}

// Runs `call` and checks that it sent at least the keys and values of p - 1 blocks through the
// layout's communicator: the blocks must travel through it.
template <class Call>
void check_sent_blocks(Checks& check, const std::string& what, Layout& layout,
                       std::size_t block_bytes, Call call) {
  const auto before = layout.comm.total_bytes_transferred();
  call();
  const long long sent = layout.comm.total_bytes_transferred() - before;
  const long long at_least = 2LL * (layout.comm.Get_size() - 1) * block_bytes;
  check.that(sent >= at_least, what + ": sent " + std::to_string(sent) +
                                   " bytes through cp_comm, fewer than the keys and values of p - "
                                   "1 blocks (" +
                                   std::to_string(at_least) + ")");
}

// What ring_attention_forward's known mistakes give this rank (computed with the provided kernel,
// in double): out and lse. Not for the 1 MB problem (its mistakes take long to compute).
struct ForwardMistakes {
  dtk::testing::KnownMistakes<Matrix> out, lse;
};
ForwardMistakes forward_mistakes(const Problem& pb, const Layout& layout) {
  const int p = layout.comm.Get_size(), r = layout.comm.Get_rank();
  const std::size_t S = layout.positions.size();
  const auto block = [&](const Matrix& m, const std::vector<int>& positions) {
    return rows_at<double>(m, positions, pb.batch, pb.length);
  };
  // Every rank's block side by side (each sequence's rows: rank 0's, then rank 1's, ...).
  std::vector<int> every_position, local_indices;
  for (int j = 0; j < p; ++j) {
    const std::vector<int> positions = positions_of(pb.length, p, j, layout.zigzag);
    every_position.insert(every_position.end(), positions.begin(), positions.end());
    for (std::size_t s = 0; s < S; ++s) local_indices.push_back(static_cast<int>(s));
  }
  const Matrix q = block(pb.q, layout.positions), keys = block(pb.k, every_position),
               values = block(pb.v, every_position);
  ForwardMistakes mistakes;
  const auto wrong = [&](const std::string& mistake, const dtk::AttentionOutput<double>& value) {
    mistakes.out.push_back({mistake, value.out});
    mistakes.lse.push_back({mistake, value.lse});
  };
  wrong(
      "the causal mask by local index in each block (a block attended at this rank's "
      "positions, or at 0 .. S - 1, not at its own: future keys leak in, past ones are hidden)",
      dtk::attention_block_forward(
          q, keys, values, std::vector<int>(local_indices.begin(), local_indices.begin() + S),
          local_indices, pb.batch, pb.heads));
  wrong("no causal mask (every key seen)",
        dtk::attention_block_forward(q, keys, values, std::vector<int>(S, pb.length),
                                     every_position, pb.batch, pb.heads));
  const Matrix k = block(pb.k, layout.positions), v = block(pb.v, layout.positions);
  dtk::AttentionOutput<double> averaged =
      dtk::attention_block_forward(q, k, v, layout.positions, layout.positions, pb.batch, pb.heads);
  wrong("this rank's own block only (nothing received round the ring)", averaged);
  // Merged two at a time with equal weights, in the ring's order (blocks r - 1, r - 2, ...).
  const std::size_t d = static_cast<std::size_t>(pb.d);
  for (int step = 1; step < p; ++step) {
    const std::vector<int> positions =
        positions_of(pb.length, p, (r - step + p) % p, layout.zigzag);
    const dtk::AttentionOutput<double> partial =
        dtk::attention_block_forward(q, block(pb.k, positions), block(pb.v, positions),
                                     layout.positions, positions, pb.batch, pb.heads);
    for (std::size_t i = 0; i < partial.lse.shape(0); ++i) {
      for (std::size_t h = 0; h < std::size_t(pb.heads); ++h) {
        if (std::isinf(partial.lse(i, h))) continue;  // an empty block adds nothing
        for (std::size_t c = h * d; c < (h + 1) * d; ++c)
          averaged.out(i, c) = (averaged.out(i, c) + partial.out(i, c)) / 2;
      }
    }
  }
  mistakes.out.push_back(
      {"the blocks merged with equal weights (a merge_attention weighted by "
       "count, not by e^lse)",
       averaged.out});
  return mistakes;
}

template <class T>
void check_forward(Checks& check, const Problem& pb, const Serial& whole, Layout& layout,
                   bool name_mistakes) {
  const auto local = [&](const Matrix& m) {
    return rows_at<T>(m, layout.positions, pb.batch, pb.length);
  };
  const xt::xtensor<T, 2> q = local(pb.q), k = local(pb.k), v = local(pb.v);
  dtk::AttentionOutput<T> result;
  const std::string what = "ring_attention_forward on " + layout.text;
  check_sent_blocks(check, what, layout, k.size() * sizeof(T), [&] {
    result =
        dtk::ring_attention_forward(q, k, v, layout.positions, pb.batch, pb.heads, layout.comm);
  });
  const ForwardMistakes mistakes = name_mistakes ? forward_mistakes(pb, layout) : ForwardMistakes{};
  check_matrix(check, what + ": out",
               rows_at<double>(whole.out, layout.positions, pb.batch, pb.length), result.out, {},
               mistakes.out);
  check_matrix(check, what + ": lse",
               rows_at<double>(whole.lse, layout.positions, pb.batch, pb.length), result.lse, {},
               mistakes.lse);
}

template <class T>
void check_backward(Checks& check, const Problem& pb, const Serial& whole, Layout& layout,
                    bool name_mistakes) {
  const auto local = [&](const Matrix& m) {
    return rows_at<T>(m, layout.positions, pb.batch, pb.length);
  };
  const xt::xtensor<T, 2> q = local(pb.q), k = local(pb.k), v = local(pb.v), out = local(whole.out),
                          lse = local(whole.lse), dout = local(pb.dout);
  dtk::AttentionGrads<T> grads;
  const std::string what = "ring_attention_backward on " + layout.text;
  check_sent_blocks(check, what, layout, k.size() * sizeof(T), [&] {
    grads = dtk::ring_attention_backward(q, k, v, out, lse, dout, layout.positions, pb.batch,
                                         pb.heads, layout.comm);
  });
  const auto expected = [&](const Matrix& m) {
    return rows_at<double>(m, layout.positions, pb.batch, pb.length);
  };
  // dk and dv of a neighbour's block: the last hop home left out, or made the wrong way.
  dtk::testing::KnownMistakes<Matrix> dk_mistakes, dv_mistakes;
  const int p = layout.comm.Get_size(), r = layout.comm.Get_rank();
  for (const auto& [step, mistake] :
       {std::pair{1, "dk and dv of rank r + 1's block (the last hop home left out)"},
        std::pair{p - 1,
                  "dk and dv of rank r - 1's block (the last hop home sent the wrong way)"}}) {
    if (!name_mistakes || p == 1) break;
    const std::vector<int> theirs = positions_of(pb.length, p, (r + step) % p, layout.zigzag);
    dk_mistakes.push_back({mistake, rows_at<double>(whole.dk, theirs, pb.batch, pb.length)});
    dv_mistakes.push_back({mistake, rows_at<double>(whole.dv, theirs, pb.batch, pb.length)});
  }
  check_matrix(check, what + ": dq", expected(whole.dq), grads.dq);
  check_matrix(check, what + ": dk (of this rank's keys, from every rank's queries)",
               expected(whole.dk), grads.dk, {}, dk_mistakes);
  check_matrix(check, what + ": dv (of this rank's values, from every rank's queries)",
               expected(whole.dv), grads.dv, {}, dv_mistakes);
}

// A problem and what one rank holding it computes, made once per process.
struct Solved {
  Problem problem;
  Serial whole;
};

Solved solve(Problem problem) {
  Serial whole = serial_attention(problem);
  return {std::move(problem), std::move(whole)};
}

// Small problems: 3 sequences, 2 heads of 5 columns; 16 positions, so that 4 ranks zig-zag
// with chunks of 2 positions.
const Solved& small() {
  static const Solved solved = solve(make_problem(3, 2, 5, 16, 2));
  return solved;
}

// Grouped-query attention: 2 sequences, 4 query heads of 3 columns reading 2 key/value heads;
// 16 positions.
const Solved& grouped() {
  static const Solved solved = solve(make_problem(2, 4, 3, 16, 2));
  return solved;
}

// 1 MB of keys (float; 2 MB in double) per block on each of 4 ranks: 4 sequences, 8 positions
// of each per rank, 16 heads of 512 columns.
const Solved& large() {
  static const Solved solved = solve(make_problem(4, 16, 512, 32, 16));
  return solved;
}

// A check of one layout; the last argument: whether to compute what known mistakes give (the
// small problem only).
using CheckOne = void (*)(Checks&, const Problem&, const Serial&, Layout&, bool);

// check_one on a small problem (the known mistakes named on multi-head attention's), on groups
// of 1, 2 and 4 ranks, contiguous and zig-zag.
void on_small_layouts(Checks& check, CheckOne check_one, const Solved& solved = small()) {
  const bool name_mistakes = solved.problem.kv == solved.problem.heads;
  report_first_few(check, [&](Checks& each) {
    for (int size : {1, 2, 4}) {
      for (bool zigzag : {false, true}) {
        Layout layout = layout_of(group_of(size), solved.problem.length, zigzag);
        check_one(each, solved.problem, solved.whole, layout, name_mistakes);
      }
    }
  });
}

// check_one on the large problem, on all 4 ranks, contiguous and zig-zag.
void on_large_layouts(Checks& check, CheckOne check_one) {
  const Solved& solved = large();
  for (bool zigzag : {false, true}) {
    Layout layout = layout_of(dtk::Communicator(), solved.problem.length, zigzag);
    check_one(check, solved.problem, solved.whole, layout, /*name_mistakes=*/false);
  }
}

}  // namespace

// ----------------------------------- 11.1 ----------------------------------------------------

TEST_CASE("Part 11 | cp_positions: contiguous slices, written out", "[part11]") {
  dtk::testing::on_every_rank(kRanks, [](Checks& check) {
    check_positions(check, 12, 3, false, {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}});
    check_positions(check, 8, 4, false, {{0, 1}, {2, 3}, {4, 5}, {6, 7}});
    check_positions(check, 6, 6, false, {{0}, {1}, {2}, {3}, {4}, {5}});
    check_positions(check, 5, 1, false, {{0, 1, 2, 3, 4}});
  });
}

TEST_CASE("Part 11 | cp_positions: zig-zag chunks r and 2 cp_size - 1 - r, increasing, written out",
          "[part11]") {
  dtk::testing::on_every_rank(kRanks, [](Checks& check) {
    check_positions(check, 8, 2, true, {{0, 1, 6, 7}, {2, 3, 4, 5}});
    check_positions(check, 16, 4, true,
                    {{0, 1, 14, 15}, {2, 3, 12, 13}, {4, 5, 10, 11}, {6, 7, 8, 9}});
    check_positions(check, 12, 3, true, {{0, 1, 10, 11}, {2, 3, 8, 9}, {4, 5, 6, 7}});
    check_positions(check, 6, 3, true, {{0, 5}, {1, 4}, {2, 3}});
    check_positions(check, 4, 1, true, {{0, 1, 2, 3}});
  });
}

TEST_CASE("Part 11 | cp_positions: bad arguments throw std::invalid_argument", "[part11]") {
  dtk::testing::on_every_rank(kRanks, [](Checks& check) {
    expect_invalid_argument(check, "cp_positions(10, 4, 0, true) (8 does not divide 10)",
                            [] { dtk::cp_positions(10, 4, 0, true); });
    expect_invalid_argument(check, "cp_positions(6, 4, 0, false) (4 does not divide 6)",
                            [] { dtk::cp_positions(6, 4, 0, false); });
    expect_invalid_argument(check, "cp_positions(12, 3, 3, false) (cp_idx 3 of 3 ranks)",
                            [] { dtk::cp_positions(12, 3, 3, false); });
    expect_invalid_argument(check, "cp_positions(12, 3, -1, true) (cp_idx -1)",
                            [] { dtk::cp_positions(12, 3, -1, true); });
    expect_invalid_argument(check, "cp_positions(12, 0, 0, false) (cp_size 0)",
                            [] { dtk::cp_positions(12, 0, 0, false); });
    expect_invalid_argument(check, "cp_positions(0, 2, 0, false) (seq_len 0)",
                            [] { dtk::cp_positions(0, 2, 0, false); });
  });
}

// ----------------------------------- 11.2 ----------------------------------------------------

TEMPLATE_TEST_CASE(
    "Part 11 | merge_attention: attention over keys A and over keys B merge into attention "
    "over A and B",
    "[part11]", float, double) {
  using T = TestType;
  dtk::testing::on_every_rank(kRanks, [](Checks& check) {
    // 5 queries, 3 heads of 4 columns; 7 keys, cut in two ways.
    const Matrix q = waves(5, 12, 0.5, 2.0), k = waves(7, 12, 1.5, 2.0), v = waves(7, 12, 2.5, 1.0);
    const Partial all = attention_over(q, k, v, 3, {0, 1, 2, 3, 4, 5, 6});
    const std::vector<std::vector<std::size_t>> cuts[] = {
        {{0, 1, 2}, {3, 4, 5, 6}}, {{1, 3, 5}, {0, 2, 4, 6}}, {{6}, {0, 1, 2, 3, 4, 5}}};
    for (const auto& cut : cuts) {
      const Partial a = attention_over(q, k, v, 3, cut[0]), b = attention_over(q, k, v, 3, cut[1]);
      xt::xtensor<T, 2> out = as<T>(a.out), lse = as<T>(a.lse);
      dtk::merge_attention(out, lse, as<T>(b.out), as<T>(b.lse));
      const std::string what = "merge_attention of keys " +
                               list_text({cut[0].begin(), cut[0].end()}) + " and " +
                               list_text({cut[1].begin(), cut[1].end()});
      const MergeMistakes mistakes = merge_mistakes<T>(a, b);
      check_matrix(check, what + ": out", all.out, out, {}, mistakes.out);
      check_matrix(check, what + ": lse", all.lse, lse, {}, mistakes.lse);
    }
  });
}

TEMPLATE_TEST_CASE(
    "Part 11 | merge_attention: lse of 1000 and -1000, and sides 1000 apart, without overflow",
    "[part11]", float, double) {
  using T = TestType;
  dtk::testing::on_every_rank(kRanks, [](Checks& check) {
    // 4 rows, 2 heads of 3 columns.
    const Matrix out = waves(4, 6, 0.0, 1.0), block_out = waves(4, 6, 2.0, 1.0);
    // Per row: both sides near 1000; both near -1000; 1000 apart; 1000 apart the other way.
    const Matrix lse = {{1000.5, 1000}, {-1000, -999.25}, {1000, 3}, {-2, 998}};
    const Matrix block_lse = {{1000, 1001}, {-999.5, -1000}, {0, -997}, {999, 0}};
    Matrix expected_out = out, expected_lse = lse;
    for (std::size_t i = 0; i < 4; ++i) {
      for (std::size_t h = 0; h < 2; ++h) {
        // The larger side's weight is 1, the other's exp(its lse - the larger): here it is
        // between e^-1000 (0 in double) and 1, never above.
        const double a = lse(i, h), b = block_lse(i, h), m = std::max(a, b);
        const double wa = std::exp(a - m), wb = std::exp(b - m);
        for (std::size_t c = 3 * h; c < 3 * h + 3; ++c) {
          expected_out(i, c) = (wa * out(i, c) + wb * block_out(i, c)) / (wa + wb);
        }
        expected_lse(i, h) = m + std::log(wa + wb);
      }
    }
    xt::xtensor<T, 2> merged_out = as<T>(out), merged_lse = as<T>(lse);
    dtk::merge_attention(merged_out, merged_lse, as<T>(block_out), as<T>(block_lse));
    // What went into row i, head h: both sides' lse (and, for out, both sides' values).
    const auto sides = [&](std::size_t i, std::size_t h) {
      return "row " + std::to_string(i) + ", head " + std::to_string(h) + ": lse " +
             std::to_string(lse(i, h)) + " and block_lse " + std::to_string(block_lse(i, h));
    };
    const MergeMistakes mistakes = merge_mistakes<T>({out, lse}, {block_out, block_lse});
    check_matrix(
        check, "merge_attention at lse of about ±1000: out", expected_out, merged_out,
        [&](std::size_t i, std::size_t c) {
          return sides(i, c / 3) + ", out " + std::to_string(out(i, c)) + " and block_out " +
                 std::to_string(block_out(i, c));
        },
        mistakes.out);
    check_matrix(check, "merge_attention at lse of about ±1000: lse", expected_lse, merged_lse,
                 sides, mistakes.lse);
  });
}

TEMPLATE_TEST_CASE(
    "Part 11 | merge_attention: an empty side (lse -infinity) adds nothing; two empty sides "
    "stay empty",
    "[part11]", float, double) {
  using T = TestType;
  dtk::testing::on_every_rank(kRanks, [](Checks& check) {
    // 3 rows, 1 head of 2 columns: out empty, block_out empty, both empty. Empty rows hold 0,
    // as the provided kernel leaves them.
    const Matrix out = {{0, 0}, {0.5, -0.25}, {0, 0}},
                 lse = {{kMinusInfinity}, {1.5}, {kMinusInfinity}};
    const Matrix block_out = {{0.75, 0.125}, {0, 0}, {0, 0}};
    const Matrix block_lse = {{-2}, {kMinusInfinity}, {kMinusInfinity}};
    const Matrix expected_out = {{0.75, 0.125}, {0.5, -0.25}, {0, 0}};
    const Matrix expected_lse = {{-2}, {1.5}, {kMinusInfinity}};
    xt::xtensor<T, 2> merged_out = as<T>(out), merged_lse = as<T>(lse);
    dtk::merge_attention(merged_out, merged_lse, as<T>(block_out), as<T>(block_lse));
    const MergeMistakes mistakes = merge_mistakes<T>({out, lse}, {block_out, block_lse});
    check_matrix(check,
                 "merge_attention with empty sides (rows: out empty, block empty, both): out",
                 expected_out, merged_out, {}, mistakes.out);
    check_matrix(check,
                 "merge_attention with empty sides (rows: out empty, block empty, both): lse",
                 expected_lse, merged_lse, {}, mistakes.lse);
  });
}

TEST_CASE("Part 11 | merge_attention: mismatched shapes throw std::invalid_argument", "[part11]") {
  dtk::testing::on_every_rank(kRanks, [](Checks& check) {
    xt::xtensor<double, 2> out = xt::zeros<double>({3, 4}), lse = xt::zeros<double>({3, 2});
    expect_invalid_argument(
        check, "merge_attention(out (3, 4), lse (3, 2), block_out (2, 4), block_lse (3, 2))", [&] {
          dtk::merge_attention(out, lse, xt::xtensor<double, 2>(xt::zeros<double>({2, 4})), lse);
        });
    expect_invalid_argument(
        check, "merge_attention(out (3, 4), lse (3, 2), block_out (3, 4), block_lse (3, 1))", [&] {
          dtk::merge_attention(out, lse, out, xt::xtensor<double, 2>(xt::zeros<double>({3, 1})));
        });
    xt::xtensor<double, 2> three_heads = xt::zeros<double>({3, 3});
    expect_invalid_argument(
        check, "merge_attention(out (3, 4), lse (3, 3), ...) (3 heads do not divide 4 columns)",
        [&] { dtk::merge_attention(out, three_heads, out, three_heads); });
  });
}

// ----------------------------------- 11.3 ----------------------------------------------------

TEMPLATE_TEST_CASE(
    "Part 11 | ring_attention_forward: one rank's causal attention on groups of 1, 2 and 4 "
    "ranks, contiguous and zig-zag",
    "[part11]", float, double) {
  dtk::testing::on_every_rank(
      kRanks, [](Checks& check) { on_small_layouts(check, check_forward<TestType>); });
}

TEMPLATE_TEST_CASE(
    "Part 11 | ring_attention_forward: blocks of keys of 1 MB on 4 ranks (a ring that sends "
    "before it receives deadlocks here)",
    "[part11]", float, double) {
  dtk::testing::on_every_rank(
      kRanks, [](Checks& check) { on_large_layouts(check, check_forward<TestType>); });
}

TEMPLATE_TEST_CASE(
    "Part 11 | ring_attention_forward: grouped-query attention, k and v of 2 heads for 4 query "
    "heads, on groups of 1, 2 and 4 ranks",
    "[part11]", float, double) {
  dtk::testing::on_every_rank(
      kRanks, [](Checks& check) { on_small_layouts(check, check_forward<TestType>, grouped()); });
}

TEST_CASE("Part 11 | ring_attention_forward: bad shapes throw std::invalid_argument", "[part11]") {
  dtk::testing::on_every_rank(kRanks, [](Checks& check) {
    // Every rank passes the same bad shapes, so all of them throw before sending anything.
    dtk::Communicator world;
    const xt::xtensor<double, 2> q = xt::zeros<double>({6, 4}), short_k = xt::zeros<double>({4, 4});
    expect_invalid_argument(check, "ring_attention_forward(q (6, 4), k (4, 4), ...)", [&] {
      dtk::ring_attention_forward(q, short_k, q, {0, 1, 2}, 2, 2, world);
    });
    expect_invalid_argument(check, "ring_attention_forward(q (6, 4), ..., 2 positions, batch 2)",
                            [&] {
                              dtk::ring_attention_forward(q, q, q, {0, 1}, 2, 2, world);
                            });
    expect_invalid_argument(check, "ring_attention_forward(q (6, 4), ..., heads 3)", [&] {
      dtk::ring_attention_forward(q, q, q, {0, 1, 2}, 2, 3, world);
    });
    // 2 heads of 2 columns: k of 6 columns would be 3 key/value heads, which do not divide 2.
    const xt::xtensor<double, 2> wide_k = xt::zeros<double>({6, 6}),
                                 narrow_v = xt::zeros<double>({6, 2});
    expect_invalid_argument(
        check, "ring_attention_forward(q (6, 4), k (6, 6), v (6, 6), heads 2)", [&] {
          dtk::ring_attention_forward(q, wide_k, wide_k, {0, 1, 2}, 2, 2, world);
        });
    expect_invalid_argument(check, "ring_attention_forward(q (6, 4), k (6, 4), v (6, 2), heads 2)",
                            [&] {
                              dtk::ring_attention_forward(q, q, narrow_v, {0, 1, 2}, 2, 2, world);
                            });
  });
}

// ----------------------------------- 11.4 ----------------------------------------------------

TEMPLATE_TEST_CASE(
    "Part 11 | ring_attention_backward: one rank's dq, dk and dv on groups of 1, 2 and 4 "
    "ranks, contiguous and zig-zag",
    "[part11]", float, double) {
  dtk::testing::on_every_rank(
      kRanks, [](Checks& check) { on_small_layouts(check, check_backward<TestType>); });
}

TEMPLATE_TEST_CASE(
    "Part 11 | ring_attention_backward: blocks of keys of 1 MB on 4 ranks (a ring that sends "
    "before it receives deadlocks here)",
    "[part11]", float, double) {
  dtk::testing::on_every_rank(
      kRanks, [](Checks& check) { on_large_layouts(check, check_backward<TestType>); });
}

TEMPLATE_TEST_CASE(
    "Part 11 | ring_attention_backward: grouped-query attention, dk and dv of 2 key/value heads "
    "summed over their 4 query heads, on groups of 1, 2 and 4 ranks",
    "[part11]", float, double) {
  dtk::testing::on_every_rank(
      kRanks, [](Checks& check) { on_small_layouts(check, check_backward<TestType>, grouped()); });
}

TEST_CASE("Part 11 | ring_attention_backward: bad shapes throw std::invalid_argument", "[part11]") {
  dtk::testing::on_every_rank(kRanks, [](Checks& check) {
    dtk::Communicator world;
    const xt::xtensor<double, 2> q = xt::zeros<double>({6, 4}), lse = xt::zeros<double>({6, 2});
    const xt::xtensor<double, 2> wrong_lse = xt::zeros<double>({6, 4}),
                                 short_dout = xt::zeros<double>({3, 4});
    expect_invalid_argument(
        check, "ring_attention_backward(..., lse (6, 4) for 2 heads, ...)", [&] {
          dtk::ring_attention_backward(q, q, q, q, wrong_lse, q, {0, 1, 2}, 2, 2, world);
        });
    expect_invalid_argument(check, "ring_attention_backward(..., dout (3, 4), ...)", [&] {
      dtk::ring_attention_backward(q, q, q, q, lse, short_dout, {0, 1, 2}, 2, 2, world);
    });
  });
}
