// Part 12 (assignment 3): expert parallelism. local_experts' table of every rank and its bad
// arguments; moe_dispatch and moe_combine on the case's p ranks. Each rank draws its own tokens
// and routing (and, for combine, its expert outputs and gates) from its own key: every value
// and every choice of expert is random, the case fixing only shapes (how many tokens each rank
// holds, k, E, a skewed or an empty rank). Every rank's inputs exist only in the reference's
// run, to record what the known mistakes would give, and in the derive step after the launch,
// which sends the labels of the returned rows back through each rank's plan to see that it
// brings every row home. The combine's plan is the one dispatch makes: the check exchanges the
// counts it needs before the call (its own communication, not the student's).
//
// Case words (the fields kind): p=P ranks, float|double, experts=E, k=K (1 or 2), tokens=N (rank
// s holds N + 3 s tokens), hidden=H (the row width), skewed (every token's first choice is the
// last expert), empty (rank 0 holds no token). local_experts reads p=P as ep_size and experts=E.
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xadapt.hpp>
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
  record_tensor(context.out, name, table_of(ep, [&](int r) {
                  return context.call([&] { return local_experts(experts, ep, r); });
                }));
  context.judge([&](Judgement& judgement) {
    judgement.mistake(name, "ep_size experts from ep_idx * ep_size (ep_size for E / ep_size)",
                      table_of(ep, [&](int r) {
                        return std::pair{r * ep, (r + 1) * ep};
                      }));
    judgement.mistake(name, "the end of each range one too small (an inclusive end)",
                      table_of(ep, [&](int r) {
                        return std::pair{r * per_rank, (r + 1) * per_rank - 1};
                      }));
  });

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
      context.call([&] { local_experts(b.experts, b.ep_size, b.ep_idx); });
    } catch (const std::invalid_argument&) {
      ++refused;
    } catch (const std::exception&) {
      // another exception is not the one asked for
    }
  }
  context.out.integer("of " + calls + ": how many throw std::invalid_argument", refused);
}

// ----------------------------------- 12.2 - 12.3 --------------------------------------------

// The case's shapes, the same on every rank: how many ranks, experts and choices, the row
// width, and how many tokens each rank holds.
struct Shapes {
  int ranks = 1, experts = 1, k = 1;
  std::size_t hidden = 1;
  std::vector<std::size_t> tokens;  // by rank

  int per_rank() const { return experts / ranks; }
  int owner(int expert) const { return expert / per_rank(); }
};

Shapes shapes_of(const TestCase& test) {
  Shapes shapes;
  shapes.ranks = test.p;
  shapes.experts = static_cast<int>(test.value("experts", test.p));
  shapes.k = static_cast<int>(test.value("k", 1));
  shapes.hidden = static_cast<std::size_t>(test.value("hidden", 5));
  const std::size_t tokens = static_cast<std::size_t>(test.value("tokens", 7));
  for (int s = 0; s < shapes.ranks; ++s)
    shapes.tokens.push_back(s == 0 && test.has_word("empty") ? 0 : tokens + 3 * s);
  return shapes;
}

// Rank s's expert_ids (tokens, k), drawn from its key: k distinct experts per token, the first
// k of a shuffle (the first one the last expert when skewed).
xt::xtensor<std::int32_t, 2> routing_of(const Shapes& shapes, int s, Rng rng, bool skewed) {
  std::vector<int> experts(shapes.experts);
  xt::xtensor<std::int32_t, 2> ids({shapes.tokens[s], std::size_t(shapes.k)});
  for (std::size_t t = 0; t < shapes.tokens[s]; ++t) {
    std::iota(experts.begin(), experts.end(), 0);
    if (skewed) std::swap(experts[0], experts.back());
    for (int c = skewed ? 1 : 0; c < shapes.k; ++c)
      std::swap(experts[c], experts[rng.uniform_int(c, shapes.experts - 1)]);
    for (int c = 0; c < shapes.k; ++c) ids(t, c) = experts[c];
  }
  return ids;
}

// One rank's inputs, drawn from its key: its tokens' rows and their routing.
template <class T>
struct RankTokens {
  xt::xtensor<T, 2> x;
  xt::xtensor<std::int32_t, 2> ids;
};

template <class T>
RankTokens<T> tokens_of(const Shapes& shapes, int s, Rng rng, bool skewed) {
  RankTokens<T> in;
  in.ids = routing_of(shapes, s, rng, skewed);
  in.x = random_matrix<T>(rng, shapes.tokens[s], shapes.hidden);
  return in;
}

// Every rank's tokens and routing, as a judgement or a derive function makes them.
template <class T, class Source>
std::vector<RankTokens<T>> every_rank(const Shapes& shapes, const Source& source, bool skewed) {
  std::vector<RankTokens<T>> all;
  for (int s = 0; s < shapes.ranks; ++s)
    all.push_back(tokens_of<T>(shapes, s, source.rng_of(s, "tokens"), skewed));
  return all;
}

// One (token, choice) row where some rank's experts process it.
struct Arrival {
  int source;
  std::size_t token;
  int choice, expert;
};

// The rows of `experts` (in that order), each expert's by source rank, then (token, choice);
// `source_first`: by source rank first, then by expert (a known mistake).
template <class T>
std::vector<Arrival> arrivals(const Shapes& shapes, const std::vector<RankTokens<T>>& all,
                              const std::vector<int>& experts, bool source_first = false) {
  std::vector<Arrival> rows;
  auto add = [&](int e, int s) {
    for (std::size_t t = 0; t < shapes.tokens[s]; ++t) {
      for (int c = 0; c < shapes.k; ++c) {
        if (all[s].ids(t, c) == e) rows.push_back({s, t, c, e});
      }
    }
  };
  if (source_first) {
    for (int s = 0; s < shapes.ranks; ++s) {
      for (const int e : experts) add(e, s);
    }
  } else {
    for (const int e : experts) {
      for (int s = 0; s < shapes.ranks; ++s) add(e, s);
    }
  }
  return rows;
}

// Rank r's experts: contiguous, or dealt round-robin (a known mistake: expert e on rank e % p).
std::vector<int> experts_of(const Shapes& shapes, int r, bool round_robin = false) {
  std::vector<int> experts;
  for (int j = 0; j < shapes.per_rank(); ++j)
    experts.push_back(round_robin ? r + j * shapes.ranks : r * shapes.per_rank() + j);
  return experts;
}

// The rows of `arrivals`, copied from their tokens.
template <class T>
xt::xtensor<T, 2> rows_of(const Shapes& shapes, const std::vector<RankTokens<T>>& all,
                          const std::vector<Arrival>& rows) {
  xt::xtensor<T, 2> out({rows.size(), shapes.hidden});
  for (std::size_t i = 0; i < rows.size(); ++i)
    xt::row(out, i) = xt::row(all[rows[i].source].x, rows[i].token);
  return out;
}

struct Counts {
  xt::xtensor<std::int64_t, 1> send, recv, per_expert;
};

// How many of rank `from`'s rows go to each expert of rank `to` (by local expert), with `owner`
// saying where an expert lives.
template <class Owner>
std::vector<int> rows_for(const Shapes& shapes, const xt::xtensor<std::int32_t, 2>& ids, int to,
                          Owner owner, bool round_robin) {
  std::vector<int> count(shapes.per_rank(), 0);
  for (const std::int32_t e : ids) {
    if (owner(e) == to) count[round_robin ? e / shapes.ranks : e % shapes.per_rank()] += 1;
  }
  return count;
}

// What rank r's plan should count, from every rank's routing; `round_robin`: with the experts
// dealt round-robin.
template <class T>
Counts counts_of(const Shapes& shapes, const std::vector<RankTokens<T>>& all, int r,
                 bool round_robin = false) {
  auto owner = [&](int e) { return round_robin ? e % shapes.ranks : shapes.owner(e); };
  const std::size_t p = shapes.ranks;
  Counts counts{xt::zeros<std::int64_t>({p}), xt::zeros<std::int64_t>({p}),
                xt::zeros<std::int64_t>({std::size_t(shapes.per_rank())})};
  for (int q = 0; q < shapes.ranks; ++q) {
    for (int n : rows_for(shapes, all[r].ids, q, owner, round_robin)) counts.send(q) += n;
    const std::vector<int> from_q = rows_for(shapes, all[q].ids, r, owner, round_robin);
    for (int j = 0; j < shapes.per_rank(); ++j) {
      counts.recv(q) += from_q[j];
      counts.per_expert(j) += from_q[j];
    }
  }
  return counts;
}

// Rows this rank sends other ranks, by the counts.
long long to_others(const std::vector<int>& counts, int r) {
  long long rows = 0;
  for (std::size_t q = 0; q < counts.size(); ++q) rows += static_cast<int>(q) == r ? 0 : counts[q];
  return rows;
}

// Rows rank r sends each rank, from its own routing.
std::vector<int> send_counts_of(const Shapes& shapes, const xt::xtensor<std::int32_t, 2>& ids) {
  std::vector<int> counts(shapes.ranks, 0);
  for (const std::int32_t e : ids) counts[shapes.owner(e)] += 1;
  return counts;
}

void describe(CheckContext& context, const Shapes& shapes) {
  std::string tokens;
  for (int s = 0; s < shapes.ranks; ++s)
    tokens += (s ? ", " : "") + std::to_string(shapes.tokens[s]);
  context.out.note(
      std::to_string(shapes.ranks) + " ranks, " + context.test.type + ", " +
      std::to_string(shapes.experts) + " experts (" + std::to_string(shapes.per_rank()) +
      " per rank), k = " + std::to_string(shapes.k) + ", ranks 0.." +
      std::to_string(shapes.ranks - 1) + " hold " + tokens + " tokens of " +
      std::to_string(shapes.hidden) + " values, every rank's tokens and routing drawn from the " +
      "seed" +
      (context.test.has_word("skewed") ? ", every token's first choice the last expert" : ""));
}

// Records the bytes the student calls sent beyond `rows` rows of `width` bytes, 8 bytes of
// bookkeeping per row and `extra` (expert_parallel.hpp's allowance): 0 when within it.
void record_extra_bytes(CheckContext& context, const std::string& what, long long rows,
                        std::size_t width, long long extra) {
  const long long rows_bytes = rows * static_cast<long long>(width);
  const long long allowed = rows_bytes + 8 * rows + extra;
  const long long sent = static_cast<long long>(context.bytes_sent());
  context.out.integer("bytes sent beyond " + what + " (" + std::to_string(rows_bytes) +
                          " bytes of rows, plus " + std::to_string(allowed - rows_bytes) +
                          " allowed for counts and ids)",
                      sent > allowed ? sent - allowed : 0);
}

const char* const kRowsLost =
    "rows that send_order and recv_order do not bring back to their (token, choice)";

template <class T>
void record_dispatch_mistakes(Judgement& judgement, const Shapes& shapes, int r, bool skewed) {
  const std::vector<RankTokens<T>> all = every_rank<T>(shapes, judgement, skewed);
  const std::string name = "the returned rows";
  const int p = shapes.ranks;
  if (p == 1 || shapes.per_rank() == 1) return;
  const char* round_robin = "the experts dealt round-robin (expert e on rank e % p)";
  judgement.mistake(
      name, "the rows grouped by source rank first, then by local expert (as they arrived)",
      rows_of(shapes, all, arrivals(shapes, all, experts_of(shapes, r), /*source_first=*/true)));
  judgement.mistake(name, round_robin,
                    rows_of(shapes, all, arrivals(shapes, all, experts_of(shapes, r, true))));
  const Counts wrong_owner = counts_of(shapes, all, r, /*round_robin=*/true);
  judgement.mistake("plan.send_counts", round_robin, wrong_owner.send);
  judgement.mistake("plan.recv_counts", round_robin, wrong_owner.recv);
  judgement.mistake("plan.tokens_per_local_expert", round_robin, wrong_owner.per_expert);
}

template <class T>
void dispatch_case(CheckContext& context) {
  const Shapes shapes = shapes_of(context.test);
  const int r = context.rank();
  const bool skewed = context.test.has_word("skewed");
  describe(context, shapes);
  const RankTokens<T> mine = tokens_of<T>(shapes, r, context.rng("tokens"), skewed);
  auto [rows, plan] = context.call(
      [&] { return moe_dispatch<T>(mine.x, mine.ids, shapes.experts, context.world); });

  context.out.part("the rows, by local expert, then source rank");
  record_tensor(context.out, "the returned rows", rows);
  context.out.part("the plan's counts");
  record_tensor(context.out, "plan.send_counts", int_tensor(plan.send_counts));
  record_tensor(context.out, "plan.recv_counts", int_tensor(plan.recv_counts));
  record_tensor(context.out, "plan.tokens_per_local_expert",
                int_tensor(plan.tokens_per_local_expert));
  context.judge(
      [&](Judgement& judgement) { record_dispatch_mistakes<T>(judgement, shapes, r, skewed); });
  // The plan's orders are judged after the launch, with every rank's (derive_rows_lost).
  record_evidence(context.out, "plan.send_order",
                  xt::xtensor<std::int64_t, 1>(xt::adapt(plan.send_order)));
  record_evidence(context.out, "plan.recv_order",
                  xt::xtensor<std::int64_t, 1>(xt::adapt(plan.recv_order)));
  record_evidence(context.out, "the returned rows", rows);

  context.out.part("each row sent once (bytes)");
  record_extra_bytes(context, "each row sent once", to_others(send_counts_of(shapes, mine.ids), r),
                     shapes.hidden * sizeof(T), 8LL * shapes.experts);
}

// A vector evidence of rank r as integers; empty when it is missing or not one.
std::vector<std::int64_t> integers(const DeriveContext& context, int r, const std::string& name) {
  const Value* value = context.evidence(r, name);
  if (value == nullptr || value->shape.size() != 1) return {};
  return std::vector<std::int64_t>(value->values.begin(), value->values.end());
}

// The plan brings every row home: every rank sends back, through its recv_order, a label of
// each row it returned (the expert at that position, as the model reads the rows, and the row's
// first value), by the right counts; every rank checks what comes back for each entry of its
// send_order against the token and expert it sent. An order that is no permutation of the right
// length brings nothing back.
template <class T>
void derive_rows_lost_case(DeriveContext& context) {
  const Shapes shapes = shapes_of(context.test);
  const int p = shapes.ranks;
  const std::vector<RankTokens<T>> all =
      every_rank<T>(shapes, context, context.test.has_word("skewed"));
  auto is_permutation = [](std::vector<std::int64_t> order, std::size_t size) {
    std::vector<std::int64_t> first(size);
    std::sort(order.begin(), order.end());
    std::iota(first.begin(), first.end(), 0);
    return order == first;
  };
  // labels[r][q]: what rank r sends rank q back, in the order it received q's rows.
  std::vector<std::vector<std::vector<std::pair<double, double>>>> labels(
      p, std::vector<std::vector<std::pair<double, double>>>(p));
  for (int r = 0; r < p; ++r) {
    const Counts counts = counts_of(shapes, all, r);
    const std::size_t received = xt::sum(counts.recv)();
    const std::vector<std::int64_t> recv_order = integers(context, r, "plan.recv_order");
    const Value* rows = context.evidence(r, "the returned rows");
    const bool ok = is_permutation(recv_order, received) && rows != nullptr &&
                    rows->shape == std::vector<std::size_t>{received, shapes.hidden} &&
                    shapes.hidden > 0;
    std::vector<int> expert_at;  // of each returned row
    for (int j = 0; j < shapes.per_rank(); ++j)
      expert_at.insert(expert_at.end(), counts.per_expert(j), r * shapes.per_rank() + j);
    std::size_t i = 0;
    for (int q = 0; q < p; ++q) {
      for (int j = 0; j < counts.recv(q); ++j, ++i) {
        labels[r][q].push_back(ok ? std::pair{double(expert_at[recv_order[i]]),
                                              rows->values[recv_order[i] * shapes.hidden]}
                                  : std::pair{-1.0, -1.0});
      }
    }
  }
  for (int q = 0; q < p; ++q) {
    const std::size_t n = shapes.tokens[q], k = shapes.k;
    const std::vector<std::int64_t> send_order = integers(context, q, "plan.send_order");
    long long lost = 0;
    if (!is_permutation(send_order, n * k)) {
      lost = static_cast<long long>(n * k);
    } else {
      std::vector<std::pair<double, double>> back;
      for (int r = 0; r < p; ++r) back.insert(back.end(), labels[r][q].begin(), labels[r][q].end());
      for (std::size_t i = 0; i < n * k; ++i) {
        const std::int64_t id = send_order[i];
        const std::size_t token = id / k;
        lost += back[i].first != all[q].ids.data()[id] ||
                back[i].second != static_cast<double>(all[q].x(token, 0));
      }
    }
    context.out[q]->part("the plan brings every row back");
    context.out[q]->integer(kRowsLost, lost);
  }
}

void derive_rows_lost(DeriveContext& context) {
  (context.test.type == "float" ? derive_rows_lost_case<float>
                                : derive_rows_lost_case<double>)(context);
}

// combine's inputs on rank r: the plan dispatch makes and the outputs of the rows its experts
// processed (drawn from its key: outputs, not inputs moved, so they need not come from the
// tokens), with its own gates.
template <class T>
struct CombineInputs {
  DispatchPlan plan;
  xt::xtensor<T, 2> expert_out, gates;
};

// The plan dispatch makes on rank r, from its routing and, for each source rank q, how many of
// q's rows go to each of r's experts (`from`): each rank sends its rows by expert ((token,
// choice) order within), and rank r returns them by local expert, then source.
DispatchPlan plan_of(const Shapes& shapes, int /*r*/, const xt::xtensor<std::int32_t, 2>& ids,
                     const std::vector<std::vector<int>>& from) {
  DispatchPlan plan;
  plan.send_counts = send_counts_of(shapes, ids);
  plan.tokens_per_local_expert.assign(shapes.per_rank(), 0);
  for (int q = 0; q < shapes.ranks; ++q) {
    plan.recv_counts.push_back(std::accumulate(from[q].begin(), from[q].end(), 0));
    for (int j = 0; j < shapes.per_rank(); ++j) plan.tokens_per_local_expert[j] += from[q][j];
  }
  for (int e = 0; e < shapes.experts; ++e) {
    for (std::size_t id = 0; id < ids.size(); ++id) {
      if (ids.data()[id] == e) plan.send_order.push_back(static_cast<std::int64_t>(id));
    }
  }
  // The returned rows: expert j's block, and within it source q's rows; received rows arrive
  // source by source, each source's by expert.
  std::vector<std::int64_t> expert_start(shapes.per_rank(), 0);
  for (int j = 1; j < shapes.per_rank(); ++j)
    expert_start[j] = expert_start[j - 1] + plan.tokens_per_local_expert[j - 1];
  for (int q = 0; q < shapes.ranks; ++q) {
    for (int j = 0; j < shapes.per_rank(); ++j) {
      std::int64_t at = expert_start[j];
      for (int s = 0; s < q; ++s) at += from[s][j];
      for (int n = 0; n < from[q][j]; ++n) plan.recv_order.push_back(at + n);
    }
  }
  return plan;
}

template <class T>
CombineInputs<T> combine_inputs(const Shapes& shapes, int r,
                                const xt::xtensor<std::int32_t, 2>& ids,
                                const std::vector<std::vector<int>>& from, Rng rng) {
  CombineInputs<T> in;
  in.plan = plan_of(shapes, r, ids, from);
  const std::size_t received = in.plan.recv_order.size();
  in.expert_out = random_matrix<T>(rng, received, shapes.hidden);
  in.gates = xt::xtensor<T, 2>({shapes.tokens[r], std::size_t(shapes.k)});
  for (T& g : in.gates) g = static_cast<T>(rng.uniform_int(1, 999) / 1000.0);
  return in;
}

// How many of rank q's rows go to each of rank r's experts, for every q: exchanged by the check
// (before the student's call), as dispatch's plan would know them.
std::vector<std::vector<int>> rows_from_each_rank(CheckContext& context, const Shapes& shapes,
                                                  const xt::xtensor<std::int32_t, 2>& ids) {
  const int p = shapes.ranks, per_rank = shapes.per_rank();
  std::vector<int> mine(p * per_rank, 0), theirs(p * per_rank, 0);
  for (const std::int32_t e : ids)
    mine[e] += 1;  // expert e is rank e / per_rank's j = e % per_rank
  MPI_Alltoall(mine.data(), per_rank, MPI_INT, theirs.data(), per_rank, MPI_INT,
               context.world.handle());
  std::vector<std::vector<int>> from(p);
  for (int q = 0; q < p; ++q)
    from[q].assign(theirs.begin() + q * per_rank, theirs.begin() + (q + 1) * per_rank);
  return from;
}

// Every rank's combine inputs and tokens' routing, as the reference's judgement makes them.
template <class T>
std::vector<CombineInputs<T>> every_combine_input(const Judgement& judgement, const Shapes& shapes,
                                                  const std::vector<RankTokens<T>>& all) {
  std::vector<CombineInputs<T>> inputs;
  for (int r = 0; r < shapes.ranks; ++r) {
    std::vector<std::vector<int>> from;
    for (int q = 0; q < shapes.ranks; ++q)
      from.push_back(rows_for(
          shapes, all[q].ids, r, [&](int e) { return shapes.owner(e); }, false));
    inputs.push_back(
        combine_inputs<T>(shapes, r, all[r].ids, from, judgement.rng_of(r, "combine")));
  }
  return inputs;
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

// The output of each of rank t's (token, choice) rows, in (token · k + choice) order: taken
// from the rank whose expert processed it, by that rank's recv_order (or, a known mistake, in
// the order dispatch returned the rows: `with_recv_order` false).
template <class T>
xt::xtensor<T, 2> outputs_for(const Shapes& shapes, const std::vector<CombineInputs<T>>& inputs,
                              int t, bool with_recv_order) {
  const DispatchPlan& mine = inputs[t].plan;
  xt::xtensor<T, 2> outputs({mine.send_order.size(), shapes.hidden});
  std::size_t i = 0;
  for (int q = 0; q < shapes.ranks; ++q) {
    const DispatchPlan& theirs = inputs[q].plan;
    const std::size_t first =
        std::accumulate(theirs.recv_counts.begin(), theirs.recv_counts.begin() + t, 0);
    for (int j = 0; j < theirs.recv_counts[t]; ++j, ++i) {
      const std::size_t arrival = first + j;
      const std::size_t row = with_recv_order ? theirs.recv_order[arrival] : arrival;
      xt::row(outputs, mine.send_order[i]) = xt::row(inputs[q].expert_out, row);
    }
  }
  return outputs;
}

template <class T>
void record_combine_mistakes(Judgement& judgement, const Shapes& shapes, int r, bool skewed) {
  const std::vector<RankTokens<T>> all = every_rank<T>(shapes, judgement, skewed);
  const std::vector<CombineInputs<T>> inputs = every_combine_input<T>(judgement, shapes, all);
  const xt::xtensor<T, 2>& gates = inputs[r].gates;
  const xt::xtensor<T, 2> outputs = outputs_for(shapes, inputs, r, true);
  judgement.mistake("y", "the gates ignored (each token the sum of its rows' outputs)",
                    weighted(outputs, gates, [](T) { return T(1); }));
  judgement.mistake("y", "each gate applied twice (gates[t, c]^2)",
                    weighted(outputs, gates, [](T g) { return g * g; }));
  judgement.mistake("y",
                    "the output rows sent back in the order dispatch returned them (recv_order "
                    "not applied)",
                    weighted(outputs_for(shapes, inputs, r, false), gates, [](T g) { return g; }));
}

template <class T>
void combine_case(CheckContext& context) {
  const Shapes shapes = shapes_of(context.test);
  const int r = context.rank();
  const bool skewed = context.test.has_word("skewed");
  describe(context, shapes);
  context.out.note(
      "the plan is the one dispatch makes; expert outputs and gates are drawn from the seed");
  const RankTokens<T> mine = tokens_of<T>(shapes, r, context.rng("tokens"), skewed);
  const CombineInputs<T> in = combine_inputs<T>(
      shapes, r, mine.ids, rows_from_each_rank(context, shapes, mine.ids), context.rng("combine"));
  const xt::xtensor<T, 2> y =
      context.call([&] { return moe_combine<T>(in.expert_out, in.plan, in.gates, context.world); });

  context.out.part("y, each output weighted by its gate");
  record_tensor(context.out, "y", y);
  context.judge(
      [&](Judgement& judgement) { record_combine_mistakes<T>(judgement, shapes, r, skewed); });
  context.out.part("each row sent back once (bytes)");
  record_extra_bytes(context, "each row sent back once", to_others(in.plan.recv_counts, r),
                     shapes.hidden * sizeof(T), 0);
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
DTK_GRADE_DERIVED_CHECK(check_moe_dispatch, derive_rows_lost,
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
