// Part 10 public tests: attention_heads, qkv_columns, gqa_qkv_columns,
// vocab_parallel_embedding(_grad), vocab_parallel_cross_entropy, sp_all_gather and
// sp_reduce_scatter, on 4 ranks.
//   mpirun -n 4 ./build/tests/test_tensor_parallel
// 10.1 against written-out tables and the rules of the fused [Q | K | V] weight (grouped-query
// attention's too). 10.2 to 10.4
// run on tensor-parallel groups of 1, 2, 3 and 4 ranks cut from the 4 ranks, with values that say
// where they come from (element (v, c) of the embedding table is 100 v + c; element c of position
// s of sequence b is 1000 b + 10 s + c), expected values computed here without any distributed
// step (the cross-entropy in long double), the bytes each call sends counted with the
// Communicator's estimates (communicator.hpp), and 1 MB activations in the last cases.
#include "dtk_test.hpp"

#include <dtk/tensor_parallel.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

namespace {

constexpr int kRanks = 4;

using dtk::testing::expect_invalid_argument;
using dtk::testing::report_first_few;
using Tokens = xt::xtensor<std::int32_t, 1>;

std::string list_text(const std::vector<int>& values) {
  std::string text = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(values[i]);
  }
  return text + "}";
}

// The 4 ranks cut into tensor-parallel groups of `size` consecutive ranks; with size 3, rank 3
// forms a group of 1. Every rank computes in some group, so every rank calls every function.
dtk::Communicator group_of(int size) {
  dtk::Communicator world;
  return world.Split(world.Get_rank() / size, world.Get_rank());
}

// "on 3 rank(s), rank 2": where a finding was made.
std::string where(const dtk::Communicator& comm) {
  return "on " + std::to_string(comm.Get_size()) + " rank(s), rank " +
         std::to_string(comm.Get_rank());
}

// Tolerances of a float or double result against values computed here in long double.
template <class T>
double rtol() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-10;
}
template <class T>
double atol() {
  return std::is_same_v<T, float> ? 1e-6 : 1e-12;
}

// begin, begin + 1, ..., end - 1.
std::vector<int> range_of(int begin, int end) {
  std::vector<int> v(end - begin);
  std::iota(v.begin(), v.end(), begin);
  return v;
}

// The bytes `comm` sent during call().
template <class Call>
long long bytes_sent(dtk::Communicator& comm, Call call) {
  const auto before = comm.total_bytes_transferred();
  call();
  return static_cast<long long>(comm.total_bytes_transferred() - before);
}

// ----------------------------------- 10.1 ---------------------------------------------------

// Every rank's attention_heads(num_heads, tp_size, rank) against the table `expected`.
void check_heads(dtk::testing::Checks& check, int num_heads, int tp_size,
                 const std::vector<std::vector<int>>& expected) {
  for (int r = 0; r < tp_size; ++r) {
    const dtk::HeadRange heads = dtk::attention_heads(num_heads, tp_size, r);
    check.that(std::vector<int>{heads.begin, heads.end} == expected[r],
               "attention_heads(" + std::to_string(num_heads) + ", " + std::to_string(tp_size) +
                   ", " + std::to_string(r) + "): expected " + list_text(expected[r]) + ", got " +
                   list_text({heads.begin, heads.end}));
  }
}

std::string qkv_call(int hidden, int heads, int tp, int r) {
  return "qkv_columns(" + std::to_string(hidden) + ", " + std::to_string(heads) + ", " +
         std::to_string(tp) + ", " + std::to_string(r) + ")";
}

// What qkv_columns' known mistakes give rank r.
dtk::testing::KnownMistakes<std::vector<int>> qkv_mistakes(int hidden, int heads, int tp, int r) {
  const int width = 3 * hidden / tp, d = hidden / heads, per_rank = heads / tp;
  std::vector<int> block = range_of(r * width, (r + 1) * width), head_by_head;
  for (int head = r * per_rank; head < (r + 1) * per_rank; ++head) {
    for (int q_k_v = 0; q_k_v < 3; ++q_k_v) {
      for (int c = head * d; c < (head + 1) * d; ++c) head_by_head.push_back(q_k_v * hidden + c);
    }
  }
  return {{"a contiguous block of the fused [Q | K | V] columns (columns [r · 3h/tp, (r + 1) · "
           "3h/tp))",
           block},
          {"each head's Q, K and V columns together (head by head), not all its Q columns, then "
           "all its K columns, then all its V columns",
           head_by_head}};
}

// The rules of the fused weight, for every rank: 3 h / tp columns; its Q columns, then its K
// columns, then its V columns, each increasing; the Q, K and V columns of the same heads, those
// attention_heads gives it (written out here from the header's formula); every column of the
// fused weight owned by exactly one rank.
void check_qkv_rules(dtk::testing::Checks& check, int hidden, int heads, int tp) {
  const int d = hidden / heads, per_rank = heads / tp;
  std::vector<int> owners(3 * hidden, 0);
  for (int r = 0; r < tp; ++r) {
    const std::vector<int> columns = dtk::qkv_columns(hidden, heads, tp, r);
    std::vector<int> expected;
    for (int block = 0; block < 3; ++block) {
      for (int c = r * per_rank * d; c < (r + 1) * per_rank * d; ++c) {
        expected.push_back(block * hidden + c);
      }
    }
    check.that(columns == expected,
               qkv_call(hidden, heads, tp, r) + " (head size " + std::to_string(d) + ", heads " +
                   list_text({r * per_rank, (r + 1) * per_rank}) + "): expected " +
                   list_text(expected) + ", got " + list_text(columns) + "." +
                   dtk::testing::known_mistake(qkv_mistakes(hidden, heads, tp, r), columns));
    for (int c : columns) {
      if (0 <= c && c < 3 * hidden) ++owners[c];
    }
  }
  for (int c = 0; c < 3 * hidden; ++c) {
    check.that(owners[c] == 1, "qkv_columns(" + std::to_string(hidden) + ", " +
                                   std::to_string(heads) + ", " + std::to_string(tp) +
                                   ", r): column " + std::to_string(c) + " is owned by " +
                                   std::to_string(owners[c]) + " ranks, expected exactly one");
  }
}

// ----------------------------------- 10.2 ---------------------------------------------------

constexpr int kLocalVocab = 5;  // token ids per rank: V = 5 tp, not a power of two
constexpr std::size_t kWidth = 3;

// The whole (vocab, width) table: element (v, c) is 100 v + c.
template <class T>
xt::xtensor<T, 2> numbered_table(int vocab, std::size_t width) {
  xt::xtensor<T, 2> table = xt::xtensor<T, 2>::from_shape({std::size_t(vocab), width});
  for (int v = 0; v < vocab; ++v) {
    for (std::size_t c = 0; c < width; ++c) table(v, c) = static_cast<T>(100 * v + c);
  }
  return table;
}

// Rows [begin, begin + count) of m.
template <class T>
xt::xtensor<T, 2> rows_of(const xt::xtensor<T, 2>& m, std::size_t begin, std::size_t count) {
  return xt::view(m, xt::range(begin, begin + count), xt::all());
}

// n tokens spread over the whole vocabulary, with repeats: (7 i + 3) mod vocab.
Tokens spread_tokens(std::size_t n, int vocab) {
  Tokens tokens = Tokens::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) tokens(i) = static_cast<std::int32_t>((7 * i + 3) % vocab);
  return tokens;
}

// n tokens all in rank 0's slice [0, kLocalVocab): the other ranks hold none of them.
Tokens first_slice_tokens(std::size_t n) {
  Tokens tokens = Tokens::from_shape({n});
  for (std::size_t i = 0; i < n; ++i)
    tokens(i) = static_cast<std::int32_t>((3 * i + 1) % kLocalVocab);
  return tokens;
}

// vocab_parallel_embedding on groups of 1 to 4 ranks: the whole lookup, and one Allreduce's
// bytes. tokens_for(vocab) gives the tokens.
template <class T, class TokensFor>
void check_embedding(dtk::testing::Checks& check, const std::string& tokens_text,
                     TokensFor tokens_for, std::size_t width) {
  report_first_few(check, [&](dtk::testing::Checks& each) {
    for (int size = 1; size <= kRanks; ++size) {
      dtk::Communicator tp_comm = group_of(size);
      const int p = tp_comm.Get_size(), r = tp_comm.Get_rank(), vocab = p * kLocalVocab;
      const xt::xtensor<T, 2> table = numbered_table<T>(vocab, width);
      const Tokens tokens = tokens_for(vocab);
      xt::xtensor<T, 2> out;
      const long long sent = bytes_sent(tp_comm, [&] {
        out = dtk::vocab_parallel_embedding<T>(tokens, rows_of(table, r * kLocalVocab, kLocalVocab),
                                               r * kLocalVocab, tp_comm);
      });
      // Row i: the sum over ranks q of row(q, token) (nothing where it is -1).
      const auto lookup = [&](auto row) {
        xt::xtensor<T, 2> out = xt::zeros<T>({tokens.size(), width});
        for (std::size_t i = 0; i < tokens.size(); ++i) {
          for (int q = 0; q < p; ++q) {
            if (row(q, tokens(i)) >= 0) xt::row(out, i) += xt::row(table, row(q, tokens(i)));
          }
        }
        return out;
      };
      const auto owner = [](int token) { return token / kLocalVocab; };
      const std::string what = "vocab_parallel_embedding " + where(tp_comm) + ", vocabulary " +
                               std::to_string(vocab) + " (rows [" +
                               std::to_string(r * kLocalVocab) + ", " +
                               std::to_string((r + 1) * kLocalVocab) + ") here), " + tokens_text;
      each.close(
          what + ": row i is table row tokens[i] (element (v, c) is 100 v + c)",
          lookup([&](int q, int token) { return q == owner(token) ? token : -1; }), out, 1e-6, 1e-9,
          {{"no mask: a token of another rank's rows read as this rank's local row 0 and not "
            "zeroed, so every token is counted on every rank",
            lookup([&](int q, int token) { return q == owner(token) ? token : q * kLocalVocab; })},
           {"this rank's lookup alone (no Allreduce)",
            lookup([&](int q, int token) { return q == r && q == owner(token) ? token : -1; })}});
      each.equal(what +
                     ": bytes sent (one Allreduce of the tokens × h lookup sends 2 (p - 1) / p "
                     "of its bytes)",
                 static_cast<long long>(2 * (p - 1) * tokens.size() * width * sizeof(T) / p), sent);
    }
  });
}

// ----------------------------------- 10.3 ---------------------------------------------------

// The tests' (n, vocab) logits: logit (i, v) = 3 sin(1.3 i + 0.7 v + 0.1), smooth and every row
// different, moved by ±shift (+ on odd rows), which exp cannot take without the row's maximum
// subtracted.
template <class T>
xt::xtensor<T, 2> test_logits(std::size_t n, int vocab, double shift) {
  xt::xtensor<T, 2> logits = xt::xtensor<T, 2>::from_shape({n, std::size_t(vocab)});
  for (std::size_t i = 0; i < n; ++i) {
    for (int v = 0; v < vocab; ++v) {
      logits(i, v) =
          static_cast<T>((i % 2 ? shift : -shift) + 3 * std::sin(1.3 * i + 0.7 * v + 0.1));
    }
  }
  return logits;
}

template <class T>
struct Expected {
  xt::xtensor<T, 1> loss;  // (n)
  xt::xtensor<T, 2> grad;  // (n, count): columns [begin, begin + count) of the gradient
  // What known mistakes give: the target's logit taken on every rank (at local column target
  // mod count); the loss as (log s + max) − target in T, s the sum of exponentials.
  xt::xtensor<T, 1> loss_target_everywhere, loss_in_wrong_order;
  xt::xtensor<T, 2> grad_target_everywhere;
};

// The serial cross-entropy of the whole logits, in long double, of a vocabulary split in slices
// of `count` columns, this rank's from `begin`.
template <class T>
Expected<T> serial_cross_entropy(const xt::xtensor<T, 2>& logits, const Tokens& targets,
                                 std::size_t begin, std::size_t count) {
  using Real = long double;
  const std::size_t n = logits.shape(0), vocab = logits.shape(1);
  Expected<T> e{xt::xtensor<T, 1>::from_shape({n}), xt::xtensor<T, 2>::from_shape({n, count}),
                xt::xtensor<T, 1>::from_shape({n}), xt::xtensor<T, 1>::from_shape({n}),
                xt::xtensor<T, 2>::from_shape({n, count})};
  for (std::size_t i = 0; i < n; ++i) {
    Real max = logits(i, 0), sum = 0, every_slice_target = 0;
    for (std::size_t v = 1; v < vocab; ++v) max = std::max<Real>(max, logits(i, v));
    for (std::size_t v = 0; v < vocab; ++v) sum += std::exp(logits(i, v) - max);
    const std::size_t target = targets(i), local_target = target % count;
    for (std::size_t slice = 0; slice < vocab; slice += count)
      every_slice_target += logits(i, slice + local_target);
    e.loss(i) = static_cast<T>(std::log(sum) + (max - logits(i, target)));
    e.loss_target_everywhere(i) = static_cast<T>(std::log(sum) + (max - every_slice_target));
    // In T, log s + max keeps only the digits a number of max's size has (max is a logit: a T).
    const T log_sum_plus_max = static_cast<T>(std::log(sum)) + static_cast<T>(max);
    e.loss_in_wrong_order(i) = log_sum_plus_max - logits(i, target);
    for (std::size_t c = 0; c < count; ++c) {
      const Real softmax = std::exp(logits(i, begin + c) - max) / sum;
      e.grad(i, c) = static_cast<T>((softmax - (begin + c == target ? 1 : 0)) / n);
      e.grad_target_everywhere(i, c) = static_cast<T>((softmax - (c == local_target ? 1 : 0)) / n);
    }
  }
  return e;
}

// The most the three reductions of N values may send: what Allgathers of 4 N values would
// (any way of reducing N values per row fits; gathering the N × V/tp logits does not).
template <class T>
long long reduction_budget(int p, std::size_t n) {
  return static_cast<long long>((p - 1) * 4 * n * sizeof(T));
}

// How exact the loss must be at logits of ±shift: to the digits a number of that size keeps, which
// (log Σ + max) − target is right to (the cases that check the max's subtraction), or to T's
// rounding of the loss itself, which only log Σ + (max − target) is (the case that checks the
// order of the terms).
enum class Loss { to_the_logits_digits, to_rounding };

// vocab_parallel_cross_entropy on groups of 1 to 4 ranks: the loss, this rank's columns of the
// gradient, and the bytes. Row i's target is targets_for(n, vocab)(i).
template <class T, class TargetsFor>
void check_cross_entropy(dtk::testing::Checks& check, const std::string& case_text, std::size_t n,
                         int local_vocab, double shift, TargetsFor targets_for,
                         Loss exact = Loss::to_the_logits_digits) {
  report_first_few(check, [&](dtk::testing::Checks& each) {
    for (int size = 1; size <= kRanks; ++size) {
      dtk::Communicator tp_comm = group_of(size);
      const int p = tp_comm.Get_size(), r = tp_comm.Get_rank(), vocab = p * local_vocab;
      const int vocab_begin = r * local_vocab;
      const Tokens targets = targets_for(n, vocab);
      const xt::xtensor<T, 2> logits = test_logits<T>(n, vocab, shift);
      const xt::xtensor<T, 2> local =
          xt::view(logits, xt::all(), xt::range(vocab_begin, vocab_begin + local_vocab));
      const Expected<T> expected = serial_cross_entropy(logits, targets, vocab_begin, local_vocab);
      dtk::VocabParallelLoss<T> result;
      const long long sent = bytes_sent(tp_comm, [&] {
        result = dtk::vocab_parallel_cross_entropy<T>(local, targets, vocab_begin, tp_comm);
      });
      const std::string what = "vocab_parallel_cross_entropy " + where(tp_comm) + ", " +
                               std::to_string(n) + " rows, vocabulary " + std::to_string(vocab) +
                               " (columns [" + std::to_string(vocab_begin) + ", " +
                               std::to_string(vocab_begin + local_vocab) + ") here), " + case_text;
      // A number of 10⁴ holds about 4 eps 10⁴ (10⁻³ in float): a loss computed as
      // (log Σ + max) − target is right to that much, log Σ + (max − target) to rounding.
      const double loss_atol =
          exact == Loss::to_rounding
              ? atol<T>()
              : std::max(atol<T>(), 4 * shift * std::numeric_limits<T>::epsilon());
      const std::string everywhere =
          "the target's logit taken on every rank (local column target mod V/tp), not only on "
          "the rank whose columns hold the target";
      dtk::testing::KnownMistakes<xt::xtensor<T, 1>> loss_mistakes = {
          {everywhere, expected.loss_target_everywhere}};
      if (exact == Loss::to_rounding) {
        loss_mistakes.push_back(
            {"the loss summed as (log s + max) − target (in float, log s + max, a number near "
             "10⁴, keeps 3 decimals)",
             expected.loss_in_wrong_order});
      }
      each.close(what + ": loss", expected.loss, result.loss, rtol<T>(), loss_atol, loss_mistakes);
      each.close(what + ": logits_grad, this rank's columns of (softmax - one-hot) / N",
                 expected.grad, result.logits_grad, rtol<T>(), atol<T>(),
                 {{everywhere, expected.grad_target_everywhere}});
      const long long budget = reduction_budget<T>(p, n);
      const long long gathered = static_cast<long long>((p - 1) * n * local_vocab * sizeof(T));
      each.that(
          sent <= budget && (p == 1 || sent > 0),
          what + ": sent " + std::to_string(sent) +
              " bytes; reductions of N values (max, sum of exponentials, target logit) "
              "send between 1 and " +
              std::to_string(budget) + ", gathering the logits " + std::to_string(gathered) + "." +
              dtk::testing::known_mistake<long long>(
                  {{"the logits gathered (an Allgather of the N × V/tp logits)", gathered}}, sent));
    }
  });
}

Tokens spread_targets(std::size_t n, int vocab) { return spread_tokens(n, vocab); }

// ----------------------------------- 10.4 ---------------------------------------------------

// Element c of position s of sequence b: 1000 b + 10 s + c (for h = 3 and S < 100).
double position_value(int b, int s, std::size_t c) { return 1000.0 * b + 10.0 * s + c; }

// (batch · positions.size(), width): row b · positions.size() + k holds position positions[k]
// of sequence b, scaled by `scale`.
template <class T>
xt::xtensor<T, 2> sequences(int batch, const std::vector<int>& positions, std::size_t width,
                            double scale = 1) {
  const std::size_t per_sequence = positions.size();
  xt::xtensor<T, 2> m = xt::xtensor<T, 2>::from_shape({batch * per_sequence, width});
  for (int b = 0; b < batch; ++b) {
    for (std::size_t k = 0; k < per_sequence; ++k) {
      for (std::size_t c = 0; c < width; ++c) {
        m(b * per_sequence + k, c) = static_cast<T>(scale * position_value(b, positions[k], c));
      }
    }
  }
  return m;
}

// sp_all_gather and sp_reduce_scatter on groups of 1 to 4 ranks, `batch` sequences of
// s_local · p positions, `width` features.
template <class T>
void check_sequence_parallel(dtk::testing::Checks& check, int batch, int s_local,
                             std::size_t width) {
  report_first_few(check, [&](dtk::testing::Checks& each) {
    for (int size = 1; size <= kRanks; ++size) {
      dtk::Communicator tp_comm = group_of(size);
      const int p = tp_comm.Get_size(), r = tp_comm.Get_rank(), seq_len = p * s_local;
      const std::vector<int> mine = range_of(r * s_local, (r + 1) * s_local);
      const std::vector<int> all = range_of(0, seq_len);
      const std::string what = where(tp_comm) + ", " + std::to_string(batch) + " sequence(s) of " +
                               std::to_string(seq_len) + " positions, " + std::to_string(s_local) +
                               " per rank, h = " + std::to_string(width);
      const long long one_block = static_cast<long long>(batch * s_local * width * sizeof(T));

      xt::xtensor<T, 2> gathered;
      const long long gather_bytes = bytes_sent(tp_comm, [&] {
        gathered = dtk::sp_all_gather<T>(sequences<T>(batch, mine, width), batch, tp_comm);
      });
      // The Allgather's blocks as they land: rank 0's positions of every sequence, then rank 1's.
      xt::xtensor<T, 2> landed = xt::xtensor<T, 2>::from_shape({batch * all.size(), width});
      for (int q = 0; q < p; ++q) {
        xt::view(landed, xt::range(q * batch * s_local, (q + 1) * batch * s_local), xt::all()) =
            sequences<T>(batch, range_of(q * s_local, (q + 1) * s_local), width);
      }
      each.close("sp_all_gather " + what +
                     ": row b S + s holds position s of sequence b (1000 b + 10 s + c)",
                 sequences<T>(batch, all, width), gathered, 1e-6, 1e-9,
                 {{"the Allgather's blocks as they land, not reordered (rank 0's positions of "
                   "every sequence, then rank 1's, ...: the batch not interleaved)",
                   landed}});
      each.equal("sp_all_gather " + what + ": bytes sent (one Allgather: (p - 1) blocks)",
                 (p - 1) * one_block, gather_bytes);

      // Rank q's partial sums are (q + 1) × (1000 b + 10 s + c): their sum is p (p + 1) / 2 ×.
      xt::xtensor<T, 2> reduced;
      const long long scatter_bytes = bytes_sent(tp_comm, [&] {
        reduced = dtk::sp_reduce_scatter<T>(sequences<T>(batch, all, width, r + 1), batch, tp_comm);
      });
      const xt::xtensor<T, 2> sum = sequences<T>(batch, all, width, p * (p + 1) / 2.0);
      each.close("sp_reduce_scatter " + what +
                     ": this rank's positions, summed (rank q's partial is (q + 1)(1000 b + 10 s "
                     "+ c))",
                 sequences<T>(batch, mine, width, p * (p + 1) / 2.0), reduced, 1e-6, 1e-9,
                 {{"the Reduce_scatter without the reordering (rank r keeping rows [r · B · S/tp, "
                   "(r + 1) · B · S/tp) of the sum in b · S + s order)",
                   rows_of(sum, r * batch * s_local, batch * s_local)},
                  {"this rank's own partial sums, not summed over tp_comm",
                   sequences<T>(batch, mine, width, r + 1)}});
      each.equal("sp_reduce_scatter " + what + ": bytes sent (one Reduce_scatter: (p - 1) blocks)",
                 (p - 1) * one_block, scatter_bytes);
    }
  });
}

}  // namespace

// ----------------------------------- 10.1 ---------------------------------------------------

TEST_CASE("Part 10 | attention_heads: 12 heads on 1, 2, 3, 4 and 6 ranks (the header's example)",
          "[part10]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_heads(check, 12, 1, {{0, 12}});
    check_heads(check, 12, 2, {{0, 6}, {6, 12}});
    check_heads(check, 12, 3, {{0, 4}, {4, 8}, {8, 12}});
    check_heads(check, 12, 4, {{0, 3}, {3, 6}, {6, 9}, {9, 12}});
    check_heads(check, 12, 6, {{0, 2}, {2, 4}, {4, 6}, {6, 8}, {8, 10}, {10, 12}});
    check_heads(check, 5, 5, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}});
  });
}

TEST_CASE("Part 10 | attention_heads: bad arguments throw std::invalid_argument", "[part10]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    expect_invalid_argument(check, "attention_heads(12, 5, 0) (5 does not divide 12)",
                            [] { dtk::attention_heads(12, 5, 0); });
    expect_invalid_argument(check, "attention_heads(12, 4, 4) (tp_idx 4 of 4 ranks)",
                            [] { dtk::attention_heads(12, 4, 4); });
    expect_invalid_argument(check, "attention_heads(12, 4, -1) (tp_idx -1)",
                            [] { dtk::attention_heads(12, 4, -1); });
    expect_invalid_argument(check, "attention_heads(12, 0, 0) (tp_size 0)",
                            [] { dtk::attention_heads(12, 0, 0); });
    expect_invalid_argument(check, "attention_heads(0, 1, 0) (no heads)",
                            [] { dtk::attention_heads(0, 1, 0); });
  });
}

TEST_CASE(
    "Part 10 | qkv_columns: hidden 8 with 4 heads on 2 ranks (the header's example), hidden 9 "
    "with 3 heads on 3 ranks, one rank",
    "[part10]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    auto expect = [&](int hidden, int heads, int tp, int r, const std::vector<int>& expected) {
      const std::vector<int> columns = dtk::qkv_columns(hidden, heads, tp, r);
      check.that(columns == expected,
                 qkv_call(hidden, heads, tp, r) + ": expected " + list_text(expected) + ", got " +
                     list_text(columns) + "." +
                     dtk::testing::known_mistake(qkv_mistakes(hidden, heads, tp, r), columns));
    };
    // Head size 2: rank 0 has heads 0, 1 (Q columns 0-3, K 8-11, V 16-19), rank 1 heads 2, 3.
    expect(8, 4, 2, 0, {0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19});
    expect(8, 4, 2, 1, {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23});
    // Head size 3, one head per rank.
    expect(9, 3, 3, 0, {0, 1, 2, 9, 10, 11, 18, 19, 20});
    expect(9, 3, 3, 1, {3, 4, 5, 12, 13, 14, 21, 22, 23});
    expect(9, 3, 3, 2, {6, 7, 8, 15, 16, 17, 24, 25, 26});
    expect(4, 2, 1, 0, range_of(0, 12));
  });
}

TEST_CASE(
    "Part 10 | qkv_columns: each rank's Q, K and V columns of its own heads; every column of "
    "the fused weight owned once (head sizes 1 to 7, 1 to 8 ranks)",
    "[part10]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    report_first_few(check, [](dtk::testing::Checks& each) {
      for (int heads : {1, 2, 3, 4, 6, 8, 12}) {
        for (int d = 1; d <= 7; ++d) {
          for (int tp = 1; tp <= 8; ++tp) {
            if (heads % tp == 0) check_qkv_rules(each, heads * d, heads, tp);
          }
        }
      }
    });
  });
}

TEST_CASE(
    "Part 10 | gqa_qkv_columns: 4 heads reading 2 key/value heads on 2 ranks (the header's "
    "example) and on 4 (one head replicated on pairs of ranks); kv = heads is qkv_columns",
    "[part10]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    auto expect = [&](int hidden, int heads, int kv, int tp, int r,
                      const std::vector<int>& expected) {
      const std::vector<int> columns = dtk::gqa_qkv_columns(hidden, heads, kv, tp, r);
      check.that(columns == expected,
                 "gqa_qkv_columns(" + std::to_string(hidden) + ", " + std::to_string(heads) + ", " +
                     std::to_string(kv) + ", " + std::to_string(tp) + ", " + std::to_string(r) +
                     "): expected " + list_text(expected) + ", got " + list_text(columns));
    };
    // Head size 2; K in [8, 12), V in [12, 16). Query heads 0, 1 read key/value head 0; 2, 3
    // read head 1.
    expect(8, 4, 2, 2, 0, {0, 1, 2, 3, 8, 9, 12, 13});
    expect(8, 4, 2, 2, 1, {4, 5, 6, 7, 10, 11, 14, 15});
    expect(8, 4, 2, 4, 0, {0, 1, 8, 9, 12, 13});
    expect(8, 4, 2, 4, 1, {2, 3, 8, 9, 12, 13});
    expect(8, 4, 2, 4, 2, {4, 5, 10, 11, 14, 15});
    expect(8, 4, 2, 4, 3, {6, 7, 10, 11, 14, 15});
    // Multi-query: one key/value head, K in [6, 8), V in [8, 10), on every rank.
    expect(6, 3, 1, 3, 2, {4, 5, 6, 7, 8, 9});
    // As many key/value heads as heads: qkv_columns' answer.
    expect(8, 4, 4, 2, 1, {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23});
    expect_invalid_argument(check, "gqa_qkv_columns(8, 4, 3, 2, 0) (3 key/value heads, 4 heads)",
                            [] { dtk::gqa_qkv_columns(8, 4, 3, 2, 0); });
    expect_invalid_argument(
        check, "gqa_qkv_columns(24, 12, 4, 3, 0) (3 ranks and 4 key/value heads: neither divides)",
        [] { dtk::gqa_qkv_columns(24, 12, 4, 3, 0); });
  });
}

TEST_CASE("Part 10 | qkv_columns: bad arguments throw std::invalid_argument", "[part10]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    expect_invalid_argument(check, "qkv_columns(10, 4, 2, 0) (4 heads do not divide hidden 10)",
                            [] { dtk::qkv_columns(10, 4, 2, 0); });
    expect_invalid_argument(check, "qkv_columns(12, 6, 4, 0) (4 ranks do not divide 6 heads)",
                            [] { dtk::qkv_columns(12, 6, 4, 0); });
    expect_invalid_argument(check, "qkv_columns(12, 6, 2, 2) (tp_idx 2 of 2 ranks)",
                            [] { dtk::qkv_columns(12, 6, 2, 2); });
    expect_invalid_argument(check, "qkv_columns(0, 1, 1, 0) (hidden 0)",
                            [] { dtk::qkv_columns(0, 1, 1, 0); });
  });
}

// ----------------------------------- 10.2 ---------------------------------------------------

TEMPLATE_TEST_CASE(
    "Part 10 | vocab_parallel_embedding: the whole lookup on every rank in one Allreduce, "
    "tokens from every slice with repeats, on groups of 1 to 4 ranks",
    "[part10]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_embedding<TestType>(
        check, "11 tokens (7 i + 3) mod V", [](int vocab) { return spread_tokens(11, vocab); },
        kWidth);
  });
}

TEMPLATE_TEST_CASE(
    "Part 10 | vocab_parallel_embedding: ranks holding none of the tokens still take part, "
    "and add nothing",
    "[part10]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_embedding<TestType>(
        check, "7 tokens all in rank 0's rows", [](int) { return first_slice_tokens(7); }, kWidth);
  });
}

TEMPLATE_TEST_CASE(
    "Part 10 | vocab_parallel_embedding: a 1 MB lookup (2048 tokens, h = 64 in double, 128 in "
    "float)",
    "[part10]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_embedding<TestType>(
        check, "2048 tokens (7 i + 3) mod V", [](int vocab) { return spread_tokens(2048, vocab); },
        64 * sizeof(double) / sizeof(TestType));
  });
}

TEMPLATE_TEST_CASE(
    "Part 10 | vocab_parallel_embedding_grad: each rank's rows, repeated tokens summed, on 1 "
    "to 4 slices",
    "[part10]", float, double) {
  using T = TestType;
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    report_first_few(check, [](dtk::testing::Checks& each) {
      for (int p = 1; p <= kRanks; ++p) {
        const int vocab = p * kLocalVocab;
        const Tokens tokens = spread_tokens(13, vocab);  // repeats once 13 > vocab
        // Row i of the lookup's gradient: element c is 100 i + c.
        const xt::xtensor<T, 2> output_grad = numbered_table<T>(13, kWidth);
        xt::xtensor<T, 2> full = xt::zeros<T>({std::size_t(vocab), kWidth});
        for (std::size_t i = 0; i < tokens.size(); ++i)
          xt::row(full, tokens(i)) += xt::row(output_grad, i);
        for (int r = 0; r < p; ++r) {
          each.close("vocab_parallel_embedding_grad(13 tokens (7 i + 3) mod " +
                         std::to_string(vocab) + ", output_grad row i = 100 i + c, vocab_begin " +
                         std::to_string(r * kLocalVocab) + ", local_vocab " +
                         std::to_string(kLocalVocab) + ")",
                     rows_of(full, r * kLocalVocab, kLocalVocab),
                     dtk::vocab_parallel_embedding_grad<T>(tokens, output_grad, r * kLocalVocab,
                                                           kLocalVocab));
        }
      }
    });
  });
}

TEMPLATE_TEST_CASE(
    "Part 10 | vocab_parallel_embedding(_grad): bad arguments throw "
    "std::invalid_argument",
    "[part10]", float, double) {
  using T = TestType;
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const xt::xtensor<T, 2> table = xt::zeros<T>({5, 3});
    const Tokens negative = {1, -2};
    expect_invalid_argument(check, "vocab_parallel_embedding(tokens {1, -2}, ...)",
                            [&] { dtk::vocab_parallel_embedding<T>(negative, table, 0, world); });
    expect_invalid_argument(check, "vocab_parallel_embedding(..., vocab_begin -5, ...)", [&] {
      dtk::vocab_parallel_embedding<T>({1, 2}, table, -5, world);
    });
    const xt::xtensor<T, 2> three_rows = xt::zeros<T>({3, 3});
    expect_invalid_argument(
        check, "vocab_parallel_embedding_grad(2 tokens, output_grad of 3 rows, ...)", [&] {
          dtk::vocab_parallel_embedding_grad<T>({1, 2}, three_rows, 0, 5);
        });
    expect_invalid_argument(check, "vocab_parallel_embedding_grad(..., local_vocab 0)", [&] {
      dtk::vocab_parallel_embedding_grad<T>({1, 2, 3}, three_rows, 0, 0);
    });
  });
}

// ----------------------------------- 10.3 ---------------------------------------------------

TEMPLATE_TEST_CASE(
    "Part 10 | vocab_parallel_cross_entropy: the loss and the gradient of the mean, from "
    "reductions of N values, on groups of 1 to 4 ranks",
    "[part10]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_cross_entropy<TestType>(check,
                                  "logits 3 sin(1.3 i + 0.7 v + 0.1), targets (7 i + 3) mod V", 9,
                                  7, 0, spread_targets);
  });
}

TEMPLATE_TEST_CASE(
    "Part 10 | vocab_parallel_cross_entropy: logits of ±10⁴ (exp overflows unless the row's "
    "maximum over the whole vocabulary is subtracted first; the loss to the digits a logit of "
    "10⁴ keeps)",
    "[part10]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_cross_entropy<TestType>(
        check, "logits ±10⁴ + 3 sin(1.3 i + 0.7 v + 0.1) (+ on odd rows), targets (7 i + 3) mod V",
        8, 6, 1e4, spread_targets);
  });
}

TEST_CASE(
    "Part 10 | vocab_parallel_cross_entropy: logits of ±10⁴ in float, the loss exact to "
    "float's rounding (log s + (max − target): the order of the terms)",
    "[part10]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_cross_entropy<float>(
        check,
        "logits ±10⁴ + 3 sin(1.3 i + 0.7 v + 0.1) (+ on odd rows), targets (7 i + 3) mod V, the "
        "loss to float's rounding",
        10, 4, 1e4, spread_targets, Loss::to_rounding);
  });
}

TEMPLATE_TEST_CASE(
    "Part 10 | vocab_parallel_cross_entropy: every target in rank 0's columns (the other "
    "ranks contribute no target logit)",
    "[part10]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_cross_entropy<TestType>(check, "logits 3 sin(1.3 i + 0.7 v + 0.1), targets i mod 5", 6, 5,
                                  0, [](std::size_t n, int) {
                                    Tokens targets = Tokens::from_shape({n});
                                    for (std::size_t i = 0; i < n; ++i)
                                      targets(i) = static_cast<std::int32_t>(i % 5);
                                    return targets;
                                  });
  });
}

TEMPLATE_TEST_CASE(
    "Part 10 | vocab_parallel_cross_entropy: a large batch of rows (512 rows of 64 columns "
    "per rank), its bytes those of N values",
    "[part10]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_cross_entropy<TestType>(check,
                                  "logits 3 sin(1.3 i + 0.7 v + 0.1), targets (7 i + 3) mod V", 512,
                                  64, 0, spread_targets);
  });
}

TEMPLATE_TEST_CASE(
    "Part 10 | vocab_parallel_cross_entropy: bad arguments throw "
    "std::invalid_argument",
    "[part10]", float, double) {
  using T = TestType;
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;  // 4 ranks of 3 columns: V = 12
    const xt::xtensor<T, 2> logits = xt::zeros<T>({2, 3});
    const int begin = 3 * world.Get_rank();
    expect_invalid_argument(check, "vocab_parallel_cross_entropy(2 rows, 3 targets, ...)", [&] {
      dtk::vocab_parallel_cross_entropy<T>(logits, {0, 1, 2}, begin, world);
    });
    expect_invalid_argument(check, "vocab_parallel_cross_entropy(..., target 12 of V = 12, ...)",
                            [&] {
                              dtk::vocab_parallel_cross_entropy<T>(logits, {0, 12}, begin, world);
                            });
    expect_invalid_argument(check, "vocab_parallel_cross_entropy(..., target -1, ...)", [&] {
      dtk::vocab_parallel_cross_entropy<T>(logits, {-1, 0}, begin, world);
    });
  });
}

// ----------------------------------- 10.4 ---------------------------------------------------

TEMPLATE_TEST_CASE(
    "Part 10 | sp_all_gather, sp_reduce_scatter: one sequence, 2 positions per rank, on groups "
    "of 1 to 4 ranks",
    "[part10]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_sequence_parallel<TestType>(check, 1, 2, 3);
  });
}

TEMPLATE_TEST_CASE(
    "Part 10 | sp_all_gather, sp_reduce_scatter: a batch of 3 sequences (rows b S + s: the "
    "collective's blocks reordered), on groups of 1 to 4 ranks",
    "[part10]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_sequence_parallel<TestType>(check, 3, 2, 3);
  });
}

TEMPLATE_TEST_CASE(
    "Part 10 | sp_all_gather, sp_reduce_scatter: 1 MB activations (2 sequences of 64 positions "
    "per rank, h = 256 in double, 512 in float)",
    "[part10]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // 1000 b + 10 s + c stays exact in float: s < 256, c < 256 · 8 / sizeof(T).
    check_sequence_parallel<TestType>(check, 2, 64, 256 * sizeof(double) / sizeof(TestType));
  });
}

TEMPLATE_TEST_CASE(
    "Part 10 | sp_all_gather, sp_reduce_scatter: each is the other's backward "
    "(Σ_ranks <sp_all_gather(x), y> = Σ_ranks <x, sp_reduce_scatter(y)>)",
    "[part10]", float, double) {
  using T = TestType;
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int r = world.Get_rank(), batch = 2, s_local = 3;
    const std::size_t width = 2, rows = batch * s_local * kRanks;
    // x: this rank's positions; y: this rank's partial gradient of all positions (any values).
    xt::xtensor<T, 2> x = xt::xtensor<T, 2>::from_shape({rows / kRanks, width});
    xt::xtensor<T, 2> y = xt::xtensor<T, 2>::from_shape({rows, width});
    for (std::size_t i = 0; i < x.size(); ++i)
      x.data()[i] = static_cast<T>(std::sin(1.0 + i + 7 * r));
    for (std::size_t i = 0; i < y.size(); ++i)
      y.data()[i] = static_cast<T>(std::cos(2.0 + i + 5 * r));
    const xt::xtensor<T, 2> gathered = dtk::sp_all_gather<T>(x, batch, world);
    const xt::xtensor<T, 2> scattered = dtk::sp_reduce_scatter<T>(y, batch, world);
    xt::xtensor<double, 1> dots = {
        gathered.shape() == y.shape() ? double(xt::sum(gathered * y)()) : 0.0,
        scattered.shape() == x.shape() ? double(xt::sum(x * scattered)()) : 0.0};
    world.Allreduce(dots, dots);
    check.that(std::abs(dots(0) - dots(1)) <= 1e-4 * (1 + std::abs(dots(0))),
               "Σ_ranks <sp_all_gather(x), y> = " + std::to_string(dots(0)) +
                   " but Σ_ranks <x, sp_reduce_scatter(y)> = " + std::to_string(dots(1)) +
                   " (batch 2, 3 positions per rank): they must be equal");
  });
}

TEMPLATE_TEST_CASE(
    "Part 10 | sp_all_gather, sp_reduce_scatter: bad arguments throw "
    "std::invalid_argument",
    "[part10]", float, double) {
  using T = TestType;
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const xt::xtensor<T, 2> five_rows = xt::zeros<T>({5, 2});
    expect_invalid_argument(check, "sp_all_gather(5 rows, batch 2)",
                            [&] { dtk::sp_all_gather<T>(five_rows, 2, world); });
    expect_invalid_argument(check, "sp_all_gather(5 rows, batch 0)",
                            [&] { dtk::sp_all_gather<T>(five_rows, 0, world); });
    expect_invalid_argument(check, "sp_reduce_scatter(5 rows, batch 2)",
                            [&] { dtk::sp_reduce_scatter<T>(five_rows, 2, world); });
    const xt::xtensor<T, 2> six_rows = xt::zeros<T>({6, 2});
    expect_invalid_argument(
        check, "sp_reduce_scatter(6 rows, batch 2) (sequences of 3 positions on 4 ranks)",
        [&] { dtk::sp_reduce_scatter<T>(six_rows, 2, world); });
  });
}
