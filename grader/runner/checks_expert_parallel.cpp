// Part 12 (assignment 3): expert parallelism. local_experts' table of every rank and its bad
// arguments; moe_dispatch and moe_combine on the case's p ranks, every rank building every rank's
// tokens and routing, so that each knows what it should receive and what known mistakes would
// give. Values that move say where they come from (element j of token t's row on rank s is
// 10000 s + 100 t + j); values that are summed (expert outputs, gates) are drawn from the seed.
// The routing is the case's own, drawn from a fixed seed: the grading seed draws values, never
// how many rows go where, so that a submission gets the same score under every seed.
//
// Case words (the fields kind): p=P ranks, float|double, experts=E, k=K (1 or 2), tokens=N (rank
// s holds N + 3 s tokens), hidden=H (the row width), skewed (every token's first choice is the
// last expert), empty (rank 0 holds no token). local_experts reads p=P as ep_size and experts=E.
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

// ----------------------------------- 12.1 ---------------------------------------------------

// Every rank's [begin, end), as rows.
template <class Range>
xt::xtensor<std::int64_t, 2> table_of(int ranks, Range range) {
  xt::xtensor<std::int64_t, 2> rows({std::size_t(ranks), 2});
  for (int r = 0; r < ranks; ++r) {
    const std::pair<int, int> experts = range(r);
    rows(r, 0) = experts.first;
    rows(r, 1) = experts.second;
  }
  return rows;
}

void check_local_experts(CheckContext& context) {
  const int ep = context.test.p, experts = static_cast<int>(context.test.value("experts", ep));
  const int per_rank = experts / ep;
  context.out.note(std::to_string(experts) + " experts on " + std::to_string(ep) +
                   " ranks; row r is rank r's (begin, end)");
  context.out.part("every rank's experts");
  const std::string name = "every rank's (begin, end)";
  record_tensor(context.out, name,
                table_of(ep, [&](int r) { return local_experts(experts, ep, r); }));
  record_mistake(context.out, name,
                 "ep_size experts from ep_idx * ep_size (ep_size for E / ep_size)",
                 table_of(ep, [&](int r) {
                   return std::pair{r * ep, (r + 1) * ep};
                 }));
  record_mistake(context.out, name, "the end of each range one too small (an inclusive end)",
                 table_of(ep, [&](int r) {
                   return std::pair{r * per_rank, (r + 1) * per_rank - 1};
                 }));

  context.out.part("bad arguments throw std::invalid_argument");
  struct Bad {
    int experts, ep_size, ep_idx;
  };
  // A size that does not divide (or no expert at all on one rank), ep_idx out of range, no rank.
  const std::vector<Bad> bad = {
      {ep > 1 ? experts + 1 : 0, ep, 0}, {experts, ep, ep}, {experts, ep, -1}, {experts, 0, 0}};
  long long refused = 0;
  std::string calls;
  for (const Bad& b : bad) {
    const std::string call = "local_experts(" + std::to_string(b.experts) + ", " +
                             std::to_string(b.ep_size) + ", " + std::to_string(b.ep_idx) + ")";
    calls += (calls.empty() ? "" : ", ") + call;
    try {
      local_experts(b.experts, b.ep_size, b.ep_idx);
    } catch (const std::invalid_argument&) {
      ++refused;
    } catch (const std::exception&) {
      // another exception is not the one asked for
    }
  }
  context.out.integer("of " + calls + ": how many throw std::invalid_argument", refused);
}

// ----------------------------------- 12.2 - 12.3 --------------------------------------------

// Every rank's tokens and routing: the case's, the same on every rank.
struct Routing {
  int ranks = 1, experts = 1, k = 1;
  std::size_t hidden = 1;
  std::vector<xt::xtensor<std::int32_t, 2>> ids;  // rank s's expert_ids (tokens of s, k)

  int per_rank() const { return experts / ranks; }
  int owner(int expert) const { return expert / per_rank(); }
  std::size_t tokens(int s) const { return ids[s].shape(0); }
};

Routing routing_of(const CheckContext& context) {
  const TestCase& test = context.test;
  Routing routing;
  routing.ranks = test.p;
  routing.experts = static_cast<int>(test.value("experts", test.p));
  routing.k = static_cast<int>(test.value("k", 1));
  routing.hidden = static_cast<std::size_t>(test.value("hidden", 5));
  const std::size_t tokens = static_cast<std::size_t>(test.value("tokens", 7));
  // Seed 0, not the grading seed: which expert a token chooses is part of the case.
  Rng rng(0, test.id() + "|routing");
  std::vector<int> experts(routing.experts);
  for (int s = 0; s < routing.ranks; ++s) {
    const std::size_t n = s == 0 && test.has_word("empty") ? 0 : tokens + 3 * s;
    xt::xtensor<std::int32_t, 2> ids({n, std::size_t(routing.k)});
    for (std::size_t t = 0; t < n; ++t) {
      // k distinct experts: the first k of a shuffle (the first one fixed when skewed).
      std::iota(experts.begin(), experts.end(), 0);
      if (test.has_word("skewed")) std::swap(experts[0], experts.back());
      for (int c = test.has_word("skewed") ? 1 : 0; c < routing.k; ++c) {
        std::swap(experts[c], experts[rng.uniform_int(c, routing.experts - 1)]);
      }
      for (int c = 0; c < routing.k; ++c) ids(t, c) = experts[c];
    }
    routing.ids.push_back(std::move(ids));
  }
  return routing;
}

// Element j of token t's row on rank s: the value says where it comes from.
double token_value(int s, std::size_t t, std::size_t j) { return 10000.0 * s + 100.0 * t + j; }

template <class T>
xt::xtensor<T, 2> tokens_of(const Routing& routing, int s) {
  xt::xtensor<T, 2> x({routing.tokens(s), routing.hidden});
  for (std::size_t t = 0; t < x.shape(0); ++t) {
    for (std::size_t j = 0; j < x.shape(1); ++j) x(t, j) = static_cast<T>(token_value(s, t, j));
  }
  return x;
}

// One (token, choice) row where some rank's experts process it.
struct Arrival {
  int source;
  std::size_t token;
  int choice, expert;
};

// The rows of `experts` (in that order), each expert's by source rank, then (token, choice);
// `source_first`: by source rank first, then by expert (a known mistake).
std::vector<Arrival> arrivals(const Routing& routing, const std::vector<int>& experts,
                              bool source_first = false) {
  std::vector<Arrival> rows;
  auto add = [&](int e, int s) {
    for (std::size_t t = 0; t < routing.tokens(s); ++t) {
      for (int c = 0; c < routing.k; ++c) {
        if (routing.ids[s](t, c) == e) rows.push_back({s, t, c, e});
      }
    }
  };
  if (source_first) {
    for (int s = 0; s < routing.ranks; ++s) {
      for (const int e : experts) add(e, s);
    }
  } else {
    for (const int e : experts) {
      for (int s = 0; s < routing.ranks; ++s) add(e, s);
    }
  }
  return rows;
}

// Rank r's experts: contiguous, or dealt round-robin (a known mistake: expert e on rank e % p).
std::vector<int> experts_of(const Routing& routing, int r, bool round_robin = false) {
  std::vector<int> experts;
  for (int j = 0; j < routing.per_rank(); ++j)
    experts.push_back(round_robin ? r + j * routing.ranks : r * routing.per_rank() + j);
  return experts;
}

// The rows of `arrivals`, copied from their tokens.
template <class T>
xt::xtensor<T, 2> rows_of(const Routing& routing, const std::vector<Arrival>& rows) {
  xt::xtensor<T, 2> out({rows.size(), routing.hidden});
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::size_t j = 0; j < routing.hidden; ++j)
      out(i, j) = static_cast<T>(token_value(rows[i].source, rows[i].token, j));
  }
  return out;
}

// Rows rank `from` sends rank `to`, with `owner` saying where an expert lives.
template <class Owner>
int rows_between(const Routing& routing, int from, int to, Owner owner) {
  int count = 0;
  for (const std::int32_t e : routing.ids[from]) count += owner(e) == to;
  return count;
}

struct Counts {
  xt::xtensor<std::int32_t, 1> send, recv, per_expert;
};

// What rank r's plan should count; `round_robin`: with the experts dealt round-robin.
Counts counts_of(const Routing& routing, int r, bool round_robin = false) {
  auto owner = [&](int e) { return round_robin ? e % routing.ranks : routing.owner(e); };
  const std::size_t p = routing.ranks;
  Counts counts{xt::zeros<std::int32_t>({p}), xt::zeros<std::int32_t>({p}),
                xt::zeros<std::int32_t>({std::size_t(routing.per_rank())})};
  for (int q = 0; q < routing.ranks; ++q) {
    counts.send(q) = rows_between(routing, r, q, owner);
    counts.recv(q) = rows_between(routing, q, r, owner);
  }
  const std::vector<int> mine = experts_of(routing, r, round_robin);
  for (const Arrival& row : arrivals(routing, mine)) {
    counts.per_expert(std::find(mine.begin(), mine.end(), row.expert) - mine.begin()) += 1;
  }
  return counts;
}

xt::xtensor<std::int32_t, 1> as_tensor(const std::vector<int>& values) {
  xt::xtensor<std::int32_t, 1> out = xt::xtensor<std::int32_t, 1>::from_shape({values.size()});
  std::copy(values.begin(), values.end(), out.begin());
  return out;
}

// Rows this rank sends other ranks, by the counts.
long long to_others(const xt::xtensor<std::int32_t, 1>& counts, int r) {
  long long rows = 0;
  for (std::size_t q = 0; q < counts.size(); ++q) rows += static_cast<int>(q) == r ? 0 : counts(q);
  return rows;
}

void describe(CheckContext& context, const Routing& routing) {
  std::string tokens;
  for (int s = 0; s < routing.ranks; ++s)
    tokens += (s ? ", " : "") + std::to_string(routing.tokens(s));
  context.out.note(
      std::to_string(routing.ranks) + " ranks, " + context.test.type + ", " +
      std::to_string(routing.experts) + " experts (" + std::to_string(routing.per_rank()) +
      " per rank), k = " + std::to_string(routing.k) + ", ranks 0.." +
      std::to_string(routing.ranks - 1) + " hold " + tokens + " tokens of " +
      std::to_string(routing.hidden) + " values" +
      (context.test.has_word("skewed") ? ", every token's first choice the last expert" : ""));
}

// Records the bytes the student call sent beyond `rows` rows of `width` bytes, 8 bytes of
// bookkeeping per row and `extra` (expert_parallel.hpp's allowance): 0 when within it.
void record_extra_bytes(CheckContext& context, const std::string& what, std::uint64_t moved,
                        long long rows, std::size_t width, long long extra) {
  const long long rows_bytes = rows * static_cast<long long>(width);
  const long long allowed = rows_bytes + 8 * rows + extra;
  const long long sent = static_cast<long long>(moved);
  context.out.integer("bytes sent beyond " + what + " (" + std::to_string(rows_bytes) +
                          " bytes of rows, plus " + std::to_string(allowed - rows_bytes) +
                          " allowed for counts and ids)",
                      sent > allowed ? sent - allowed : 0);
}

// The rows the plan brings back to the wrong (token, choice), found by sending back, through the
// plan, a label of each returned row: its expert (by position, as the model reads the rows) and
// its first value (which names its rank and token). The exchange uses the expected counts, so
// that a wrong plan can never leave a rank waiting; an order that is no permutation of the right
// length brings nothing back.
template <class T>
long long rows_lost_by_plan(const CheckContext& context, const Routing& routing,
                            const xt::xtensor<T, 2>& rows, const DispatchPlan& plan) {
  const int r = context.world.Get_rank(), p = routing.ranks;
  const Counts counts = counts_of(routing, r);
  const std::size_t n = routing.tokens(r), k = routing.k;
  const std::size_t received = xt::sum(counts.recv)();
  auto is_permutation = [](const std::vector<std::int64_t>& order, std::size_t size) {
    std::vector<std::int64_t> sorted = order, first(size);
    std::sort(sorted.begin(), sorted.end());
    std::iota(first.begin(), first.end(), 0);
    return sorted == first;
  };
  const bool recv_ok = is_permutation(plan.recv_order, received) && rows.shape(0) == received &&
                       rows.shape(1) == routing.hidden && routing.hidden > 0;
  std::vector<double> labels(2 * received, -1.0);  // (expert, first value) per received row
  if (recv_ok) {
    std::vector<int> expert_at;  // of each returned row
    for (int j = 0; j < routing.per_rank(); ++j)
      expert_at.insert(expert_at.end(), counts.per_expert(j), r * routing.per_rank() + j);
    for (std::size_t i = 0; i < received; ++i) {
      labels[2 * i] = expert_at[plan.recv_order[i]];
      labels[2 * i + 1] = rows(plan.recv_order[i], 0);
    }
  }
  std::vector<int> send_counts(p), recv_counts(p), send_starts(p), recv_starts(p);
  for (int q = 0; q < p; ++q) {
    send_counts[q] = 2 * counts.recv(q);
    recv_counts[q] = 2 * counts.send(q);
  }
  std::partial_sum(send_counts.begin(), send_counts.end() - 1, send_starts.begin() + 1);
  std::partial_sum(recv_counts.begin(), recv_counts.end() - 1, recv_starts.begin() + 1);
  std::vector<double> back(2 * n * k);
  MPI_Alltoallv(labels.data(), send_counts.data(), send_starts.data(), MPI_DOUBLE, back.data(),
                recv_counts.data(), recv_starts.data(), MPI_DOUBLE, context.world.handle());
  if (!is_permutation(plan.send_order, n * k)) return static_cast<long long>(n * k);
  long long lost = 0;
  for (std::size_t i = 0; i < n * k; ++i) {
    const std::int64_t id = plan.send_order[i];
    const std::size_t token = id / k;
    lost += back[2 * i] != routing.ids[r].data()[id] || back[2 * i + 1] != token_value(r, token, 0);
  }
  return lost;
}

template <class T>
void dispatch_case(CheckContext& context) {
  const Routing routing = routing_of(context);
  const int r = context.world.Get_rank(), p = routing.ranks;
  describe(context, routing);
  context.out.note("element j of token t's row on rank s is 10000 s + 100 t + j");
  const xt::xtensor<T, 2> x = tokens_of<T>(routing, r);
  std::uint64_t moved = 0;
  auto [rows, plan] = moved_through(
      context, context.world,
      [&] { return moe_dispatch<T>(x, routing.ids[r], routing.experts, context.world); }, &moved);

  context.out.part("the rows, by local expert, then source rank");
  const std::string name = "the returned rows";
  record_tensor(context.out, name, rows);
  const std::vector<int> mine = experts_of(routing, r);
  if (p > 1 && routing.per_rank() > 1) {
    record_mistake(context.out, name,
                   "the rows grouped by source rank first, then by local expert (as they arrived)",
                   rows_of<T>(routing, arrivals(routing, mine, /*source_first=*/true)));
    record_mistake(context.out, name, "the experts dealt round-robin (expert e on rank e % p)",
                   rows_of<T>(routing, arrivals(routing, experts_of(routing, r, true))));
  }

  context.out.part("the plan's counts");
  const Counts wrong_owner = counts_of(routing, r, /*round_robin=*/true);
  auto counts = [&](const std::string& field, const std::vector<int>& values,
                    const xt::xtensor<std::int32_t, 1>& round_robin) {
    record_tensor(context.out, "plan." + field, as_tensor(values));
    if (p > 1 && routing.per_rank() > 1)
      record_mistake(context.out, "plan." + field,
                     "the experts dealt round-robin (expert e on rank e % p)", round_robin);
  };
  counts("send_counts", plan.send_counts, wrong_owner.send);
  counts("recv_counts", plan.recv_counts, wrong_owner.recv);
  counts("tokens_per_local_expert", plan.tokens_per_local_expert, wrong_owner.per_expert);

  context.out.part("the plan brings every row back");
  context.out.integer(
      "rows that send_order and recv_order do not bring back to their (token, choice)",
      rows_lost_by_plan(context, routing, rows, plan));

  context.out.part("each row sent once (bytes)");
  record_extra_bytes(context, "each row sent once", moved, to_others(counts_of(routing, r).send, r),
                     routing.hidden * sizeof(T), 8LL * routing.experts);
}

// Rank s's expert outputs, one row per (token, choice) in (token · k + choice) order, and its
// gates: drawn from the seed, so that sums of rows that went astray differ.
template <class T>
xt::xtensor<T, 2> outputs_of(const CheckContext& context, const Routing& routing, int s) {
  Rng rng = context.rng("expert outputs of rank " + std::to_string(s));
  return random_matrix<T>(rng, routing.tokens(s) * routing.k, routing.hidden);
}

template <class T>
xt::xtensor<T, 2> gates_of(const CheckContext& context, const Routing& routing, int s) {
  Rng rng = context.rng("gates of rank " + std::to_string(s));
  xt::xtensor<T, 2> gates({routing.tokens(s), std::size_t(routing.k)});
  for (T& g : gates) g = static_cast<T>(rng.uniform_int(1, 999) / 1000.0);
  return gates;
}

// Rank q's expert_out: the outputs of the rows its experts processed, as dispatch returns them.
template <class T>
xt::xtensor<T, 2> expert_out_of(const CheckContext& context, const Routing& routing, int q) {
  const std::vector<Arrival> rows = arrivals(routing, experts_of(routing, q));
  xt::xtensor<T, 2> out({rows.size(), routing.hidden});
  for (std::size_t i = 0; i < rows.size(); ++i) {
    xt::row(out, i) = xt::row(outputs_of<T>(context, routing, rows[i].source),
                              rows[i].token * routing.k + rows[i].choice);
  }
  return out;
}

// The plan dispatch makes on rank r: each rank sends its rows by expert ((token, choice) order
// within), and rank r returns them by local expert, then source.
DispatchPlan plan_of(const Routing& routing, int r) {
  const Counts counts = counts_of(routing, r);
  DispatchPlan plan{std::vector<int>(counts.send.begin(), counts.send.end()),
                    std::vector<int>(counts.recv.begin(), counts.recv.end()),
                    std::vector<int>(counts.per_expert.begin(), counts.per_expert.end()),
                    {},
                    {}};
  const std::size_t n = routing.tokens(r), k = routing.k;
  for (int e = 0; e < routing.experts; ++e) {
    for (std::size_t id = 0; id < n * k; ++id) {
      if (routing.ids[r].data()[id] == e) plan.send_order.push_back(static_cast<std::int64_t>(id));
    }
  }
  const std::vector<Arrival> rows = arrivals(routing, experts_of(routing, r));
  for (int s = 0; s < routing.ranks; ++s) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].source == s) plan.recv_order.push_back(static_cast<std::int64_t>(i));
    }
  }
  return plan;
}

// y[t] = Σ_c weight(gates[t, c]) · outputs[t · k + c].
template <class T, class Weight>
xt::xtensor<T, 2> weighted(const xt::xtensor<T, 2>& outputs, const xt::xtensor<T, 2>& gates,
                           Weight weight) {
  const std::size_t n = gates.shape(0), k = gates.shape(1);
  xt::xtensor<T, 2> y = xt::zeros<T>({n, outputs.shape(1)});
  for (std::size_t t = 0; t < n; ++t) {
    for (std::size_t c = 0; c < k; ++c)
      xt::row(y, t) += weight(gates(t, c)) * xt::row(outputs, t * k + c);
  }
  return y;
}

// What rank r's tokens get when every rank sends its expert_out back in the order dispatch
// returned it, without recv_order (a known mistake): the rows rank r finds in its block of each
// rank's expert_out, taken as the outputs of its send_order.
template <class T>
xt::xtensor<T, 2> outputs_without_recv_order(const CheckContext& context, const Routing& routing,
                                             int r) {
  const DispatchPlan mine = plan_of(routing, r);
  xt::xtensor<T, 2> outputs({mine.send_order.size(), routing.hidden});
  std::size_t i = 0;
  for (int q = 0; q < routing.ranks; ++q) {
    const DispatchPlan theirs = plan_of(routing, q);
    const std::size_t first =
        std::accumulate(theirs.recv_counts.begin(), theirs.recv_counts.begin() + r, 0);
    const xt::xtensor<T, 2> out = expert_out_of<T>(context, routing, q);
    for (int j = 0; j < theirs.recv_counts[r]; ++j, ++i)
      xt::row(outputs, mine.send_order[i]) = xt::row(out, first + j);
  }
  return outputs;
}

template <class T>
void combine_case(CheckContext& context) {
  const Routing routing = routing_of(context);
  const int r = context.world.Get_rank();
  describe(context, routing);
  context.out.note(
      "the plan is the one dispatch makes; expert outputs and gates are drawn "
      "from the seed");
  const DispatchPlan plan = plan_of(routing, r);
  const xt::xtensor<T, 2> expert_out = expert_out_of<T>(context, routing, r);
  const xt::xtensor<T, 2> gates = gates_of<T>(context, routing, r);
  std::uint64_t moved = 0;
  const xt::xtensor<T, 2> y = moved_through(
      context, context.world,
      [&] { return moe_combine<T>(expert_out, plan, gates, context.world); }, &moved);

  context.out.part("y, each output weighted by its gate");
  const std::string name = "y";
  record_tensor(context.out, name, y);
  const xt::xtensor<T, 2> outputs = outputs_of<T>(context, routing, r);
  record_mistake(context.out, name, "the gates ignored (each token the sum of its rows' outputs)",
                 weighted(outputs, gates, [](T) { return T(1); }));
  record_mistake(context.out, name, "each gate applied twice (gates[t, c]^2)",
                 weighted(outputs, gates, [](T g) { return g * g; }));
  record_mistake(
      context.out, name,
      "the output rows sent back in the order dispatch returned them (recv_order not "
      "applied)",
      weighted(outputs_without_recv_order<T>(context, routing, r), gates, [](T g) { return g; }));

  context.out.part("each row sent back once (bytes)");
  record_extra_bytes(context, "each row sent back once", moved,
                     to_others(as_tensor(plan.recv_counts), r), routing.hidden * sizeof(T), 0);
}

void check_moe_dispatch(CheckContext& context) {
  run_typed(context, dispatch_case<float>, dispatch_case<double>);
}
void check_moe_combine(CheckContext& context) {
  run_typed(context, combine_case<float>, combine_case<double>);
}

}  // namespace

DTK_GRADE_CHECK(check_local_experts,
                {"local_experts",
                 CaseKind::fields,
                 /*collective=*/false,
                 /*typed=*/false,
                 {"every rank's experts", "bad arguments throw std::invalid_argument"},
                 /*reduces=*/false,
                 /*timed_against=*/"",
                 /*case_words=*/{"experts"}});
DTK_GRADE_CHECK(check_moe_dispatch,
                {"moe_dispatch",
                 CaseKind::fields,
                 /*collective=*/true,
                 /*typed=*/true,
                 {"the rows, by local expert, then source rank", "the plan's counts",
                  "the plan brings every row back", "each row sent once (bytes)"},
                 /*reduces=*/false,
                 /*timed_against=*/"",
                 /*case_words=*/{"experts", "k", "tokens", "hidden", "skewed", "empty"}});
DTK_GRADE_CHECK(check_moe_combine,
                {"moe_combine",
                 CaseKind::fields,
                 /*collective=*/true,
                 /*typed=*/true,
                 {"y, each output weighted by its gate", "each row sent back once (bytes)"},
                 /*reduces=*/false,
                 /*timed_against=*/"",
                 /*case_words=*/{"experts", "k", "tokens", "hidden", "skewed", "empty"}});

}  // namespace dtk::grade
