// Part 11 (assignment 3): context parallelism, ring attention. cp_positions for every rank of a
// layout, and the arguments it must refuse; merge_attention on random partial results, at lse
// of ±1000 and with empty sides; ring attention forward and backward on the test's p ranks,
// contiguous and zig-zag, with blocks of keys of 1 MB and grouped-query attention's narrower keys
// and values (kv of the heads) among the cases. Each rank draws its own
// rows of q, k, v and dout from its own key (and, for the backward, its out and lse: random out,
// lse from its own keys, since the forward's would need the others'); the whole sequences exist
// only in the reference's run, to record what the known mistakes would give (the causal mask by
// local index, a merge with equal weights, dk and dv left one rank short of home, ...). The
// checks lay out positions themselves and compute with the provided attention kernels: a check
// never calls the student's other functions.
#include <dtk/gpt/attention_kernels.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <utility>

#include <xtensor/xview.hpp>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

template <class T>
using Matrix = xt::xtensor<T, 2>;

// "1 head", "4 heads".
std::string count_of(std::size_t n, const std::string& thing) {
  return std::to_string(n) + " " + thing + (n == 1 ? "" : "s");
}

// A known mistake: what a recorded value would be after it.
template <class T>
struct Wrong {
  std::string mistake;
  Matrix<T> value;
};

// Chunks `first` and `second`, in that order, of a sequence of `length` cut into 2p chunks:
// the zig-zag's r and 2p - 1 - r, or a known mistake's.
std::vector<int> chunks_of(int length, int p, int first, int second) {
  const int chunk = length / (2 * p);
  std::vector<int> positions;
  for (int c : {first, second}) {
    for (int i = 0; i < chunk; ++i) positions.push_back(c * chunk + i);
  }
  return positions;
}

// The positions rank r of p holds of a sequence of `length`: slice r of p, or the zig-zag's
// chunks r and 2p - 1 - r of 2p.
std::vector<int> layout_positions(int length, int p, int r, bool zigzag) {
  if (zigzag) return chunks_of(length, p, r, 2 * p - 1 - r);
  std::vector<int> positions(length / p);
  std::iota(positions.begin(), positions.end(), r * (length / p));
  return positions;
}

// ----------------------------------- 11.1 -------------------------------------------------------

void check_cp_positions(CheckContext& context) {
  const TestCase& test = context.test;
  const int seq = static_cast<int>(test.value("seq", 0)),
            cp = static_cast<int>(test.value("cp", 0));
  const bool zigzag = test.has_word("zigzag"), one_index = test.values.count("idx") > 0;
  const int idx = static_cast<int>(test.value("idx", 0));
  const int chunks = zigzag ? 2 * cp : cp;
  const bool valid = seq > 0 && cp >= 1 && idx >= 0 && idx < cp && seq % chunks == 0;
  const std::string call = "cp_positions(" + std::to_string(seq) + ", " + std::to_string(cp) +
                           ", " + std::to_string(idx) + ", " + (zigzag ? "true" : "false") + ")";
  if (!valid) {
    context.out.note(call + ": arguments it must refuse");
    record_refusal(context, call, [&] { cp_positions(seq, cp, idx, zigzag); });
    return;
  }
  context.out.note(count_of(seq, "position") + " over " + count_of(cp, "rank") + ", " +
                   (zigzag ? "zig-zag" : "contiguous") +
                   (one_index ? ", rank " + std::to_string(idx) : ", every rank"));
  for (int r = one_index ? idx : 0; r < (one_index ? idx + 1 : cp); ++r) {
    const std::string name = "rank " + std::to_string(r) + "'s positions";
    record_tensor(context.out, name,
                  int_tensor(context.call([&] { return cp_positions(seq, cp, r, zigzag); })));
    context.judge([&](Judgement& judgement) {
      auto wrong = [&](const std::string& mistake, const std::vector<int>& positions) {
        judgement.mistake(name, mistake, int_tensor(positions));
      };
      if (zigzag) {
        wrong("the two chunks swapped (chunk 2 cp_size - 1 - r before chunk r)",
              chunks_of(seq, cp, 2 * cp - 1 - r, r));
        wrong("the ranks mirrored (rank r holding chunks cp_size - 1 - r and cp_size + r)",
              chunks_of(seq, cp, cp - 1 - r, cp + r));
        wrong("contiguous slices (the zig-zag ignored)", layout_positions(seq, cp, r, false));
      } else {
        wrong("zig-zag chunks where contiguous slices were asked",
              layout_positions(seq, cp, r, seq % (2 * cp) == 0));
      }
    });
  }
}

// ----------------------------------- 11.2 -------------------------------------------------------

// How a known mistake merges one row and head of two sides whose lse are a and b: the two sides'
// weights and the new lse.
template <class T>
struct Weights {
  T a, b, lse;
};

// (out, lse) merged with (block_out, block_lse) row by row and head by head as `merge(a, b)`
// weighs them; a row it gives no weights (std::nullopt) stays as it is.
template <class T, class Merge>
std::pair<Matrix<T>, Matrix<T>> merged_by(const Matrix<T>& out, const Matrix<T>& lse,
                                          const Matrix<T>& block_out, const Matrix<T>& block_lse,
                                          Merge merge) {
  Matrix<T> merged_out = out, merged_lse = lse;
  const std::size_t heads = lse.shape(1), d = out.shape(1) / heads;
  for (std::size_t i = 0; i < out.shape(0); ++i) {
    for (std::size_t h = 0; h < heads; ++h) {
      const std::optional<Weights<T>> w = merge(lse(i, h), block_lse(i, h));
      if (!w) continue;
      for (std::size_t c = h * d; c < (h + 1) * d; ++c) {
        merged_out(i, c) = (w->a * out(i, c) + w->b * block_out(i, c)) / (w->a + w->b);
      }
      merged_lse(i, h) = w->lse;
    }
  }
  return {merged_out, merged_lse};
}

// The two sides' lse, row by row, as the case asks: drawn from [-4, 4]; "far": both near 1000,
// both near -1000, or 1000 apart either way; "empty": one side, the other or both -infinity
// (whose out is 0, as the provided kernel leaves it), or neither.
template <class T>
void fill_lse(Rng& rng, const TestCase& test, Matrix<T>& lse, Matrix<T>& block_lse, Matrix<T>& out,
              Matrix<T>& block_out) {
  const T empty = -std::numeric_limits<T>::infinity();
  const std::size_t heads = lse.shape(1), d = out.shape(1) / heads;
  const double far_pairs[][2] = {{1000, 1000}, {-1000, -1000}, {1000, 0}, {0, 1000}, {-1000, 0}};
  for (std::size_t i = 0; i < lse.shape(0); ++i) {
    for (std::size_t h = 0; h < heads; ++h) {
      T a = static_cast<T>(rng.uniform(-4, 4)), b = static_cast<T>(rng.uniform(-4, 4));
      if (test.has_word("far")) {
        const auto& pair = far_pairs[(i * heads + h) % 5];
        a += static_cast<T>(pair[0]);
        b += static_cast<T>(pair[1]);
      } else if (test.has_word("empty")) {
        const std::size_t kind = (i * heads + h) % 4;  // 0: out empty, 1: block, 2: both, 3: none
        auto clear = [&](Matrix<T>& side, T& side_lse) {
          side_lse = empty;
          for (std::size_t c = h * d; c < (h + 1) * d; ++c) side(i, c) = 0;
        };
        if (kind == 0 || kind == 2) clear(out, a);
        if (kind == 1 || kind == 2) clear(block_out, b);
      }
      lse(i, h) = a;
      block_lse(i, h) = b;
    }
  }
}

template <class T>
void record_merge_mistakes(Judgement& judgement, const Matrix<T>& out, const Matrix<T>& lse,
                           const Matrix<T>& block_out, const Matrix<T>& block_lse);

template <class T>
void merge_case(CheckContext& context) {
  const TestCase& test = context.test;
  const auto rows = static_cast<std::size_t>(test.value("rows", 1)),
             heads = static_cast<std::size_t>(test.value("heads", 1)),
             d = static_cast<std::size_t>(test.value("d", 1));
  Rng rng = context.rng("partial results");
  Matrix<T> out = random_matrix<T>(rng, rows, heads * d),
            block_out = random_matrix<T>(rng, rows, heads * d);
  Matrix<T> lse({rows, heads}), block_lse({rows, heads});
  const std::string shapes = count_of(rows, "row") + ", " + count_of(heads, "head") + " of " +
                             count_of(d, "column") + ", " + test.type;
  if (test.has_word("mismatched")) {
    context.out.note(shapes + ": shapes that do not match");
    Matrix<T> longer = xt::zeros<T>({rows + 1, heads * d}), wider = xt::zeros<T>({rows, heads + 1});
    record_refusal(context, "block_out with one row more than out",
                   [&] { merge_attention<T>(out, lse, longer, block_lse); });
    record_refusal(context, "block_lse with one column more than lse",
                   [&] { merge_attention<T>(out, lse, block_out, wider); });
    return;
  }
  fill_lse(rng, test, lse, block_lse, out, block_out);
  context.out.note(shapes + "; out, block_out drawn from the seed; lse " +
                   (test.has_word("far")     ? "near ±1000, the sides up to 1000 apart"
                    : test.has_word("empty") ? "drawn from [-4, 4] or -infinity (an empty side)"
                                             : "drawn from [-4, 4]"));
  Matrix<T> merged_out = out, merged_lse = lse;
  context.call([&] { merge_attention<T>(merged_out, merged_lse, block_out, block_lse); });
  record_tensor(context.out, "out", merged_out);
  record_tensor(context.out, "lse", merged_lse);
  context.judge([&](Judgement& judgement) {
    record_merge_mistakes(judgement, out, lse, block_out, block_lse);
  });
}

// What the known mistakes of a merge give.
template <class T>
void record_merge_mistakes(Judgement& judgement, const Matrix<T>& out, const Matrix<T>& lse,
                           const Matrix<T>& block_out, const Matrix<T>& block_lse) {
  const T minus_infinity = -std::numeric_limits<T>::infinity();
  auto record_wrong = [&](const std::string& mistake, const std::pair<Matrix<T>, Matrix<T>>& wrong,
                          bool with_lse) {
    judgement.mistake("out", mistake, wrong.first);
    if (with_lse) judgement.mistake("lse", mistake, wrong.second);
  };
  using Merged = std::optional<Weights<T>>;
  record_wrong(
      "the merge without the max shift (e^lse overflows to infinity past lse ≈ 88 in "
      "float, 709 in double, or underflows to 0)",
      merged_by(out, lse, block_out, block_lse,
                [](T a, T b) -> Merged {
                  return Weights<T>{std::exp(a), std::exp(b), std::log(std::exp(a) + std::exp(b))};
                }),
      true);
  record_wrong("the two sides weighted equally, (out + block_out) / 2 (by count, not by e^lse)",
               merged_by(out, lse, block_out, block_lse,
                         [&](T, T b) -> Merged {
                           if (b == minus_infinity) return std::nullopt;  // an empty block
                           return Weights<T>{1, 1, 0};
                         }),
               false);
  record_wrong("two empty sides merged with the shift (-infinity - (-infinity) is NaN)",
               merged_by(out, lse, block_out, block_lse,
                         [&](T a, T b) -> Merged {
                           const T m = std::max(a, b);
                           if (m != minus_infinity) {
                             const T wa = std::exp(a - m), wb = std::exp(b - m);
                             return Weights<T>{wa, wb, m + std::log(wa + wb)};
                           }
                           const T nan = std::numeric_limits<T>::quiet_NaN();
                           return Weights<T>{nan, nan, nan};
                         }),
               true);
}

// ----------------------------------- 11.3 and 11.4 ----------------------------------------------

// Matrices up to this size are recorded whole; larger ones (the 1 MB cases) as a strided sample.
constexpr std::size_t kRecordedWhole = 4096;

// One ring-attention case: its layout (every rank's positions) and shapes. Rows b · S + s of a
// rank's matrices hold position positions[s] of sequence b.
struct RingCase {
  int p, r, batch, heads, kv_heads, d, length;
  bool zigzag;
  std::vector<std::vector<int>> positions;  // every rank's
  std::size_t rows, width;                  // of one rank's matrices (q's; k's and v's kv_width)
  std::size_t kv_width;
  std::size_t row_step = 1, col_step = 1;  // of the recorded sample

  bool large() const { return row_step > 1 || col_step > 1; }
  const std::vector<int>& mine() const { return positions[r]; }
};

RingCase ring_case(CheckContext& context) {
  const TestCase& test = context.test;
  RingCase c;
  c.p = context.world.Get_size();
  c.r = context.rank();
  c.batch = static_cast<int>(test.value("batch", 1));
  c.heads = static_cast<int>(test.value("heads", 1));
  c.kv_heads = static_cast<int>(test.value("kv", c.heads));  // grouped-query attention's
  c.d = static_cast<int>(test.value("d", 1));
  const int s = static_cast<int>(test.value("s", 1));
  c.length = c.p * s;
  c.zigzag = test.has_word("zigzag");
  for (int q = 0; q < c.p; ++q) c.positions.push_back(layout_positions(c.length, c.p, q, c.zigzag));
  c.rows = std::size_t(c.batch) * s;
  c.width = std::size_t(c.heads) * c.d;
  c.kv_width = std::size_t(c.kv_heads) * c.d;
  if (c.rows * c.width > kRecordedWhole) {
    c.row_step = (c.rows + 7) / 8;
    c.col_step = (c.width + 63) / 64;
  }
  context.out.note(
      count_of(c.p, "rank") + ", " + test.type + ", " + count_of(c.batch, "sequence") + " of " +
      count_of(c.length, "position") + ", " + count_of(c.heads, "head") + " of " +
      count_of(c.d, "column") +
      (c.kv_heads != c.heads
           ? " reading " + count_of(c.kv_heads, "key/value head") + " (grouped-query: k and v (" +
                 std::to_string(c.rows) + ", " + std::to_string(c.kv_width) + "))"
           : "") +
      "; " +
      (c.zigzag ? "zig-zag: rank r holds chunks r and 2p - 1 - r of " + std::to_string(2 * c.p) +
                      " chunks of " + count_of(s / 2, "position")
                : "contiguous: rank r holds positions [" + std::to_string(s) + " r, " +
                      std::to_string(s) + " (r + 1))") +
      "; q, k, v and dout drawn from the seed" +
      (c.large()
           ? "; keys of " + std::to_string(c.rows * c.width * (test.type == "float" ? 4 : 8)) +
                 " bytes per rank"
           : ""));
  return c;
}

// One rank's inputs: the rows of q, k, v and dout at its positions, and for the backward the
// out and lse it is given. The forward's out and lse would need every rank's keys, which a
// rank must not hold: out is drawn, and lse is the log-sum-exp of the scores over the rank's
// own visible keys, plus log p (the order of the whole row's). The backward of the kernels is
// exact for any out and lse, so the ring's result is still one number.
template <class T>
struct RankInputs {
  Matrix<T> q, k, v, dout, out, lse;
};

template <class T>
RankInputs<T> inputs_of(const RingCase& c, Rng rng, const std::vector<int>& positions) {
  RankInputs<T> in;
  in.q = random_matrix<T>(rng, c.rows, c.width) * T(2);
  in.k = random_matrix<T>(rng, c.rows, c.kv_width) * T(2);
  in.v = random_matrix<T>(rng, c.rows, c.kv_width);
  in.dout = random_matrix<T>(rng, c.rows, c.width);
  in.out = random_matrix<T>(rng, c.rows, c.width);
  in.lse = attention_block_forward(in.q, in.k, in.v, positions, positions, c.batch, c.heads).lse +
           static_cast<T>(std::log(static_cast<double>(c.p)));
  return in;
}

template <class T>
RankInputs<T> own_inputs(const CheckContext& context, const RingCase& c) {
  return inputs_of<T>(c, context.rng("q, k, v, dout, out"), c.mine());
}

// Every rank's inputs, in the reference's run.
template <class T>
std::vector<RankInputs<T>> every_input(const Judgement& judgement, const RingCase& c) {
  std::vector<RankInputs<T>> all;
  for (int q = 0; q < c.p; ++q)
    all.push_back(inputs_of<T>(c, judgement.rng_of(q, "q, k, v, dout, out"), c.positions[q]));
  return all;
}

// Every rank's positions one after another: for each sequence the blocks as one kernel call
// sees all of them, rank 0's rows, then rank 1's, ...
std::vector<int> all_positions(const RingCase& c) {
  std::vector<int> order;
  for (const auto& positions : c.positions)
    order.insert(order.end(), positions.begin(), positions.end());
  return order;
}

// Every rank's block of one matrix (`which` of each rank's inputs), in all_positions' order.
template <class T>
Matrix<T> all_blocks(const RingCase& c, const std::vector<RankInputs<T>>& all,
                     Matrix<T> RankInputs<T>::*which) {
  const std::size_t S = c.mine().size();
  Matrix<T> joined({std::size_t(c.batch) * c.p * S, (all[0].*which).shape(1)});
  for (int b = 0; b < c.batch; ++b) {
    for (int j = 0; j < c.p; ++j) {
      xt::view(joined,
               xt::range((std::size_t(b) * c.p + j) * S, (std::size_t(b) * c.p + j + 1) * S)) =
          xt::view(all[j].*which, xt::range(b * S, (b + 1) * S));
    }
  }
  return joined;
}

// 0, 1, ..., S - 1 for every block: the positions of the mistake that masks by local index.
std::vector<int> local_indices(const RingCase& c, int blocks) {
  std::vector<int> indices;
  for (int j = 0; j < blocks; ++j) {
    for (std::size_t s = 0; s < c.mine().size(); ++s) indices.push_back(static_cast<int>(s));
  }
  return indices;
}

// Block j's rows of a matrix laid out as all_blocks lays them out.
template <class T>
Matrix<T> block_rows(const RingCase& c, const Matrix<T>& all, int j) {
  const std::size_t S = c.mine().size();
  Matrix<T> block({std::size_t(c.batch) * S, all.shape(1)});
  for (int b = 0; b < c.batch; ++b) {
    xt::view(block, xt::range(b * S, (b + 1) * S)) = xt::view(
        all, xt::range((std::size_t(b) * c.p + j) * S, (std::size_t(b) * c.p + j + 1) * S));
  }
  return block;
}

// A matrix whole, or the case's strided sample of it (the 1 MB cases), and its name.
template <class T>
Matrix<T> sample(const RingCase& c, const Matrix<T>& m) {
  return Matrix<T>(
      xt::view(m, xt::range(0, m.shape(0), c.row_step), xt::range(0, m.shape(1), c.col_step)));
}

std::string sample_name(const RingCase& c, std::string name) {
  if (c.large()) {
    name += ", rows 0, " + std::to_string(c.row_step) + ", ... and columns 0, " +
            std::to_string(c.col_step) + ", ... (a sample)";
  }
  return name;
}

template <class T>
void record_result(CheckContext& context, const RingCase& c, const std::string& name,
                   const Matrix<T>& value) {
  record_tensor(context.out, sample_name(c, name), sample(c, value));
}

template <class T>
void record_mistakes(Judgement& judgement, const RingCase& c, const std::string& name,
                     const std::vector<Wrong<T>>& mistakes) {
  for (const Wrong<T>& wrong : mistakes)
    judgement.mistake(sample_name(c, name), wrong.mistake, sample(c, wrong.value));
}

const char* const kLocalMask =
    "the causal mask by local index in each block (a block attended at positions 0 .. S - 1 or at "
    "this rank's positions, not at its own: future tokens leak, past ones are hidden)";
const char* const kOwnBlockOnly = "this rank's own block only (nothing sent round the ring)";

template <class T>
void record_forward_mistakes(Judgement& judgement, const RingCase& c) {
  const std::vector<RankInputs<T>> all = every_input<T>(judgement, c);
  const RankInputs<T>& in = all[c.r];
  const std::vector<int>& mine = c.mine();
  std::vector<Wrong<T>> out_mistakes, lse_mistakes;
  auto wrong = [&](const std::string& mistake, const AttentionOutput<T>& value) {
    out_mistakes.push_back({mistake, value.out});
    lse_mistakes.push_back({mistake, value.lse});
  };
  const Matrix<T> keys = all_blocks(c, all, &RankInputs<T>::k),
                  values = all_blocks(c, all, &RankInputs<T>::v);
  wrong(kLocalMask, attention_block_forward(in.q, keys, values, local_indices(c, 1),
                                            local_indices(c, c.p), c.batch, c.heads));
  wrong("no causal mask (every key seen)",
        attention_block_forward(in.q, keys, values, std::vector<int>(mine.size(), c.length),
                                all_positions(c), c.batch, c.heads));
  wrong(kOwnBlockOnly, attention_block_forward(in.q, in.k, in.v, mine, mine, c.batch, c.heads));
  // Merged two at a time with equal weights, in the ring's order (blocks r, r - 1, ...).
  AttentionOutput<T> averaged =
      attention_block_forward(in.q, in.k, in.v, mine, mine, c.batch, c.heads);
  for (int step = 1; step < c.p; ++step) {
    const int j = (c.r - step + c.p) % c.p;
    const AttentionOutput<T> partial =
        attention_block_forward(in.q, all[j].k, all[j].v, mine, c.positions[j], c.batch, c.heads);
    averaged.out = (averaged.out + partial.out) / T(2);
  }
  out_mistakes.push_back(
      {"the blocks merged with equal weights (a merge_attention weighted by count, not by "
       "e^lse)",
       averaged.out});
  record_mistakes(judgement, c, "out", out_mistakes);
  record_mistakes(judgement, c, "lse", lse_mistakes);
}

template <class T>
void forward_case(CheckContext& context) {
  const RingCase c = ring_case(context);
  const RankInputs<T> in = own_inputs<T>(context, c);
  const AttentionOutput<T> result = context.call([&] {
    return ring_attention_forward<T>(in.q, in.k, in.v, c.mine(), c.batch, c.heads, context.world);
  });
  record_result(context, c, "out", result.out);
  record_result(context, c, "lse", result.lse);
  if (!c.large())
    context.judge([&](Judgement& judgement) { record_forward_mistakes<T>(judgement, c); });
}

// What every rank's queries give the keys of every block, through the provided backward with
// each rank's out and lse and the given positions (all_positions and each rank's own for the
// right answer): dq of this rank's queries, and the dk and dv of every block, summed over all
// queries, in all_blocks' layout.
template <class T>
AttentionGrads<T> every_share(const RingCase& c, const std::vector<RankInputs<T>>& all,
                              const std::vector<std::vector<int>>& q_positions,
                              const std::vector<int>& k_positions) {
  const Matrix<T> keys = all_blocks(c, all, &RankInputs<T>::k),
                  values = all_blocks(c, all, &RankInputs<T>::v);
  AttentionGrads<T> total{{}, xt::zeros<T>(keys.shape()), xt::zeros<T>(keys.shape())};
  for (int owner = 0; owner < c.p; ++owner) {
    const RankInputs<T>& in = all[owner];
    const AttentionGrads<T> share =
        attention_block_backward(in.q, keys, values, in.out, in.lse, in.dout, q_positions[owner],
                                 k_positions, c.batch, c.heads);
    if (owner == c.r) total.dq = share.dq;
    total.dk += share.dk;
    total.dv += share.dv;
  }
  return total;
}

template <class T>
void record_backward_mistakes(Judgement& judgement, const RingCase& c) {
  const std::vector<RankInputs<T>> all = every_input<T>(judgement, c);
  const RankInputs<T>& in = all[c.r];
  std::vector<Wrong<T>> dq_mistakes, dk_mistakes, dv_mistakes;
  auto wrong = [&](const std::string& mistake, const AttentionGrads<T>& value) {
    dq_mistakes.push_back({mistake, value.dq});
    dk_mistakes.push_back({mistake, value.dk});
    dv_mistakes.push_back({mistake, value.dv});
  };
  const AttentionGrads<T> right = every_share(c, all, c.positions, all_positions(c));
  auto owned_by = [&](int j) {
    return AttentionGrads<T>{right.dq, block_rows(c, right.dk, j), block_rows(c, right.dv, j)};
  };
  if (c.p > 1) {
    wrong("dk and dv of rank r + 1's block (their last hop home left out)",
          owned_by((c.r + 1) % c.p));
  }
  if (c.p > 2) {
    wrong("dk and dv of rank r - 1's block (left one hop short, around the other way)",
          owned_by((c.r + c.p - 1) % c.p));
  }
  const std::vector<std::vector<int>> local_queries(c.p, local_indices(c, 1));
  const AttentionGrads<T> local = every_share(c, all, local_queries, local_indices(c, c.p));
  wrong(kLocalMask, {local.dq, block_rows(c, local.dk, c.r), block_rows(c, local.dv, c.r)});
  wrong(kOwnBlockOnly, attention_block_backward(in.q, in.k, in.v, in.out, in.lse, in.dout, c.mine(),
                                                c.mine(), c.batch, c.heads));
  record_mistakes(judgement, c, "dq", dq_mistakes);
  record_mistakes(judgement, c, "dk", dk_mistakes);
  record_mistakes(judgement, c, "dv", dv_mistakes);
}

template <class T>
void backward_case(CheckContext& context) {
  const RingCase c = ring_case(context);
  const RankInputs<T> in = own_inputs<T>(context, c);
  const AttentionGrads<T> grads = context.call([&] {
    return ring_attention_backward<T>(in.q, in.k, in.v, in.out, in.lse, in.dout, c.mine(), c.batch,
                                      c.heads, context.world);
  });
  record_result(context, c, "dq", grads.dq);
  record_result(context, c, "dk", grads.dk);
  record_result(context, c, "dv", grads.dv);
  if (!c.large())
    context.judge([&](Judgement& judgement) { record_backward_mistakes<T>(judgement, c); });
}

void check_merge_attention(CheckContext& context) {
  run_typed(context, merge_case<float>, merge_case<double>);
}
void check_ring_attention_forward(CheckContext& context) {
  run_typed(context, forward_case<float>, forward_case<double>);
}
void check_ring_attention_backward(CheckContext& context) {
  run_typed(context, backward_case<float>, backward_case<double>);
}

}  // namespace

DTK_GRADE_CHECK(check_cp_positions, {"cp_positions",
                                     CaseKind::fields,
                                     /*collective=*/false,
                                     /*typed=*/false,
                                     {},
                                     /*reduces=*/false,
                                     /*timed_against=*/"",
                                     /*case_words=*/{"seq", "cp", "idx", "zigzag"}});
DTK_GRADE_CHECK(check_merge_attention,
                {"merge_attention",
                 CaseKind::fields,
                 /*collective=*/false,
                 /*typed=*/true,
                 {},
                 /*reduces=*/false,
                 /*timed_against=*/"",
                 /*case_words=*/{"rows", "heads", "d", "far", "empty", "mismatched"}});
DTK_GRADE_CHECK(check_ring_attention_forward,
                {"ring_attention_forward",
                 CaseKind::fields,
                 /*collective=*/true,
                 /*typed=*/true,
                 {},
                 /*reduces=*/false,
                 /*timed_against=*/"",
                 /*case_words=*/{"batch", "heads", "kv", "d", "s", "zigzag"}});
DTK_GRADE_CHECK(check_ring_attention_backward,
                {"ring_attention_backward",
                 CaseKind::fields,
                 /*collective=*/true,
                 /*typed=*/true,
                 {},
                 /*reduces=*/false,
                 /*timed_against=*/"",
                 /*case_words=*/{"batch", "heads", "kv", "d", "s", "zigzag"}});

}  // namespace dtk::grade
