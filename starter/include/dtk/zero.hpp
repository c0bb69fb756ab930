// Part 9 (assignment 2): ZeRO, sharded data parallelism (Rajbhandari et al., "ZeRO: Memory
// Optimizations Toward Training Trillion Parameter Models", 2020). You implement these functions
// in zero/zero.cpp.
//
// Plain data parallelism keeps a whole copy of the model states on every rank: the parameters,
// their gradients and the optimizer's states. ZeRO keeps one copy in total instead, cut into
// dp_size shards, one per rank of the data-parallel group:
//   stage 0  nothing sharded (plain data parallelism)
//   stage 1  the optimizer states sharded (ZeRO-1)
//   stage 2  the gradients too (ZeRO-2)
//   stage 3  the parameters too (ZeRO-3)
//
// Conventions used throughout:
//   - the model states are seen as flat vectors of numel values: all parameters one after
//     another (include/dtk/training/flat_parameters.hpp makes them for the kit's MLP), and the
//     gradient in the same order;
//   - p is dp_comm.Get_size() (dp_size), r is dp_comm.Get_rank() (dp_idx), and
//     s = ceil(numel / p) is the shard size: every rank stores s values, the last ranks' shards
//     end in zeros (padding) when p does not divide numel;
//   - every rank of dp_comm calls the collective functions with the same numel;
//   - a bad argument throws std::invalid_argument with a message naming the function and the
//     bad value.
#pragma once

#include <cstddef>
#include <utility>

#include <xtensor/xtensor.hpp>

#include "dtk/communicator.hpp"
#include "dtk/not_implemented.hpp"  // what the stubs throw until you write them

namespace dtk {

// ---------------------------------------------------------------------------------------------
// 9.1 How much memory the model states take
// ---------------------------------------------------------------------------------------------

// The bytes of model states one rank holds when a model of num_params parameters (Ψ) trains on
// dp_size ranks (N_d) at ZeRO stage `stage`, with the ZeRO paper's mixed-precision Adam: per
// parameter, 2 bytes of fp16 parameter, 2 bytes of fp16 gradient and k bytes of optimizer
// states (k = 12: an fp32 copy of the parameter, the momentum and the variance, 4 bytes each).
//   stage 0: (2 + 2 + k) Ψ                 stage 2: 2 Ψ + (2 + k) Ψ / N_d
//   stage 1: (2 + 2) Ψ + k Ψ / N_d         stage 3: (2 + 2 + k) Ψ / N_d
// Example (the paper's Figure 1): Ψ = 7.5e9, N_d = 64, k = 12 give 120e9, 31.40625e9,
// 16.640625e9 and 1.875e9 bytes for stages 0 to 3.
// Requires num_params >= 0, dp_size >= 1, 0 <= stage <= 3 and k >= 0.
double zero_memory_per_rank(double num_params, int dp_size, int stage, double k = 12);

// ---------------------------------------------------------------------------------------------
// 9.2 Who owns what
// ---------------------------------------------------------------------------------------------

// The elements [begin, end) of a flat vector of numel values that rank dp_idx of dp_size owns:
// with s = ceil(numel / dp_size), begin = min(dp_idx * s, numel) and
// end = min((dp_idx + 1) * s, numel). Shards are contiguous and in rank order; the last ones
// are shorter than s, or empty (begin == end == numel), when dp_size does not divide numel.
// Example: numel = 10, dp_size = 4 (s = 3): {0, 3}, {3, 6}, {6, 9}, {9, 10}.
// Requires dp_size >= 1 and 0 <= dp_idx < dp_size.
std::pair<std::size_t, std::size_t> zero_shard_range(std::size_t numel, int dp_size, int dp_idx);

// ---------------------------------------------------------------------------------------------
// 9.3 - 9.5 The collectives of a ZeRO step. T is float or double.
// ---------------------------------------------------------------------------------------------

// ZeRO-1. flat_grad: this rank's gradient (numel values). Returns this rank's shard of the
// gradient SUMMED over dp_comm (not averaged: as collect_weight_grad in Part 6): s values,
// element j being the sum's element begin + j, and 0 where begin + j >= numel (padding).
// One dp_comm.Allreduce of the numel values, then keep this rank's zero_shard_range.
template <class T>
xt::xtensor<T, 1> zero1_grad_shard(const xt::xtensor<T, 1>& flat_grad, Communicator& dp_comm);

// ZeRO-2 (and ZeRO-3): the same shard as zero1_grad_shard, in ONE dp_comm.Reduce_scatter of
// flat_grad zero-padded to p * s values: rank r receives the sum of block r, elements
// [r * s, (r + 1) * s). It sends half the bytes of ZeRO-1's Allreduce, and no rank ever holds
// the whole summed gradient.
template <class T>
xt::xtensor<T, 1> zero2_grad_shard(const xt::xtensor<T, 1>& flat_grad, Communicator& dp_comm);

// The other way: every rank passes its shard (s values, padding included, s computed from
// numel), and every rank gets the whole flat vector back: numel values, rank 0's shard first,
// the padding dropped. ONE dp_comm.Allgather of the s values. ZeRO-1 and ZeRO-2 call it after
// each rank has updated its shard of the parameters; ZeRO-3 before every use of a layer.
// Requires shard.size() == s.
template <class T>
xt::xtensor<T, 1> zero_gather_params(const xt::xtensor<T, 1>& shard, std::size_t numel,
                                     Communicator& dp_comm);

}  // namespace dtk
