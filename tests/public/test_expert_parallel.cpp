// Part 12 public tests: local_experts, moe_dispatch and moe_combine, on 4 ranks.
//   mpirun -n 4 ./build/tests/test_expert_parallel
// 12.1 against written-out tables. 12.2 and 12.3 run on expert-parallel groups of 1, 2, 3 and 4
// ranks cut from the 4 ranks, with 1 and 2 experts per rank, k = 1 and 2, ranks holding
// different numbers of tokens (7, 9, 11 and 13: divisible by nothing), a routing where every
// token's first choice is the same expert, and rows of more than 1 MB. Values say where they come
// from: element j of token t's row on rank s is 10000 s + 100 t + j. The bytes each call sends
// are counted with the Communicator's estimates (communicator.hpp).
#include "dtk_test.hpp"

#include <dtk/expert_parallel.hpp>

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xview.hpp>

namespace {

constexpr int kRanks = 4;

using dtk::testing::expect_invalid_argument;
using dtk::testing::report_first_few;

// ----------------------------------- 12.1 ---------------------------------------------------

std::string range_text(const std::pair<int, int>& range) {
  return "{" + std::to_string(range.first) + ", " + std::to_string(range.second) + "}";
}

// Every rank's local_experts(num_experts, ep_size, rank) against the table `expected`.
void check_table(dtk::testing::Checks& check, int num_experts, int ep_size,
                 const std::vector<std::pair<int, int>>& expected) {
  for (int rank = 0; rank < ep_size; ++rank) {
    const std::pair<int, int> actual = dtk::local_experts(num_experts, ep_size, rank);
    check.that(actual == expected[rank], "local_experts(" + std::to_string(num_experts) + ", " +
                                             std::to_string(ep_size) + ", " + std::to_string(rank) +
                                             "): expected " + range_text(expected[rank]) +
                                             ", got " + range_text(actual));
  }
}

// ----------------------------------- 12.2 - 12.3 --------------------------------------------

// The 4 ranks cut into expert-parallel groups of `size` consecutive ranks; with size 3, rank 3
// forms a group of 1. Every rank computes in some group, so every rank calls every function.
dtk::Communicator group_of(int size) {
  dtk::Communicator world;
  return world.Split(world.Get_rank() / size, world.Get_rank());
}

// Everything every rank of a group holds, which every rank computes, so that each can work out
// what it should receive.
struct Routing {
  int ranks = 1, experts = 1, k = 1;
  std::size_t hidden = 1;
  std::vector<xt::xtensor<std::int32_t, 2>> ids;  // rank s's expert_ids (tokens of s, k)

  int per_rank() const { return experts / ranks; }
  int owner(int expert) const { return expert / per_rank(); }
  std::size_t tokens(int s) const { return ids[s].shape(0); }
};

// Rank s holds base_tokens + 2 s tokens. Choices: spread over the experts by a fixed formula, or
// `skewed`: every token's first choice is the last expert (on the last rank, so that the others
// receive no row of a first choice); a second choice is always another expert.
Routing make_routing(int ranks, int per_rank, int k, std::size_t hidden, std::size_t base_tokens,
                     bool skewed) {
  Routing routing{ranks, ranks * per_rank, k, hidden, {}};
  const int e = routing.experts;
  for (int s = 0; s < ranks; ++s) {
    const std::size_t n = base_tokens + 2 * s;
    xt::xtensor<std::int32_t, 2> ids({n, std::size_t(k)});
    for (std::size_t t = 0; t < n; ++t) {
      const int first = skewed ? e - 1 : static_cast<int>((5 * s + 3 * t) % e);
      ids(t, 0) = first;
      // Another expert than the first: 1 to e - 1 further on.
      if (k == 2) ids(t, 1) = (first + 1 + static_cast<int>((s + t) % (e - 1))) % e;
    }
    routing.ids.push_back(std::move(ids));
  }
  return routing;
}

// Element j of token t's row on rank s: 10000 s + 100 t + j.
template <class T>
xt::xtensor<T, 2> tokens_of(const Routing& routing, int s) {
  xt::xtensor<T, 2> x({routing.tokens(s), routing.hidden});
  for (std::size_t t = 0; t < x.shape(0); ++t) {
    for (std::size_t j = 0; j < x.shape(1); ++j) x(t, j) = static_cast<T>(10000 * s + 100 * t + j);
  }
  return x;
}

// One (token, choice) row as a rank should hold it after dispatch.
struct Arrival {
  int source;
  std::size_t token;
  int choice, expert;
};

// Rank r's experts, in the order of its local ids: a block of E / p (or, dealt round-robin as a
// known mistake deals them, experts r, r + p, r + 2p, ...).
std::vector<int> experts_of(const Routing& routing, int r, bool round_robin = false) {
  std::vector<int> experts;
  for (int j = 0; j < routing.per_rank(); ++j) {
    experts.push_back(round_robin ? r + j * routing.ranks : r * routing.per_rank() + j);
  }
  return experts;
}

// The rows `experts` process, in the order dispatch returns them: by local expert, then source
// rank, then (token, choice); or, as a known mistake leaves them, by source rank first.
std::vector<Arrival> arrivals(const Routing& routing, const std::vector<int>& experts,
                              bool source_first = false) {
  std::vector<Arrival> rows;
  const auto add = [&](int e, int s) {
    for (std::size_t t = 0; t < routing.tokens(s); ++t) {
      for (int c = 0; c < routing.k; ++c) {
        if (routing.ids[s](t, c) == e) rows.push_back({s, t, c, e});
      }
    }
  };
  for (std::size_t outer = 0; outer < (source_first ? routing.ranks : experts.size()); ++outer) {
    for (std::size_t inner = 0; inner < (source_first ? experts.size() : routing.ranks); ++inner) {
      if (source_first) {
        add(experts[inner], static_cast<int>(outer));
      } else {
        add(experts[outer], static_cast<int>(inner));
      }
    }
  }
  return rows;
}
std::vector<Arrival> arrivals(const Routing& routing, int r) {
  return arrivals(routing, experts_of(routing, r));
}

// Rows rank `from` sends rank `to`.
int rows_between(const Routing& routing, int from, int to) {
  int count = 0;
  for (const std::int32_t e : routing.ids[from]) count += routing.owner(e) == to;
  return count;
}

std::string vector_text(const std::vector<int>& values) {
  std::string text = "{";
  for (std::size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "}";
}

// "on 3 rank(s), rank 2, 2 expert(s) per rank, k = 2": where a finding was made.
std::string where(const Routing& routing, int r) {
  return "on " + std::to_string(routing.ranks) + " rank(s), rank " + std::to_string(r) + ", " +
         std::to_string(routing.per_rank()) +
         " expert(s) per rank, k = " + std::to_string(routing.k);
}

// What rows sent once may cost, in the Communicator's bytes (expert_parallel.hpp): the rows sent
// to other ranks, plus 8 bytes for each and `extra`.
template <class T>
long long bytes_allowed(long long rows_to_others, std::size_t hidden, long long extra) {
  return rows_to_others * static_cast<long long>(hidden * sizeof(T) + 8) + extra;
}

// Whether `order` holds each of 0 .. n - 1 once.
bool is_permutation_of_first(const std::vector<std::int64_t>& order, std::size_t n) {
  std::vector<std::int64_t> sorted = order, first(n);
  std::sort(sorted.begin(), sorted.end());
  std::iota(first.begin(), first.end(), 0);
  return sorted == first;
}

// moe_dispatch on one routing: the returned rows, the plan and the bytes, on this rank.
template <class T>
void check_dispatch(dtk::testing::Checks& check, const Routing& routing,
                    dtk::Communicator& ep_comm) {
  const int r = ep_comm.Get_rank(), p = routing.ranks;
  const xt::xtensor<T, 2> x = tokens_of<T>(routing, r);
  const auto before = ep_comm.total_bytes_transferred();
  auto [rows, plan] = dtk::moe_dispatch(x, routing.ids[r], routing.experts, ep_comm);
  const long long sent = static_cast<long long>(ep_comm.total_bytes_transferred() - before);
  const std::string at = "moe_dispatch " + where(routing, r);

  const std::vector<Arrival> expected_rows = arrivals(routing, r);
  const auto rows_of = [&](const std::vector<Arrival>& arrived) {
    xt::xtensor<T, 2> m({arrived.size(), routing.hidden});
    for (std::size_t i = 0; i < arrived.size(); ++i) {
      xt::row(m, i) = xt::row(tokens_of<T>(routing, arrived[i].source), arrived[i].token);
    }
    return m;
  };
  check.close(at + ": the returned rows (by local expert, then source rank, then (token, choice); "
                   "element j of token t's row on rank s is 10000 s + 100 t + j)",
              rows_of(expected_rows), rows, 1e-6, 1e-9,
              {{"the rows grouped by source rank first, then by local expert (as they arrived)",
                rows_of(arrivals(routing, experts_of(routing, r), /*source_first=*/true))},
               {"the experts dealt round-robin (expert e on rank e % p)",
                rows_of(arrivals(routing, experts_of(routing, r, /*round_robin=*/true)))}});

  std::vector<int> send_counts(p), recv_counts(p), per_expert(routing.per_rank(), 0);
  for (int q = 0; q < p; ++q) {
    send_counts[q] = rows_between(routing, r, q);
    recv_counts[q] = rows_between(routing, q, r);
  }
  for (const Arrival& row : expected_rows) ++per_expert[row.expert - r * routing.per_rank()];
  auto check_counts = [&](const std::string& name, const std::vector<int>& want,
                          const std::vector<int>& got) {
    check.that(want == got, at + ": plan." + name + ": expected " + vector_text(want) + ", got " +
                                vector_text(got));
  };
  check_counts("send_counts", send_counts, plan.send_counts);
  check_counts("recv_counts", recv_counts, plan.recv_counts);
  check_counts("tokens_per_local_expert", per_expert, plan.tokens_per_local_expert);

  // send_order: every row once, the rows for rank 0 first, then those for rank 1, ...
  const std::size_t n = routing.tokens(r), k = routing.k;
  std::vector<int> destination;  // of each sent row, by the expected send_counts
  for (int q = 0; q < p; ++q) destination.insert(destination.end(), send_counts[q], q);
  bool grouped = is_permutation_of_first(plan.send_order, n * k);
  for (std::size_t i = 0; grouped && i < n * k; ++i) {
    grouped = routing.owner(routing.ids[r].data()[plan.send_order[i]]) == destination[i];
  }
  check.that(grouped, at + ": plan.send_order must hold each row id (token * k + choice) 0 .. " +
                          std::to_string(n * k - 1) +
                          " once, the ids sent to rank 0 first, then to rank 1, ...");
  check.that(is_permutation_of_first(plan.recv_order, expected_rows.size()),
             at + ": plan.recv_order must hold each returned row's position 0 .. " +
                 std::to_string(expected_rows.size()) + " - 1 once");

  long long to_others = 0;
  for (int q = 0; q < p; ++q) to_others += q == r ? 0 : send_counts[q];
  const long long allowed = bytes_allowed<T>(to_others, routing.hidden, 8LL * routing.experts);
  check.that(sent <= allowed, at + ": sent " + std::to_string(sent) +
                                  " bytes (total_bytes_transferred), more than the " +
                                  std::to_string(allowed) + " that sending its " +
                                  std::to_string(to_others) +
                                  " rows for other ranks once (and their counts) takes");
}

// The gates of rank s's token t, choice c: multiples of 1/8 from 1/8 to 7/8, exact in float.
double gate_of(int s, std::size_t t, int c) { return 0.125 * (1 + (s + t + 3 * c) % 7); }

// What combine's known mistakes with the gates give: combined(weight) is the result with each
// gate g replaced by weight(g).
template <class T, class Combined>
dtk::testing::KnownMistakes<xt::xtensor<T, 2>> gate_mistakes(Combined combined) {
  return {{"the gates ignored (each token the sum of its rows' outputs)",
           combined([](T) { return T(1); })},
          {"each gate applied twice (gates[t, c]^2)", combined([](T g) { return g * g; })}};
}

template <class T>
xt::xtensor<T, 2> gates_of(const Routing& routing, int s) {
  xt::xtensor<T, 2> gates({routing.tokens(s), std::size_t(routing.k)});
  for (std::size_t t = 0; t < gates.shape(0); ++t) {
    for (int c = 0; c < routing.k; ++c) gates(t, c) = static_cast<T>(gate_of(s, t, c));
  }
  return gates;
}

// moe_combine on one routing, given the plan and expert outputs built here: the output row of
// rank s's (token t, choice c) is 10000 s + 100 t + j + 50 c, so a row's value names it.
template <class T>
void check_combine(dtk::testing::Checks& check, const Routing& routing,
                   dtk::Communicator& ep_comm) {
  const int r = ep_comm.Get_rank(), p = routing.ranks;
  const std::size_t h = routing.hidden, n = routing.tokens(r), k = routing.k;
  auto output_row = [&](int s, std::size_t t, int c, std::size_t j) {
    return static_cast<T>(10000 * s + 100 * t + j + 50 * c);
  };
  // The plan dispatch makes: each rank sends its rows by expert, (token, choice) order within.
  dtk::DispatchPlan plan;
  plan.send_counts.resize(p);
  plan.recv_counts.resize(p);
  for (int q = 0; q < p; ++q) {
    plan.send_counts[q] = rows_between(routing, r, q);
    plan.recv_counts[q] = rows_between(routing, q, r);
  }
  for (int e = 0; e < routing.experts; ++e) {
    for (std::size_t id = 0; id < n * k; ++id) {
      if (routing.ids[r].data()[id] == e) plan.send_order.push_back(static_cast<std::int64_t>(id));
    }
  }
  const std::vector<Arrival> rows = arrivals(routing, r);
  plan.tokens_per_local_expert.assign(routing.per_rank(), 0);
  xt::xtensor<T, 2> expert_out({rows.size(), h});
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ++plan.tokens_per_local_expert[rows[i].expert - r * routing.per_rank()];
    for (std::size_t j = 0; j < h; ++j)
      expert_out(i, j) = output_row(rows[i].source, rows[i].token, rows[i].choice, j);
  }
  // Received from rank s: its rows of local expert 0, then 1, ..., each in (token, choice)
  // order; they sit among the returned rows by expert first.
  for (int s = 0; s < p; ++s) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].source == s) plan.recv_order.push_back(static_cast<std::int64_t>(i));
    }
  }

  const xt::xtensor<T, 2> gates = gates_of<T>(routing, r);
  const auto before = ep_comm.total_bytes_transferred();
  const xt::xtensor<T, 2> y = dtk::moe_combine(expert_out, plan, gates, ep_comm);
  const long long sent = static_cast<long long>(ep_comm.total_bytes_transferred() - before);

  // Σ_c weight(gates[t, c]) · (output row of (t, c)): the gates themselves, or as a known
  // mistake applies them.
  const auto combined = [&](auto weight) {
    xt::xtensor<T, 2> sum = xt::zeros<T>({n, h});
    for (std::size_t t = 0; t < n; ++t) {
      for (std::size_t c = 0; c < k; ++c) {
        for (std::size_t j = 0; j < h; ++j)
          sum(t, j) += weight(gates(t, c)) * output_row(r, t, static_cast<int>(c), j);
      }
    }
    return sum;
  };
  const std::string at = "moe_combine " + where(routing, r);
  check.close(at + ": y[t] = sum over c of gates[t, c] * (output row of (t, c)); the output "
                   "row of rank s's (token t, choice c) is 10000 s + 100 t + j + 50 c, gates are "
                   "multiples of 1/8",
              combined([](T g) { return g; }), y, 1e-6, 1e-9, gate_mistakes<T>(combined));
  long long back_to_others = 0;
  for (int q = 0; q < p; ++q) back_to_others += q == r ? 0 : plan.recv_counts[q];
  const long long allowed = bytes_allowed<T>(back_to_others, h, 0);
  check.that(sent <= allowed, at + ": sent " + std::to_string(sent) +
                                  " bytes (total_bytes_transferred), more than the " +
                                  std::to_string(allowed) + " that sending its " +
                                  std::to_string(back_to_others) +
                                  " rows for other ranks back once takes");
}

// Runs check(routing, ep_comm) on groups of 1 to 4 ranks, with 1 and 2 experts per rank and k = 1
// and 2 (k = 2 needs 2 experts at least).
template <class Check>
void on_every_layout(dtk::testing::Checks& check, std::size_t hidden, bool skewed, Check each) {
  report_first_few(check, [&](dtk::testing::Checks& all) {
    for (int size = 1; size <= kRanks; ++size) {
      dtk::Communicator ep_comm = group_of(size);
      const int p = ep_comm.Get_size();
      for (int per_rank = 1; per_rank <= 2; ++per_rank) {
        for (int k = 1; k <= std::min(2, p * per_rank); ++k) {
          each(all, make_routing(p, per_rank, k, hidden, 7, skewed), ep_comm);
        }
      }
    }
  });
}

}  // namespace

// ----------------------------------- 12.1 ---------------------------------------------------

TEST_CASE("Part 12 | local_experts: 8 experts on 4 ranks (the handout's example), 1 to 3 per rank",
          "[part12]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_table(check, 8, 4, {{0, 2}, {2, 4}, {4, 6}, {6, 8}});
    check_table(check, 4, 4, {{0, 1}, {1, 2}, {2, 3}, {3, 4}});
    check_table(check, 9, 3, {{0, 3}, {3, 6}, {6, 9}});
    check_table(check, 6, 1, {{0, 6}});
  });
}

TEST_CASE("Part 12 | local_experts: bad arguments throw std::invalid_argument", "[part12]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    expect_invalid_argument(check, "local_experts(6, 4, 0) (4 does not divide 6)",
                            [] { dtk::local_experts(6, 4, 0); });
    expect_invalid_argument(check, "local_experts(8, 4, 4) (ep_idx 4 of 4 ranks)",
                            [] { dtk::local_experts(8, 4, 4); });
    expect_invalid_argument(check, "local_experts(8, 4, -1) (ep_idx -1)",
                            [] { dtk::local_experts(8, 4, -1); });
    expect_invalid_argument(check, "local_experts(8, 0, 0) (ep_size 0)",
                            [] { dtk::local_experts(8, 0, 0); });
    expect_invalid_argument(check, "local_experts(0, 1, 0) (no expert)",
                            [] { dtk::local_experts(0, 1, 0); });
  });
}

// ----------------------------------- 12.2 ---------------------------------------------------

TEMPLATE_TEST_CASE(
    "Part 12 | moe_dispatch: every row on its expert's rank, grouped by local expert, then "
    "source; the plan's counts; each row sent once; groups of 1 to 4 ranks, 1 and 2 experts per "
    "rank, k = 1 and 2",
    "[part12]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // 33 columns: a row is worth more than the 8 bytes allowed for its bookkeeping.
    on_every_layout(
        check, 33, false,
        [](dtk::testing::Checks& each, const Routing& routing, dtk::Communicator& ep_comm) {
          check_dispatch<TestType>(each, routing, ep_comm);
        });
  });
}

TEMPLATE_TEST_CASE(
    "Part 12 | moe_dispatch: skewed routing, every token's first choice the last expert (ranks "
    "that receive no row return (0, h))",
    "[part12]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    on_every_layout(
        check, 5, true,
        [](dtk::testing::Checks& each, const Routing& routing, dtk::Communicator& ep_comm) {
          check_dispatch<TestType>(each, routing, ep_comm);
        });
  });
}

TEMPLATE_TEST_CASE(
    "Part 12 | moe_dispatch: an expert id outside [0, E) throws std::invalid_argument", "[part12]",
    float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    // Every rank passes the same bad id, so all of them throw before communicating.
    const xt::xtensor<TestType, 2> x = xt::zeros<TestType>({2, 3});
    const xt::xtensor<std::int32_t, 2> ids = {{0}, {8}};
    expect_invalid_argument(check, "moe_dispatch(x, ids with expert 8 of 8, 8, 4 ranks)",
                            [&] { dtk::moe_dispatch(x, ids, 8, world); });
  });
}

// ----------------------------------- 12.3 ---------------------------------------------------

TEMPLATE_TEST_CASE(
    "Part 12 | moe_combine: every output back to its token, weighted by its gate; each row "
    "sent back once; groups of 1 to 4 ranks, 1 and 2 experts per rank, k = 1 and 2",
    "[part12]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    on_every_layout(
        check, 33, false,
        [](dtk::testing::Checks& each, const Routing& routing, dtk::Communicator& ep_comm) {
          check_combine<TestType>(each, routing, ep_comm);
        });
  });
}

TEMPLATE_TEST_CASE(
    "Part 12 | moe_combine: skewed routing, every token's first choice the last expert (ranks "
    "with no row send nothing back)",
    "[part12]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    on_every_layout(
        check, 5, true,
        [](dtk::testing::Checks& each, const Routing& routing, dtk::Communicator& ep_comm) {
          check_combine<TestType>(each, routing, ep_comm);
        });
  });
}

TEMPLATE_TEST_CASE(
    "Part 12 | moe_combine: gates that do not fit the plan throw std::invalid_argument", "[part12]",
    float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    // A plan of 2 rows kept on this rank, and gates for 3 rows: every rank throws.
    dtk::DispatchPlan plan;
    plan.send_counts = plan.recv_counts = std::vector<int>(kRanks, 0);
    plan.send_counts[world.Get_rank()] = plan.recv_counts[world.Get_rank()] = 2;
    plan.tokens_per_local_expert = {2};
    plan.send_order = plan.recv_order = {0, 1};
    const xt::xtensor<TestType, 2> expert_out = xt::zeros<TestType>({2, 3});
    const xt::xtensor<TestType, 2> gates = xt::ones<TestType>({3, 1});
    expect_invalid_argument(check,
                            "moe_combine(expert_out, a plan of 2 rows, gates (3, 1), 4 ranks)",
                            [&] { dtk::moe_combine(expert_out, plan, gates, world); });
  });
}

// ----------------------------------- 12.2 and 12.3 together ---------------------------------

// Dispatch, experts that scale their rows, combine: the layer's forward as the model runs it.
template <class T>
void check_round_trip(dtk::testing::Checks& check, const Routing& routing,
                      dtk::Communicator& ep_comm) {
  const int r = ep_comm.Get_rank();
  const xt::xtensor<T, 2> x = tokens_of<T>(routing, r);
  auto [rows, plan] = dtk::moe_dispatch(x, routing.ids[r], routing.experts, ep_comm);
  // Local expert j multiplies its rows by its expert id + 1.
  std::size_t first = 0;
  for (std::size_t j = 0; j < plan.tokens_per_local_expert.size() && first <= rows.shape(0); ++j) {
    const std::size_t count =
        std::min<std::size_t>(plan.tokens_per_local_expert[j], rows.shape(0) - first);
    const T scale = static_cast<T>(r * routing.per_rank() + j + 1);
    for (std::size_t i = first; i < first + count; ++i) xt::row(rows, i) *= scale;
    first += count;
  }
  const xt::xtensor<T, 2> gates = gates_of<T>(routing, r);
  const xt::xtensor<T, 2> y = dtk::moe_combine(rows, plan, gates, ep_comm);
  const auto combined = [&](auto weight) {
    xt::xtensor<T, 2> sum = xt::zeros<T>(x.shape());
    for (std::size_t t = 0; t < x.shape(0); ++t) {
      for (int c = 0; c < routing.k; ++c) {
        xt::row(sum, t) += weight(gates(t, c)) * T(routing.ids[r](t, c) + 1) * xt::row(x, t);
      }
    }
    return sum;
  };
  check.close("moe_dispatch, then expert e scaling its rows by e + 1, then moe_combine, " +
                  where(routing, r) + ": y[t] = sum over c of gates[t, c] (e_c + 1) x[t]",
              combined([](T g) { return g; }), y, 1e-6, 1e-9, gate_mistakes<T>(combined));
}

TEMPLATE_TEST_CASE(
    "Part 12 | moe_dispatch then moe_combine: the layer's forward (experts scaling their rows), "
    "groups of 1 to 4 ranks",
    "[part12]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    on_every_layout(
        check, 4, false,
        [](dtk::testing::Checks& each, const Routing& routing, dtk::Communicator& ep_comm) {
          check_round_trip<TestType>(each, routing, ep_comm);
        });
  });
}

TEMPLATE_TEST_CASE(
    "Part 12 | moe_dispatch then moe_combine: rows of more than 1 MB each way (no deadlock)",
    "[part12]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    // 8 experts, k = 2, 33 to 39 tokens a rank, rows of 4096 values: about 2 MB sent per rank.
    const Routing routing = make_routing(kRanks, 2, 2, 4096, 33, false);
    check_round_trip<TestType>(check, routing, world);
  });
}
