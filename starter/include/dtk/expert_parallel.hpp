// Part 12 (assignment 3): expert parallelism, a mixture of experts spread over ranks. You
// implement these functions in expert_parallel/expert_parallel.cpp.
//
// A mixture-of-experts layer (include/dtk/gpt/mixture_of_experts.hpp) replaces a block's MLP by
// E expert MLPs and a router. The router picks k distinct experts for each of a rank's N tokens
// (expert_ids, (N, k)) and weights their outputs with gates (N, k). Each (token, choice) pair is
// one row of its own, numbered token · k + choice: a token with k = 2 is two rows, one per
// expert it chose. Expert parallelism spreads the E experts over the ep_size ranks of ep_comm,
// E / ep_size each, and moves every row to the rank holding its expert, then back:
//
//   moe_dispatch  x (N, h), expert_ids (N, k)  ──Alltoallv──▶  the rows of this rank's experts,
//                 grouped by local expert, and the DispatchPlan of how they came
//   (the provided model runs each local expert's MLP on its rows)
//   moe_combine   the experts' outputs, same rows  ──Alltoallv back──▶  y (N, h),
//                 y[i] = Σ_c gates[i, c] · (output of the row of (token i, choice c))
//
// Conventions used throughout:
//   - p = ep_comm.Get_size() (ep_size), r = ep_comm.Get_rank() (ep_idx), E = num_experts; p
//     divides E, and rank q holds the E/p experts [q · E/p, (q + 1) · E/p) (12.1): expert e
//     lives on rank e / (E/p). "Local expert j" of rank r is expert r · E/p + j;
//   - a row is h values (h = x.shape(1)) and travels whole; the Communicator's counts are in
//     elements, so n rows are n · h elements;
//   - ranks may hold different numbers of tokens (N may even be 0 on some), and any rank's tokens
//     may choose any experts: only the sender knows how many rows it sends each rank;
//   - every rank of ep_comm calls moe_dispatch (and moe_combine) together, with the same E;
//   - a bad argument throws std::invalid_argument with a message naming the function and the
//     bad value.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "dtk/communicator.hpp"
#include "dtk/not_implemented.hpp"  // what the stubs throw until you write them

namespace dtk {

// ---------------------------------------------------------------------------------------------
// 12.1 Who holds which experts
// ---------------------------------------------------------------------------------------------

// The experts [begin, end) rank ep_idx of ep_size holds: E/p consecutive experts each, rank 0
// the first ones. Example: 8 experts on 4 ranks: {0, 2}, {2, 4}, {4, 6}, {6, 8}.
// Requires num_experts >= 1, ep_size >= 1 dividing num_experts, and 0 <= ep_idx < ep_size.
std::pair<int, int> local_experts(int num_experts, int ep_size, int ep_idx);

// ---------------------------------------------------------------------------------------------
// 12.2 - 12.3 Moving the rows. T is float or double.
// ---------------------------------------------------------------------------------------------

// What moe_dispatch did, for moe_combine (and the backward pass) to undo. Every field has one
// meaning, so that any dispatch and any combine that follow it work together:
struct DispatchPlan {
  // Rows this rank sent to each rank of ep_comm (itself included): p values, summing to N · k.
  std::vector<int> send_counts;
  // Rows this rank received from each rank: p values, summing to the rows dispatch returned.
  std::vector<int> recv_counts;
  // Rows each of this rank's E/p experts got (E/p values, local expert 0 first): the returned
  // rows are that many of local expert 0's, then local expert 1's, ...
  std::vector<int> tokens_per_local_expert;
  // The (token · k + choice) of each row this rank sent, in the order it sent them (N · k
  // values): the rows for rank 0 first, then those for rank 1, ...
  std::vector<std::int64_t> send_order;
  // Where each row this rank received sits in the returned rows (Σ recv_counts values): the
  // rows received from rank 0 first, each block in the order its sender sent it.
  std::vector<std::int64_t> recv_order;
};

// Sends every (token, choice) row of x to the rank holding its expert, once, and returns the
// rows this rank's experts must process, with the plan.
//   x (N, h): this rank's tokens; expert_ids (N, k): the experts each token chose, distinct
//   within a token, each in [0, num_experts).
// Returned rows: (Σ recv_counts, h), grouped by local expert (local expert 0's rows first); within
// one expert, by source rank (rank 0's first); within one source, in (token · k + choice) order.
// Each is a copy of its token's row of x. The counts travel first (each rank tells each other
// how many rows of each of its experts are coming), then the rows, in one Alltoallv: no rank
// receives a row its experts do not process. "Once" is measured: the tests allow the bytes of
// the rows this rank sends other ranks, plus 8 bytes per such row and 8 · E bytes (room for the
// counts, and for an expert id per row should you send them).
template <class T>
std::pair<xt::xtensor<T, 2>, DispatchPlan> moe_dispatch(
    const xt::xtensor<T, 2>& x, const xt::xtensor<std::int32_t, 2>& expert_ids, int num_experts,
    Communicator& ep_comm);

// The way back: expert_out holds one output row per row dispatch returned, in the same order
// ((Σ plan.recv_counts, h)); each goes back to the rank its row came from (one Alltoallv, the
// counts of the plan swapped), where it is weighted into its token:
//   y[i] = Σ_c gates[i, c] · (the output row of (token i, choice c)),   y (N, h), gates (N, k).
// The rows of a token are summed; nothing else is (no sum over ranks, no division by k). Rows
// go back once: the tests allow the bytes of the rows this rank sends other ranks, plus 8 bytes
// per such row.
template <class T>
xt::xtensor<T, 2> moe_combine(const xt::xtensor<T, 2>& expert_out, const DispatchPlan& plan,
                              const xt::xtensor<T, 2>& gates, Communicator& ep_comm);

}  // namespace dtk
