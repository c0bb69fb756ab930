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

// Helpers you write (argument checks, counts of rows to counts of elements, ...) go in an
// anonymous namespace here, so that they stay private to this file:
// namespace {
// ...
// }  // namespace

// ----------------------------------- 12.1 -------------------------------------------------------

std::pair<int, int> local_experts(int num_experts, int ep_size, int ep_idx) {
  // TODO (Part 12.1): reject num_experts < 1, ep_size < 1, an ep_size that does not divide
  // num_experts, and an ep_idx outside 0 .. ep_size - 1, with std::invalid_argument (say which
  // argument and its value). Then each rank holds E / ep_size consecutive experts, rank 0 the
  // first: return {ep_idx * E / ep_size, (ep_idx + 1) * E / ep_size}. 8 experts on 4 ranks:
  // {0, 2}, {2, 4}, {4, 6}, {6, 8}.
  throw NotImplemented("local_experts", "expert_parallel/expert_parallel.cpp");
}

// ----------------------------------- 12.2 -------------------------------------------------------

template <class T>
std::pair<xt::xtensor<T, 2>, DispatchPlan> moe_dispatch(
    const xt::xtensor<T, 2>& x, const xt::xtensor<std::int32_t, 2>& expert_ids, int num_experts,
    Communicator& ep_comm) {
  // TODO (Part 12.2): every (token, choice) row to the rank holding its expert, once.
  //  Let p = ep_comm.Get_size(), E = num_experts, m = E / p (experts per rank; local_experts
  //  checks that p divides E), N = x.shape(0), h = x.shape(1), k = expert_ids.shape(1). Row
  //  id = token * k + choice is the token's row of x, bound for expert expert_ids(token, choice),
  //  which lives on rank expert / m. Reject expert ids outside [0, E).
  //  1. Count this rank's rows per expert (E counts), and order its row ids by expert, keeping
  //     (token, choice) order within an expert (a counting sort): that is plan.send_order.
  //     Experts are dealt out in rank order, so the rows for rank q are one block.
  //  2. The counts first: nobody else knows how many rows you send them. One ep_comm.Alltoall of
  //     the E counts (a std::vector<int> of E values is a buffer too): block q, the counts of
  //     rank q's m experts, goes to rank q, and you receive block s from each rank s: how many
  //     rows of each of YOUR m experts rank s sends you. From the counts sent and received,
  //     fill plan.send_counts and plan.recv_counts (p values each, in rows) and
  //     plan.tokens_per_local_expert (m values).
  //  3. The rows: copy x[id / k] for each id of send_order into a (N * k, h) send buffer, and
  //     ONE ep_comm.Alltoallv into a (Σ recv_counts, h) buffer. Its counts are in ELEMENTS:
  //     rows * h.
  //  4. What arrived from rank s is its rows of your local expert 0, then of 1, ... (step 1's
  //     order); the function returns them grouped by local expert first, then by source rank:
  //     local expert 0's rows from rank 0, from rank 1, ..., then local expert 1's. Record where
  //     each received row goes in plan.recv_order (received row i -> returned row
  //     plan.recv_order[i]) and copy it there.
  //  Ranks may hold different numbers of tokens, N may be 0, and a rank may receive no rows at
  //  all (return a (0, h) tensor then): every rank still makes the same calls.
  throw NotImplemented("moe_dispatch", "expert_parallel/expert_parallel.cpp");
}

// ----------------------------------- 12.3 -------------------------------------------------------

template <class T>
xt::xtensor<T, 2> moe_combine(const xt::xtensor<T, 2>& expert_out, const DispatchPlan& plan,
                              const xt::xtensor<T, 2>& gates, Communicator& ep_comm) {
  // TODO (Part 12.3): dispatch, the other way round, then the gates.
  //  Let N = gates.shape(0), k = gates.shape(1), h = expert_out.shape(1). Reject a plan that
  //  does not fit: expert_out.shape(0) and plan.recv_order.size() must be Σ plan.recv_counts,
  //  and plan.send_order.size() must be N * k.
  //  1. Put each output row back in the order its row arrived: row i of a (Σ recv_counts, h)
  //     send buffer is expert_out's row plan.recv_order[i]. Rows from rank s are then one block
  //     again, in the order rank s sent them.
  //  2. ONE ep_comm.Alltoallv back: you send plan.recv_counts rows to each rank and receive
  //     plan.send_counts rows from each (in elements: rows * h), into a (N * k, h) buffer.
  //  3. Row i of what came back is the output of row id = plan.send_order[i]: token id / k,
  //     choice id % k. y (N, h) starts at 0, and y[token] += gates(token, choice) * that row.
  //     Each output is weighted once, by its own gate; a token's k rows are summed.
  throw NotImplemented("moe_combine", "expert_parallel/expert_parallel.cpp");
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
