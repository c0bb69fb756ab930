#include "dtk/gpt/moe_routing.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace dtk::gpt {

template <class T>
std::pair<xt::xtensor<T, 2>, DispatchPlan> moe_dispatch_one_rank(
    const xt::xtensor<T, 2>& x, const xt::xtensor<std::int32_t, 2>& expert_ids, int num_experts) {
  const std::size_t n = expert_ids.shape(0), k = expert_ids.shape(1), width = x.shape(1);
  if (x.shape(0) != n) {
    throw std::invalid_argument("moe_dispatch: " + std::to_string(x.shape(0)) + " rows of x but " +
                                std::to_string(n) + " rows of expert_ids");
  }
  DispatchPlan plan;
  plan.tokens_per_local_expert.assign(num_experts, 0);
  for (const std::int32_t e : expert_ids) {
    if (e < 0 || e >= num_experts) {
      throw std::invalid_argument("moe_dispatch: expert id " + std::to_string(e) + " outside [0, " +
                                  std::to_string(num_experts) + ")");
    }
    ++plan.tokens_per_local_expert[e];
  }
  // A counting sort by expert, stable: within an expert, rows stay in (token · k + choice) order.
  std::vector<std::size_t> next(num_experts, 0);
  std::partial_sum(plan.tokens_per_local_expert.begin(), plan.tokens_per_local_expert.end() - 1,
                   next.begin() + 1);
  plan.send_order.resize(n * k);
  for (std::size_t row = 0; row < n * k; ++row) {
    plan.send_order[next[expert_ids.data()[row]]++] = static_cast<std::int64_t>(row);
  }
  plan.recv_order.resize(n * k);
  std::iota(plan.recv_order.begin(), plan.recv_order.end(), 0);
  plan.send_counts = {static_cast<int>(n * k)};
  plan.recv_counts = plan.send_counts;

  xt::xtensor<T, 2> rows({n * k, width});
  for (std::size_t r = 0; r < n * k; ++r) {
    const std::size_t token = plan.send_order[r] / k;
    std::copy_n(x.data() + token * width, width, rows.data() + r * width);
  }
  return {std::move(rows), std::move(plan)};
}

template <class T>
xt::xtensor<T, 2> moe_combine_one_rank(const xt::xtensor<T, 2>& expert_out,
                                       const DispatchPlan& plan, const xt::xtensor<T, 2>& gates) {
  const std::size_t n = gates.shape(0), k = gates.shape(1), width = expert_out.shape(1);
  if (expert_out.shape(0) != n * k || plan.send_order.size() != n * k) {
    throw std::invalid_argument("moe_combine: " + std::to_string(expert_out.shape(0)) +
                                " expert rows and a plan of " +
                                std::to_string(plan.send_order.size()) + " for gates (" +
                                std::to_string(n) + ", " + std::to_string(k) + ")");
  }
  xt::xtensor<T, 2> y = xt::zeros<T>({n, width});
  // On one rank the returned rows are the sent ones: row r is (token, choice) send_order[r].
  for (std::size_t r = 0; r < n * k; ++r) {
    const std::size_t id = plan.send_order[r];
    const T gate = gates.data()[id];  // gates(token, choice), id = token · k + choice
    const T* out = expert_out.data() + r * width;
    T* row = y.data() + (id / k) * width;
    for (std::size_t c = 0; c < width; ++c) row[c] += gate * out[c];
  }
  return y;
}

#define DTK_GPT_INSTANTIATE(T)                                                                   \
  template std::pair<xt::xtensor<T, 2>, DispatchPlan> moe_dispatch_one_rank(                     \
      const xt::xtensor<T, 2>&, const xt::xtensor<std::int32_t, 2>&, int);                       \
  template xt::xtensor<T, 2> moe_combine_one_rank(const xt::xtensor<T, 2>&, const DispatchPlan&, \
                                                  const xt::xtensor<T, 2>&);
DTK_GPT_INSTANTIATE(float)
DTK_GPT_INSTANTIATE(double)

}  // namespace dtk::gpt
