// Part 12: expert parallelism, a mixture of experts spread over ranks.
// Declared, with the exact contract of every function, in include/dtk/expert_parallel.hpp.
// Only ep_comm.Alltoall, ep_comm.Alltoallv and point-to-point calls (Send, Recv, Sendrecv) may
// move data here.
#include <dtk/expert_parallel.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dtk {

namespace {

void require(bool ok, const std::string& function, const std::string& what) {
  if (!ok) throw std::invalid_argument(function + ": " + what);
}

// Rows -> elements, for the Communicator: a row is `width` values.
std::vector<int> elements(const std::vector<int>& rows, std::size_t width) {
  std::vector<int> counts(rows.size());
  for (std::size_t q = 0; q < rows.size(); ++q) counts[q] = rows[q] * static_cast<int>(width);
  return counts;
}

// Where each block of `counts` starts: 0, counts[0], counts[0] + counts[1], ...
std::vector<int> starts_of(const std::vector<int>& counts) {
  std::vector<int> starts(counts.size(), 0);
  std::partial_sum(counts.begin(), counts.end() - 1, starts.begin() + 1);
  return starts;
}

int sum_of(const std::vector<int>& counts) {
  return std::accumulate(counts.begin(), counts.end(), 0);
}

}  // namespace

// ----------------------------------- 12.1 -------------------------------------------------------

std::pair<int, int> local_experts(int num_experts, int ep_size, int ep_idx) {
  const std::string function = "local_experts";
  require(num_experts >= 1, function,
          "num_experts must be >= 1, got " + std::to_string(num_experts));
  require(ep_size >= 1, function, "ep_size must be >= 1, got " + std::to_string(ep_size));
  require(num_experts % ep_size == 0, function,
          "ep_size " + std::to_string(ep_size) + " does not divide num_experts " +
              std::to_string(num_experts));
  require(0 <= ep_idx && ep_idx < ep_size, function,
          "ep_idx must be in 0 .. ep_size - 1 = " + std::to_string(ep_size - 1) + ", got " +
              std::to_string(ep_idx));
  const int per_rank = num_experts / ep_size;
  return {ep_idx * per_rank, (ep_idx + 1) * per_rank};
}

// ----------------------------------- 12.2 -------------------------------------------------------

template <class T>
std::pair<xt::xtensor<T, 2>, DispatchPlan> moe_dispatch(
    const xt::xtensor<T, 2>& x, const xt::xtensor<std::int32_t, 2>& expert_ids, int num_experts,
    Communicator& ep_comm) {
  const std::string function = "moe_dispatch";
  const int p = ep_comm.Get_size();
  const auto [first, last] = local_experts(num_experts, p, ep_comm.Get_rank());
  const int per_rank = last - first;
  const std::size_t n = x.shape(0), width = x.shape(1), k = expert_ids.shape(1);
  require(expert_ids.shape(0) == n, function,
          "x has " + std::to_string(n) + " rows but expert_ids has " +
              std::to_string(expert_ids.shape(0)));

  // This rank's rows by expert, stable (in (token · k + choice) order within an expert). Experts
  // are dealt out in rank order, so the rows for rank q are one block: its experts' rows.
  std::vector<int> rows_per_expert(num_experts, 0);
  for (const std::int32_t e : expert_ids) {
    require(
        0 <= e && e < num_experts, function,
        "expert id " + std::to_string(e) + " is outside [0, " + std::to_string(num_experts) + ")");
    ++rows_per_expert[e];
  }
  std::vector<int> next = starts_of(rows_per_expert);
  DispatchPlan plan;
  plan.send_order.resize(n * k);
  for (std::size_t row = 0; row < n * k; ++row) {
    plan.send_order[next[expert_ids.data()[row]]++] = static_cast<std::int64_t>(row);
  }

  // The counts first: rank q learns how many rows of each of its experts come from each rank.
  // from_rank[s · per_rank + j]: rows of local expert j that rank s sends here.
  std::vector<int> from_rank(num_experts);
  ep_comm.Alltoall(rows_per_expert, from_rank);
  plan.send_counts.assign(p, 0);
  plan.recv_counts.assign(p, 0);
  plan.tokens_per_local_expert.assign(per_rank, 0);
  for (int q = 0; q < p; ++q) {
    for (int j = 0; j < per_rank; ++j) {
      plan.send_counts[q] += rows_per_expert[q * per_rank + j];
      plan.recv_counts[q] += from_rank[q * per_rank + j];
      plan.tokens_per_local_expert[j] += from_rank[q * per_rank + j];
    }
  }

  // The rows, once each, in send order.
  xt::xtensor<T, 2> sent({n * k, width});
  for (std::size_t i = 0; i < n * k; ++i) {
    const std::size_t token = plan.send_order[i] / k;
    std::copy_n(x.data() + token * width, width, sent.data() + i * width);
  }
  const std::size_t received_rows = sum_of(plan.recv_counts);
  xt::xtensor<T, 2> received({received_rows, width});
  ep_comm.Alltoallv(sent, elements(plan.send_counts, width), received,
                    elements(plan.recv_counts, width));

  // Rank s's block holds its rows of local expert 0, then 1, ...; the returned rows hold local
  // expert 0's rows of rank 0, of rank 1, ..., then local expert 1's.
  std::vector<int> at = starts_of(plan.tokens_per_local_expert);  // next free row of expert j
  plan.recv_order.clear();
  for (int s = 0; s < p; ++s) {
    for (int j = 0; j < per_rank; ++j) {
      for (int row = 0; row < from_rank[s * per_rank + j]; ++row)
        plan.recv_order.push_back(at[j]++);
    }
  }
  xt::xtensor<T, 2> rows({received_rows, width});
  for (std::size_t i = 0; i < received_rows; ++i) {
    std::copy_n(received.data() + i * width, width, rows.data() + plan.recv_order[i] * width);
  }
  return {std::move(rows), std::move(plan)};
}

// ----------------------------------- 12.3 -------------------------------------------------------

template <class T>
xt::xtensor<T, 2> moe_combine(const xt::xtensor<T, 2>& expert_out, const DispatchPlan& plan,
                              const xt::xtensor<T, 2>& gates, Communicator& ep_comm) {
  const std::string function = "moe_combine";
  const int p = ep_comm.Get_size();
  const std::size_t n = gates.shape(0), k = gates.shape(1), width = expert_out.shape(1);
  require(plan.send_counts.size() == static_cast<std::size_t>(p) &&
              plan.recv_counts.size() == static_cast<std::size_t>(p),
          function,
          "the plan's counts are for another number of ranks than ep_comm's " + std::to_string(p));
  const std::size_t received_rows = sum_of(plan.recv_counts);
  require(expert_out.shape(0) == received_rows && plan.recv_order.size() == received_rows, function,
          "expert_out has " + std::to_string(expert_out.shape(0)) +
              " rows, but the plan received " + std::to_string(received_rows));
  require(plan.send_order.size() == n * k &&
              static_cast<std::size_t>(sum_of(plan.send_counts)) == n * k,
          function,
          "gates (" + std::to_string(n) + ", " + std::to_string(k) + ") need a plan of " +
              std::to_string(n * k) + " sent rows, got " + std::to_string(plan.send_order.size()));

  // Each row back to the rank it came from, in the order it came: received row i is expert_out's
  // row recv_order[i].
  xt::xtensor<T, 2> back({received_rows, width});
  for (std::size_t i = 0; i < received_rows; ++i) {
    std::copy_n(expert_out.data() + plan.recv_order[i] * width, width, back.data() + i * width);
  }
  xt::xtensor<T, 2> returned({n * k, width});
  ep_comm.Alltoallv(back, elements(plan.recv_counts, width), returned,
                    elements(plan.send_counts, width));

  // Row i of `returned` is the output of (token, choice) send_order[i].
  xt::xtensor<T, 2> y = xt::zeros<T>({n, width});
  for (std::size_t i = 0; i < n * k; ++i) {
    const std::int64_t id = plan.send_order[i];
    const T gate = gates.data()[id];  // gates(token, choice), id = token · k + choice
    const T* out = returned.data() + i * width;
    T* token_row = y.data() + (id / k) * width;
    for (std::size_t c = 0; c < width; ++c) token_row[c] += gate * out[c];
  }
  return y;
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests and the provided model link against exactly these.
// -------------------------------------------------------------------------------------------
#define DTK_INSTANTIATE_EXPERT_PARALLEL(T)                                                 \
  template std::pair<xt::xtensor<T, 2>, DispatchPlan> moe_dispatch<T>(                     \
      const xt::xtensor<T, 2>&, const xt::xtensor<std::int32_t, 2>&, int, Communicator&);  \
  template xt::xtensor<T, 2> moe_combine<T>(const xt::xtensor<T, 2>&, const DispatchPlan&, \
                                            const xt::xtensor<T, 2>&, Communicator&);

DTK_INSTANTIATE_EXPERT_PARALLEL(float)
DTK_INSTANTIATE_EXPERT_PARALLEL(double)

}  // namespace dtk
