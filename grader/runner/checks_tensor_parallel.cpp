// Part 10 (assignment 3): tensor and sequence parallelism. Head ranges and QKV columns of every
// rank of a group, and the arguments they must refuse; the embedding, the cross-entropy and
// sequence parallelism's conversions on the case's p ranks. Each rank draws its own slice (of
// the table, the logits, the sequences, the partial sums) from its own key; what every rank
// holds alike (the tokens, the targets) comes from the shared key. Every value is random: none
// follows a formula the feedback could reveal. Every rank's inputs exist only in the
// reference's run, to record what the known mistakes would give. Shapes come from the case only.
//
// Case texts ("fields"): attention_heads "heads=A tp=T [idx=I]"; qkv_columns "hidden=H heads=A
// tp=T [idx=I]" and gqa_qkv_columns "hidden=H heads=A kv=K tp=T [idx=I]" (idx: that rank alone;
// arguments the contract refuses are cases too, judged by the std::invalid_argument they must
// throw); vocab_parallel_embedding "p=P float|double
// local_vocab=L hidden=H tokens=N [one_slice]" (V = P L; one_slice: every token in rank 0's
// rows); vocab_parallel_embedding_grad "tp=T float|double local_vocab=L hidden=H tokens=N" (one
// process computes every rank's rows); vocab_parallel_cross_entropy "p=P float|double rows=N
// local_vocab=L [large] [one_slice]" (large: rows shifted by ±10⁴; one_slice: every target in
// rank 0's columns); sp_all_gather and sp_reduce_scatter "p=P float|double batch=B seq=S
// hidden=H" (S positions per sequence, P dividing S).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

#include <xtensor/xview.hpp>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

using Tokens = xt::xtensor<std::int32_t, 1>;

// The value of the case's key=value, which this check needs.
int required(const CheckContext& context, const std::string& key) {
  const double value = context.test.value(key, -1);
  if (value < 0) {
    throw std::invalid_argument("the case \"" + context.test.id() + "\" needs " + key + "=N");
  }
  return static_cast<int>(value);
}

std::string list_text(const Tokens& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(values(i));
  }
  return text + "]";
}

// ----------------------------------- 10.1 -------------------------------------------------------

// The arguments of attention_heads and qkv_columns: heads, tp and the rank(s) asked about.
struct HeadCase {
  int heads, tp, first, last;  // ranks [first, last]
  bool valid;
};

HeadCase head_case(const CheckContext& context) {
  HeadCase c{required(context, "heads"), required(context, "tp"), 0, 0, false};
  const bool one_index = context.test.values.count("idx") > 0;
  c.first = one_index ? static_cast<int>(context.test.value("idx", 0)) : 0;
  c.last = one_index ? c.first : c.tp - 1;
  c.valid = c.tp >= 1 && c.heads % c.tp == 0 && c.first >= 0 && c.last < c.tp;
  return c;
}

std::string arguments_text(std::initializer_list<int> values) {
  std::string text;
  for (int v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return text;
}

void check_attention_heads(CheckContext& context) {
  const HeadCase c = head_case(context);
  if (!c.valid) {
    const std::string call = "attention_heads(" + arguments_text({c.heads, c.tp, c.first}) + ")";
    context.out.note(call + ": arguments it must refuse");
    record_refusal(context, call, [&] { attention_heads(c.heads, c.tp, c.first); });
    return;
  }
  context.out.note(std::to_string(c.heads) + " heads on " + std::to_string(c.tp) +
                   " ranks; row r is rank r's heads [begin, end)");
  auto table = [&](auto range_of) {
    xt::xtensor<std::int64_t, 2> rows({std::size_t(c.last - c.first + 1), 2});
    for (int r = c.first; r <= c.last; ++r) {
      const HeadRange range = range_of(r);
      rows(r - c.first, 0) = range.begin;
      rows(r - c.first, 1) = range.end;
    }
    return rows;
  };
  const std::string name = "every rank's heads (begin, end)";
  record_tensor(context.out, name, table([&](int r) {
                  return context.call([&] { return attention_heads(c.heads, c.tp, r); });
                }));
  context.judge([&](Judgement& judgement) {
    const int per_rank = c.heads / c.tp;
    judgement.mistake(name, "the ranks in reverse order (rank 0 holding the last heads)",
                      table([&](int r) {
                        return HeadRange{(c.tp - 1 - r) * per_rank, (c.tp - r) * per_rank};
                      }));
  });
}

// The mistaken order of heads [begin, end)'s columns of the fused weight: head by head, each
// head's Q columns, then its K columns, then its V columns.
std::vector<std::int64_t> head_by_head_columns(int hidden, int d, int begin, int end) {
  std::vector<std::int64_t> columns;
  for (int head = begin; head < end; ++head) {
    for (int block = 0; block < 3; ++block) {
      for (int c = head * d; c < (head + 1) * d; ++c) columns.push_back(block * hidden + c);
    }
  }
  return columns;
}

void check_qkv_columns(CheckContext& context) {
  const HeadCase c = head_case(context);
  const int hidden = required(context, "hidden"), heads = c.heads, tp = c.tp;
  if (!c.valid || hidden % heads != 0) {
    const std::string call = "qkv_columns(" + arguments_text({hidden, heads, tp, c.first}) + ")";
    context.out.note(call + ": arguments it must refuse");
    record_refusal(context, call, [&] { qkv_columns(hidden, heads, tp, c.first); });
    return;
  }
  const int d = hidden / heads, per_rank = heads / tp, width = 3 * hidden / tp;
  context.out.note("hidden " + std::to_string(hidden) + ", " + std::to_string(heads) +
                   " heads of " + std::to_string(d) + " columns, " + std::to_string(tp) +
                   " ranks of " + std::to_string(per_rank) + " head(s); the fused weight's " +
                   std::to_string(3 * hidden) + " columns are Q [0, " + std::to_string(hidden) +
                   "), K [" + std::to_string(hidden) + ", " + std::to_string(2 * hidden) +
                   "), V [" + std::to_string(2 * hidden) + ", " + std::to_string(3 * hidden) + ")");
  for (int r = c.first; r <= c.last; ++r) {
    const std::string name = "rank " + std::to_string(r) + "'s columns";
    record_tensor(context.out, name,
                  int_tensor(context.call([&] { return qkv_columns(hidden, heads, tp, r); })));
    context.judge([&](Judgement& judgement) {
      std::vector<std::int64_t> block(width);
      std::iota(block.begin(), block.end(), std::int64_t(r) * width);
      judgement.mistake(name,
                        "a contiguous block of the fused [Q | K | V] columns (columns [r · 3h/tp, "
                        "(r + 1) · 3h/tp))",
                        int_tensor(block));
      judgement.mistake(
          name,
          "each head's Q, K and V columns together (head by head), not all its Q "
          "columns, then all its K columns, then all its V columns",
          int_tensor(head_by_head_columns(hidden, d, r * per_rank, (r + 1) * per_rank)));
    });
  }
}

// Columns [first, last) of the fused weight from `offset` on, appended to `columns`.
void append_columns(std::vector<std::int64_t>& columns, int offset, int first, int last) {
  for (int c = first; c < last; ++c) columns.push_back(offset + c);
}

// Q columns of query heads [begin, end), then K from k_offset and V from v_offset of key/value
// heads [kv_begin, kv_end): the shape of every answer of gqa_qkv_columns, right or wrong.
std::vector<std::int64_t> grouped_columns(int d, int begin, int end, int k_offset, int v_offset,
                                          int kv_begin, int kv_end) {
  std::vector<std::int64_t> columns;
  append_columns(columns, 0, begin * d, end * d);
  append_columns(columns, k_offset, kv_begin * d, kv_end * d);
  append_columns(columns, v_offset, kv_begin * d, kv_end * d);
  return columns;
}

void check_gqa_qkv_columns(CheckContext& context) {
  const HeadCase c = head_case(context);
  const int hidden = required(context, "hidden"), heads = c.heads, kv = required(context, "kv"),
            tp = c.tp;
  if (!c.valid || hidden % heads != 0 || kv < 1 || heads % kv != 0 ||
      (kv % tp != 0 && tp % kv != 0)) {
    const std::string call =
        "gqa_qkv_columns(" + arguments_text({hidden, heads, kv, tp, c.first}) + ")";
    context.out.note(call + ": arguments it must refuse");
    record_refusal(context, call, [&] { gqa_qkv_columns(hidden, heads, kv, tp, c.first); });
    return;
  }
  const int d = hidden / heads, per_rank = heads / tp, group = heads / kv;
  context.out.note("hidden " + std::to_string(hidden) + ", " + std::to_string(heads) +
                   " query heads of " + std::to_string(d) + " columns reading " +
                   std::to_string(kv) + " key/value head(s) (query head j reads head j / " +
                   std::to_string(group) + "), " + std::to_string(tp) +
                   " ranks; the fused weight's columns are Q [0, " + std::to_string(hidden) +
                   "), K [" + std::to_string(hidden) + ", " + std::to_string(hidden + kv * d) +
                   "), V [" + std::to_string(hidden + kv * d) + ", " +
                   std::to_string(hidden + 2 * kv * d) + ")");
  for (int r = c.first; r <= c.last; ++r) {
    const std::string name = "rank " + std::to_string(r) + "'s columns";
    record_tensor(
        context.out, name,
        int_tensor(context.call([&] { return gqa_qkv_columns(hidden, heads, kv, tp, r); })));
    context.judge([&](Judgement& judgement) {
      const int begin = r * per_rank, end = begin + per_rank;
      const int kv_begin = begin / group, kv_end = (end - 1) / group + 1;
      const int v_offset = hidden + kv * d;
      judgement.mistake(name,
                        "the key/value heads numbered as this rank's query heads ([begin, end) of "
                        "K and V), not the ones they read (head j reads j / (heads / kv))",
                        int_tensor(grouped_columns(d, begin, end, hidden, v_offset, begin, end)));
      judgement.mistake(
          name,
          "V taken from 2 · hidden, multi-head attention's offset (K and V are only "
          "kv · d wide: V starts at hidden + kv · d)",
          int_tensor(grouped_columns(d, begin, end, hidden, 2 * hidden, kv_begin, kv_end)));
      if (kv < tp) {
        judgement.mistake(
            name,
            "key/value head r % kv for rank r (round robin), not the one its query "
            "heads read, r / (tp / kv)",
            int_tensor(grouped_columns(d, begin, end, hidden, v_offset, r % kv, r % kv + 1)));
      }
    });
  }
}

// ----------------------------------- 10.2 -------------------------------------------------------

// Rank q's rows of the (vocab, width) table, drawn from its key.
template <class T>
xt::xtensor<T, 2> table_slice(Rng rng, int local_vocab, std::size_t width) {
  return random_matrix<T>(rng, local_vocab, width);
}

// n tokens from the seed, in [0, slices · local_vocab): one from each slice first (when n allows),
// then any, shuffled, so that every rank holds some tokens and some tokens repeat once n is
// larger than the vocabulary.
Tokens drawn_tokens(Rng rng, std::size_t n, int slices, int local_vocab) {
  Tokens tokens = Tokens::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) {
    const int slice = i < std::size_t(slices) ? int(i) : rng.uniform_int(0, slices - 1);
    tokens(i) = slice * local_vocab + rng.uniform_int(0, local_vocab - 1);
  }
  for (std::size_t i = n; i > 1; --i)
    std::swap(tokens(i - 1), tokens(rng.uniform_int(0, int(i) - 1)));
  return tokens;
}

template <class T>
void embedding_case(CheckContext& context) {
  const int p = context.world.Get_size(), r = context.rank();
  const int local_vocab = required(context, "local_vocab");
  const std::size_t width = required(context, "hidden"), n = required(context, "tokens");
  const bool one_slice = context.test.has_word("one_slice");
  const Tokens tokens =
      drawn_tokens(context.shared_rng("tokens"), n, one_slice ? 1 : p, local_vocab);
  context.out.note(std::to_string(p) + " ranks, " + context.test.type + ", vocabulary " +
                   std::to_string(p * local_vocab) + " (rank r holds rows [" +
                   std::to_string(local_vocab) + " r, " + std::to_string(local_vocab) +
                   " (r + 1))), h = " + std::to_string(width) +
                   "; every rank's rows of the table drawn from the seed; tokens " +
                   list_text(tokens) + (one_slice ? " (all in rank 0's rows)" : ""));
  const xt::xtensor<T, 2> local = table_slice<T>(context.rng("table"), local_vocab, width);
  const xt::xtensor<T, 2> lookup = context.call(
      [&] { return vocab_parallel_embedding<T>(tokens, local, r * local_vocab, context.world); });
  const std::string name = "the lookup (row i: table row tokens[i])";
  record_tensor(context.out, name, lookup);
  if (p == 1) return;
  context.judge([&](Judgement& judgement) {
    std::vector<xt::xtensor<T, 2>> slices;
    for (int q = 0; q < p; ++q)
      slices.push_back(table_slice<T>(judgement.rng_of(q, "table"), local_vocab, width));
    // What the rows would be if every rank q added its local row `row_of(q, token)` (-1: none).
    auto summed = [&](auto row_of) {
      xt::xtensor<T, 2> out = xt::zeros<T>({n, width});
      for (std::size_t i = 0; i < n; ++i) {
        for (int q = 0; q < p; ++q) {
          const int row = row_of(q, tokens(i));
          if (row >= 0) xt::row(out, i) += xt::row(slices[q], row);
        }
      }
      return out;
    };
    auto owner = [&](int token) { return token / local_vocab; };
    judgement.mistake(
        name,
        "no mask: a token of another rank's rows read as this rank's local row 0 "
        "and not zeroed, so every token is counted on every rank",
        summed([&](int q, int token) { return q == owner(token) ? token % local_vocab : 0; }));
    judgement.mistake(name,
                      "no mask: every rank adding its local row (token − vocab_begin) mod V/tp, "
                      "so every token is counted on every rank",
                      summed([&](int, int token) { return token % local_vocab; }));
    judgement.mistake(name, "this rank's lookup alone (no Allreduce)",
                      summed([&](int q, int token) {
                        return q == r && q == owner(token) ? token % local_vocab : -1;
                      }));
  });
}

// One process computes every rank's rows, rank after rank.
template <class T>
void embedding_grad_case(CheckContext& context) {
  const int tp = required(context, "tp"), local_vocab = required(context, "local_vocab");
  const std::size_t width = required(context, "hidden"), n = required(context, "tokens");
  const Tokens tokens = drawn_tokens(context.rng("tokens"), n, tp, local_vocab);
  const xt::xtensor<T, 2> output_grad = random_matrix<T>(context.rng("output_grad"), n, width);
  context.out.note(std::to_string(tp) + " ranks of " + std::to_string(local_vocab) +
                   " token ids (vocabulary " + std::to_string(tp * local_vocab) + "), " +
                   context.test.type + ", h = " + std::to_string(width) + "; tokens " +
                   list_text(tokens) + " (some repeated); output_grad drawn from the seed");
  for (int r = 0; r < tp; ++r) {
    const int begin = r * local_vocab;
    const std::string name = "rank " + std::to_string(r) + "'s rows [" + std::to_string(begin) +
                             ", " + std::to_string(begin + local_vocab) + ")";
    record_tensor(context.out, name, context.call([&] {
      return vocab_parallel_embedding_grad<T>(tokens, output_grad, begin, local_vocab);
    }));
    context.judge([&](Judgement& judgement) {
      xt::xtensor<T, 2> kept_last = xt::zeros<T>({std::size_t(local_vocab), width});
      xt::xtensor<T, 2> unmasked = kept_last;
      for (std::size_t i = 0; i < n; ++i) {
        if (tokens(i) / local_vocab == r)
          xt::row(kept_last, tokens(i) - begin) = xt::row(output_grad, i);
        xt::row(unmasked, tokens(i) % local_vocab) += xt::row(output_grad, i);
      }
      judgement.mistake(name,
                        "each token's row written, not added (a repeated token keeps only its "
                        "last row)",
                        kept_last);
      if (tp > 1) {
        judgement.mistake(
            name, "no mask: every token's row added at (token − vocab_begin) mod V/tp", unmasked);
      }
    });
  }
}

// ----------------------------------- 10.3 -------------------------------------------------------

using Real = long double;

// The cross-entropy of the whole (n, vocab) logits in long double, with the known mistakes'
// versions of it.
struct SerialLoss {
  std::vector<Real> loss, loss_target_everywhere;
  xt::xtensor<Real, 2> grad, grad_target_everywhere, grad_local_softmax;
};

template <class T>
SerialLoss serial_loss(const xt::xtensor<T, 2>& logits, const Tokens& targets, int p,
                       int local_vocab) {
  const std::size_t n = logits.shape(0), vocab = logits.shape(1);
  SerialLoss s{std::vector<Real>(n), std::vector<Real>(n), xt::zeros<Real>({n, vocab}),
               xt::zeros<Real>({n, vocab}), xt::zeros<Real>({n, vocab})};
  for (std::size_t i = 0; i < n; ++i) {
    const int t = targets(i), t_local = t % local_vocab;
    Real max = logits(i, 0), sum = 0, target_everywhere = 0;
    for (std::size_t v = 0; v < vocab; ++v) max = std::max<Real>(max, logits(i, v));
    for (std::size_t v = 0; v < vocab; ++v) sum += std::exp(Real(logits(i, v)) - max);
    for (int q = 0; q < p; ++q) target_everywhere += logits(i, q * local_vocab + t_local);
    s.loss[i] = std::log(sum) + max - logits(i, t);
    s.loss_target_everywhere[i] = std::log(sum) + max - target_everywhere;
    for (int q = 0; q < p; ++q) {
      Real local_max = logits(i, q * local_vocab), local_sum = 0;
      for (int c = 0; c < local_vocab; ++c)
        local_max = std::max<Real>(local_max, logits(i, q * local_vocab + c));
      for (int c = 0; c < local_vocab; ++c)
        local_sum += std::exp(logits(i, q * local_vocab + c) - local_max);
      for (int c = 0; c < local_vocab; ++c) {
        const std::size_t v = q * local_vocab + c;
        const Real softmax = std::exp(logits(i, v) - max) / sum;
        s.grad(i, v) = (softmax - (int(v) == t)) / n;
        s.grad_target_everywhere(i, v) = (softmax - (c == t_local)) / n;
        s.grad_local_softmax(i, v) =
            (std::exp(logits(i, v) - local_max) / local_sum - (int(v) == t)) / n;
      }
    }
  }
  return s;
}

template <class T>
xt::xtensor<T, 1> as_values(const std::vector<Real>& v) {
  xt::xtensor<T, 1> t = xt::xtensor<T, 1>::from_shape({v.size()});
  std::transform(v.begin(), v.end(), t.begin(), [](Real x) { return static_cast<T>(x); });
  return t;
}

// Rank q's (n, local_vocab) columns of the logits, drawn from its key: [-5, 5], shifted by
// ±10⁴ on every row with `large` (odd rows +, even rows −, alike on every rank).
template <class T>
xt::xtensor<T, 2> logits_slice(Rng rng, std::size_t n, int local_vocab, bool large) {
  xt::xtensor<T, 2> logits({n, std::size_t(local_vocab)});
  for (std::size_t i = 0; i < n; ++i) {
    const double shift = large ? (i % 2 ? 1e4 : -1e4) : 0;
    for (int v = 0; v < local_vocab; ++v) logits(i, v) = static_cast<T>(shift + 5 * rng.value());
  }
  return logits;
}

template <class T>
void record_cross_entropy_mistakes(Judgement& judgement, const CheckContext& context,
                                   const Tokens& targets, int local_vocab, bool large,
                                   const std::string& loss, const std::string& grad) {
  const int p = context.world.Get_size(), r = context.rank();
  const std::size_t n = targets.size();
  xt::xtensor<T, 2> logits({n, std::size_t(p * local_vocab)});
  for (int q = 0; q < p; ++q) {
    xt::view(logits, xt::all(), xt::range(q * local_vocab, (q + 1) * local_vocab)) =
        logits_slice<T>(judgement.rng_of(q, "logits"), n, local_vocab, large);
  }
  const SerialLoss serial = serial_loss(logits, targets, p, local_vocab);
  auto mine = [&](const xt::xtensor<Real, 2>& g) {
    return xt::xtensor<T, 2>(
        xt::cast<T>(xt::view(g, xt::all(), xt::range(r * local_vocab, (r + 1) * local_vocab))));
  };
  if (p > 1) {
    const std::string everywhere =
        "the target's logit taken on every rank at local column target mod V/tp (not only on "
        "the rank whose columns hold it)";
    judgement.mistake(loss, everywhere, as_values<T>(serial.loss_target_everywhere));
    judgement.mistake(grad, everywhere, mine(serial.grad_target_everywhere));
    judgement.mistake(grad,
                      "the softmax over this rank's columns only (max and sum of exponentials "
                      "not reduced over tp_comm)",
                      mine(serial.grad_local_softmax));
  }
  judgement.mistake(grad, "the gradient of the summed loss (not divided by N)",
                    xt::xtensor<T, 2>(mine(serial.grad) * T(n)));
}

template <class T>
void cross_entropy_case(CheckContext& context) {
  const int p = context.world.Get_size(), r = context.rank();
  const std::size_t n = required(context, "rows");
  const int local_vocab = required(context, "local_vocab"), vocab = p * local_vocab;
  const bool large = context.test.has_word("large"), one_slice = context.test.has_word("one_slice");
  Rng target_rng = context.shared_rng("targets");
  Tokens targets = Tokens::from_shape({n});
  for (std::size_t i = 0; i < n; ++i)
    targets(i) = target_rng.uniform_int(0, (one_slice ? local_vocab : vocab) - 1);
  context.out.note(std::to_string(p) + " ranks, " + context.test.type + ", " + std::to_string(n) +
                   " rows, vocabulary " + std::to_string(vocab) + " (rank r holds columns [" +
                   std::to_string(local_vocab) + " r, " + std::to_string(local_vocab) +
                   " (r + 1))); logits drawn from the seed in [-5, 5]" +
                   (large ? " + 10⁴ on odd rows and − 10⁴ on even rows (exp overflows unless "
                            "the row's maximum is subtracted)"
                          : "") +
                   "; targets " + list_text(targets) +
                   (one_slice ? " (all in rank 0's columns)" : ""));
  const xt::xtensor<T, 2> local = logits_slice<T>(context.rng("logits"), n, local_vocab, large);
  // The judge asks a call to move about as much as the reference or more. Any way of reducing
  // N values per row is right here (an Allgather of each rank's log-sum-exp moves less than
  // three Allreduces; a loss without the max, one Allreduce less), so the bytes it compares are
  // capped at the least any of them moves, one Allreduce of N values: less than that, nothing
  // travelled through tp_comm. What more than reductions of N values moves is judged below.
  context.judge_traffic_up_to(2 * (p - 1) * n * sizeof(T) / p);
  const VocabParallelLoss<T> result = context.call([&] {
    return vocab_parallel_cross_entropy<T>(local, targets, r * local_vocab, context.world);
  });

  context.out.part("the loss");
  const std::string loss = "loss (one value per row)";
  record_tensor(context.out, loss, result.loss);
  context.out.part("logits_grad");
  const std::string grad = "logits_grad (this rank's columns of (softmax − one-hot) / N)";
  record_tensor(context.out, grad, result.logits_grad);
  context.judge([&](Judgement& judgement) {
    record_cross_entropy_mistakes<T>(judgement, context, targets, local_vocab, large, loss, grad);
  });

  context.out.part("reductions of N values, never the logits");
  const std::uint64_t allowed = 4 * (p - 1) * n * sizeof(T);
  record_bytes_beyond(context, allowed,
                      "that Allgathers of 4 N values send (the max, the sum of exponentials and "
                      "the target's logit are N values each; gathering the N × V/tp logits "
                      "sends " +
                          std::to_string((p - 1) * n * local_vocab * sizeof(T)) + ")");
}

// ----------------------------------- 10.4 -------------------------------------------------------

struct SequenceShape {
  int batch, seq_len, s_local;
  std::size_t width;
};

SequenceShape sequence_shape(const CheckContext& context) {
  const int p = context.world.Get_size(), seq_len = required(context, "seq");
  if (seq_len % p != 0) {
    throw std::invalid_argument("the case \"" + context.test.id() + "\": p must divide seq");
  }
  return {required(context, "batch"), seq_len, seq_len / p,
          std::size_t(required(context, "hidden"))};
}

std::string shape_note(const CheckContext& context, const SequenceShape& s) {
  return std::to_string(context.world.Get_size()) + " ranks, " + context.test.type + ", " +
         std::to_string(s.batch) + " sequence(s) of " + std::to_string(s.seq_len) + " positions, " +
         std::to_string(s.s_local) + " per rank (rank r holds positions [" +
         std::to_string(s.s_local) + " r, " + std::to_string(s.s_local) +
         " (r + 1))), h = " + std::to_string(s.width);
}

// The runs of s_local rows that the reordering moves: rank q's rows of sequence b sit at row
// (q · batch + b) · s_local of the blocks a collective moves, and at row b · S + q · s_local of
// the sequences.
template <class Visit>
void for_each_run(const SequenceShape& s, int p, Visit visit) {
  for (int q = 0; q < p; ++q) {
    for (int b = 0; b < s.batch; ++b)
      visit((q * s.batch + b) * s.s_local, b * s.seq_len + q * s.s_local);
  }
}

template <class T>
xt::xtensor<T, 2> rows_of(const xt::xtensor<T, 2>& m, std::size_t begin, std::size_t count) {
  return xt::view(m, xt::range(begin, begin + count), xt::all());
}

// A rank's (rows, width) block, drawn from its key under `stream`.
template <class T>
xt::xtensor<T, 2> rank_block(Rng rng, std::size_t rows, std::size_t width) {
  return random_matrix<T>(rng, rows, width);
}

template <class T>
void all_gather_case(CheckContext& context) {
  const int p = context.world.Get_size();
  const SequenceShape s = sequence_shape(context);
  context.out.note(shape_note(context, s) + "; every rank's positions drawn from the seed");
  const std::size_t local_rows = s.batch * s.s_local;
  const xt::xtensor<T, 2> x_local = rank_block<T>(context.rng("positions"), local_rows, s.width);
  const xt::xtensor<T, 2> gathered =
      context.call([&] { return sp_all_gather<T>(x_local, s.batch, context.world); });
  context.out.part("all positions, rows b · S + s");
  const std::string name = "all positions (row b · S + s)";
  record_tensor(context.out, name, gathered);
  if (s.batch > 1 && p > 1) {
    context.judge([&](Judgement& judgement) {
      // Every rank's rows as they are held, rank after rank (as an Allgather lands them).
      xt::xtensor<T, 2> blocks({p * local_rows, s.width});
      for (int q = 0; q < p; ++q) {
        xt::view(blocks, xt::range(q * local_rows, (q + 1) * local_rows), xt::all()) =
            rank_block<T>(judgement.rng_of(q, "positions"), local_rows, s.width);
      }
      judgement.mistake(name,
                        "the Allgather's blocks as they land, not reordered (rank 0's positions "
                        "of every sequence, then rank 1's, ...: the batch not interleaved)",
                        blocks);
    });
  }
  context.out.part("one Allgather");
  record_bytes_beyond(context, (p - 1) * local_rows * s.width * sizeof(T),
                      "that one Allgather sends");
}

template <class T>
void reduce_scatter_case(CheckContext& context) {
  const int p = context.world.Get_size(), r = context.rank();
  const SequenceShape s = sequence_shape(context);
  context.out.note(shape_note(context, s) + "; every rank's partial sums drawn from the seed");
  const std::size_t rows = s.batch * s.seq_len, local_rows = s.batch * s.s_local;
  const xt::xtensor<T, 2> partial = rank_block<T>(context.rng("partial sums"), rows, s.width);
  const xt::xtensor<T, 2> mine =
      context.call([&] { return sp_reduce_scatter<T>(partial, s.batch, context.world); });
  context.out.part("this rank's positions, summed");
  const std::string name = "this rank's positions of the sum (row b · S/tp + s')";
  record_tensor(context.out, name, mine);
  context.judge([&](Judgement& judgement) {
    xt::xtensor<T, 2> sum = xt::zeros<T>({rows, s.width});
    for (int q = 0; q < p; ++q)
      sum += rank_block<T>(judgement.rng_of(q, "partial sums"), rows, s.width);
    // This rank's runs of a tensor in sequence order, in the order they are returned.
    auto my_positions = [&](const xt::xtensor<T, 2>& m) {
      xt::xtensor<T, 2> out = xt::xtensor<T, 2>::from_shape({local_rows, s.width});
      for_each_run(s, p, [&](std::size_t block_row, std::size_t sequence_row) {
        if (block_row / local_rows == std::size_t(r)) {
          xt::view(out, xt::range(block_row % local_rows, block_row % local_rows + s.s_local),
                   xt::all()) = rows_of(m, sequence_row, s.s_local);
        }
      });
      return out;
    };
    if (s.batch > 1 && p > 1) {
      judgement.mistake(name,
                        "the Reduce_scatter without the reordering (rank r keeping rows "
                        "[r · B · S/tp, (r + 1) · B · S/tp) of the sum in b · S + s order)",
                        rows_of(sum, r * local_rows, local_rows));
    }
    if (p > 1) {
      judgement.mistake(name, "this rank's own partial sums, not summed over tp_comm",
                        my_positions(partial));
    }
  });
  context.out.part("one Reduce_scatter");
  record_bytes_beyond(context, (p - 1) * local_rows * s.width * sizeof(T),
                      "that one Reduce_scatter sends");
}

void check_vocab_parallel_embedding(CheckContext& context) {
  run_typed(context, embedding_case<float>, embedding_case<double>);
}
void check_vocab_parallel_embedding_grad(CheckContext& context) {
  run_typed(context, embedding_grad_case<float>, embedding_grad_case<double>);
}
void check_vocab_parallel_cross_entropy(CheckContext& context) {
  run_typed(context, cross_entropy_case<float>, cross_entropy_case<double>);
}
void check_sp_all_gather(CheckContext& context) {
  run_typed(context, all_gather_case<float>, all_gather_case<double>);
}
void check_sp_reduce_scatter(CheckContext& context) {
  run_typed(context, reduce_scatter_case<float>, reduce_scatter_case<double>);
}

}  // namespace

DTK_GRADE_CHECK(check_attention_heads, {"attention_heads",
                                        CaseKind::fields,
                                        /*collective=*/false,
                                        /*typed=*/false,
                                        {},
                                        false,
                                        "",
                                        {"heads", "tp", "idx"}});
DTK_GRADE_CHECK(check_qkv_columns, {"qkv_columns",
                                    CaseKind::fields,
                                    /*collective=*/false,
                                    /*typed=*/false,
                                    {},
                                    false,
                                    "",
                                    {"hidden", "heads", "tp", "idx"}});
DTK_GRADE_CHECK(check_gqa_qkv_columns, {"gqa_qkv_columns",
                                        CaseKind::fields,
                                        /*collective=*/false,
                                        /*typed=*/false,
                                        {},
                                        false,
                                        "",
                                        {"hidden", "heads", "kv", "tp", "idx"}});
DTK_GRADE_CHECK(check_vocab_parallel_embedding, {"vocab_parallel_embedding",
                                                 CaseKind::fields,
                                                 /*collective=*/true,
                                                 /*typed=*/true,
                                                 {},
                                                 false,
                                                 "",
                                                 {"local_vocab", "hidden", "tokens", "one_slice"}});
DTK_GRADE_CHECK(check_vocab_parallel_embedding_grad, {"vocab_parallel_embedding_grad",
                                                      CaseKind::fields,
                                                      /*collective=*/false,
                                                      /*typed=*/true,
                                                      {},
                                                      false,
                                                      "",
                                                      {"tp", "local_vocab", "hidden", "tokens"}});
DTK_GRADE_CHECK(check_vocab_parallel_cross_entropy,
                {"vocab_parallel_cross_entropy",
                 CaseKind::fields,
                 /*collective=*/true,
                 /*typed=*/true,
                 {"the loss", "logits_grad", "reductions of N values, never the logits"},
                 false,
                 "",
                 {"rows", "local_vocab", "large", "one_slice"}});
DTK_GRADE_CHECK(check_sp_all_gather, {"sp_all_gather",
                                      CaseKind::fields,
                                      /*collective=*/true,
                                      /*typed=*/true,
                                      {"all positions, rows b · S + s", "one Allgather"},
                                      false,
                                      "",
                                      {"batch", "seq", "hidden"}});
DTK_GRADE_CHECK(check_sp_reduce_scatter, {"sp_reduce_scatter",
                                          CaseKind::fields,
                                          /*collective=*/true,
                                          /*typed=*/true,
                                          {"this rank's positions, summed", "one Reduce_scatter"},
                                          false,
                                          "",
                                          {"batch", "seq", "hidden"}});

}  // namespace dtk::grade
