// Moving a mixture of experts' rows to their experts and back. Each token chooses k distinct
// experts; every (token, choice) pair is one row, numbered token · k + choice. Dispatch groups
// the rows by the expert that processes them; combine brings the experts' outputs back to their
// tokens, weighted by the gates. On one rank both only reorder rows (moe_dispatch_one_rank,
// moe_combine_one_rank); Part 12's moe_dispatch and moe_combine send the rows to the ranks
// holding their experts, with all-to-all.
#pragma once

#include <cstdint>
#include <utility>

#include <xtensor/xtensor.hpp>

#include "dtk/expert_parallel.hpp"  // DispatchPlan

namespace dtk::gpt {

// One rank, all E experts: returns the rows x[token] of every (token, choice), grouped by
// expert (expert 0's first), within an expert in (token · k + choice) order, and the plan
// (send_order: that order; recv_order: 0, 1, 2, ...). x (N, h), expert_ids (N, k) in [0, E).
template <class T>
std::pair<xt::xtensor<T, 2>, DispatchPlan> moe_dispatch_one_rank(
    const xt::xtensor<T, 2>& x, const xt::xtensor<std::int32_t, 2>& expert_ids, int num_experts);

// y[i] = Σ_c gates[i, c] · out(i, c), (N, h), where out(i, c) is the row of expert_out that
// dispatch made of (token i, choice c). gates (N, k).
template <class T>
xt::xtensor<T, 2> moe_combine_one_rank(const xt::xtensor<T, 2>& expert_out,
                                       const DispatchPlan& plan, const xt::xtensor<T, 2>& gates);

}  // namespace dtk::gpt
