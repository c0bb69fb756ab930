// Parts 2, 3 and 6: the communication of model (tensor) parallel and data parallel training.
// You implement these functions in model/func_impl.cpp.
//
// The model is an MLP, fc1 (in -> hidden) then ReLU then fc2 (hidden -> out); a layer computes
// out = x · W + b with x of shape (batch, in_dim), W (in_dim, out_dim), b (1, out_dim).
//
// Rank layout (model-parallel-major, see data_parallel_preprocess.hpp):
//     mp_idx = rank % mp_size        dp_idx = rank / mp_size
// The ranks sharing a dp_idx form one model-parallel group (they split each layer's weights);
// the ranks sharing an mp_idx form one data-parallel group (they hold the same weight slice and
// see different data).
//
// Two ways to split the layers across the mp_size ranks of a model-parallel group:
//   naive     both fc1 and fc2 are split along their OUTPUT dimension: rank mp_idx holds
//             columns [mp_idx * out_dim / mp_size, (mp_idx + 1) * out_dim / mp_size) of W and b.
//   Megatron  fc1 is split along its OUTPUT dimension (as above) and fc2 along its INPUT
//             dimension (rows of W): fc1's output slice is exactly the input slice fc2 needs.
// Dimensions are always divisible by mp_size in this assignment.
#pragma once

#include <utility>

#include <xtensor/xtensor.hpp>

#include "dtk/communicator.hpp"
#include "dtk/not_implemented.hpp"  // what the stubs throw until you write them

namespace dtk {

// ---------------------------------------------------------------------------------------------
// Part 2
// ---------------------------------------------------------------------------------------------

// Everything one rank needs to know about its place in the (mp, dp) grid for one FC layer.
struct ParallelInfo {
  int mp_idx;            // rank % mp_size: this rank's index inside its model-parallel group
  int dp_idx;            // rank / mp_size: this rank's index inside its data-parallel group
  Communicator mp_comm;  // the mp_size ranks with this dp_idx, ordered by mp_idx
  Communicator dp_comm;  // the dp_size ranks with this mp_idx, ordered by dp_idx
  int part_in_dim;       // rows of this rank's slice of W
  int part_out_dim;      // columns of this rank's slice of W
};

// comm: the global communicator (all mp_size * dp_size ranks); rank: this rank in it.
// is_fc1: true for the first layer, false for the second; is_megatron_mp: Megatron or naive.
// in_dim, out_dim: the full (unsplit) dimensions of the layer.
// Build mp_comm and dp_comm with comm.Split(color, key): the ranks that pass the same color
// form one communicator, ordered by key. (Every rank must call Split, in the same order.)
ParallelInfo get_info(const Communicator& comm, int rank, int mp_size, int dp_size, bool is_fc1,
                      bool is_megatron_mp, int in_dim, int out_dim);

// ---------------------------------------------------------------------------------------------
// Part 3: naive model parallelism, forward pass (used by fc2)
// ---------------------------------------------------------------------------------------------
// In naive MP, fc1 leaves each rank with only its slice of fc1's output columns, but fc2 (split
// by output too) needs the full input; and fc2 itself produces only a slice of its output.
//
// The trap: Allgather of (batch, k) blocks writes the blocks one after another in memory. Read
// as (mp_size * batch, k), block r is rows [r * batch, (r + 1) * batch) — not columns
// [r * k, (r + 1) * k) of a (batch, mp_size * k) matrix. Rearrange after gathering.

// x: (batch, k), this rank's slice of the layer input, k = in_dim / mp_size (fc1's output
// slice; not fc2's part_in_dim, which in naive MP is the full in_dim).
// Returns (batch, k * mp_size) = (batch, in_dim): columns [r * k, (r + 1) * k) hold rank r's x
// (r = rank in mp_comm = mp_idx). Same value type as x.
template <class T>
xt::xtensor<T, 2> naive_collect_forward_input(const xt::xtensor<T, 2>& x, Communicator& mp_comm,
                                              int mp_size);

// out: (batch, k), this rank's slice of the layer output, k = part_out_dim = out_dim / mp_size.
// Returns (batch, k * mp_size) = (batch, out_dim), the full output, rank r's slice in columns
// [r * k, (r + 1) * k).
template <class T>
xt::xtensor<T, 2> naive_collect_forward_output(const xt::xtensor<T, 2>& out, Communicator& mp_comm,
                                               int mp_size);

// ---------------------------------------------------------------------------------------------
// Part 6: Megatron forward, backward passes, and data-parallel gradients (used by fc2, except
// collect_weight_grad, used by both layers)
// ---------------------------------------------------------------------------------------------

// Megatron fc2 input. x: (batch, part_in_dim), this rank's slice of fc2's input, which is what
// Megatron's fc2 (split by input rows) multiplies. Returns what fc2 should multiply by its W
// slice: (batch, part_in_dim).
template <class T>
xt::xtensor<T, 2> megatron_collect_forward_input(const xt::xtensor<T, 2>& x, Communicator& mp_comm,
                                                 int mp_size);

// Megatron fc2 output. out: (batch, out_dim), this rank's PARTIAL output x_r · W_r computed from
// its input slice; the true output is the sum of the partial outputs over the mp group.
// Returns (batch, out_dim), the full output, the same on every rank of the group.
template <class T>
xt::xtensor<T, 2> megatron_collect_forward_output(const xt::xtensor<T, 2>& out,
                                                  Communicator& mp_comm, int mp_size);

// Naive fc2 backward, output side. output_grad: (batch, out_dim), the gradient of the loss
// with respect to fc2's full output (the same on every rank of the group).
// mp_group_idx: this rank's mp_idx. Returns (batch, out_dim / mp_size): the columns of
// output_grad belonging to this rank's output slice.
template <class T>
xt::xtensor<T, 2> naive_collect_backward_output(const xt::xtensor<T, 2>& output_grad,
                                                int mp_group_idx, int mp_size);

// Naive fc2 backward, input side. grad_x: (batch, in_dim), this rank's contribution
// output_grad_r · W_rᵀ to the gradient of fc2's full input; the true gradient is the sum of the
// contributions over the mp group. Returns (batch, in_dim / mp_size): the summed gradient's
// columns [mp_idx * in_dim / mp_size, (mp_idx + 1) * in_dim / mp_size), the slice of fc1's
// output this rank produced.
template <class T>
xt::xtensor<T, 2> naive_collect_backward_x(const xt::xtensor<T, 2>& grad_x, Communicator& mp_comm,
                                           int mp_size);

// Megatron fc2 backward, output side. output_grad: (batch, out_dim), the gradient with respect
// to fc2's full output. Returns the gradient this rank's fc2 slice needs: (batch, out_dim).
template <class T>
xt::xtensor<T, 2> megatron_collect_backward_output(const xt::xtensor<T, 2>& output_grad,
                                                   int mp_group_idx, int mp_size);

// Megatron fc2 backward, input side. grad_x: (batch, part_in_dim), output_grad · W_rᵀ for this
// rank's W slice. Returns the gradient with respect to this rank's input slice:
// (batch, part_in_dim).
template <class T>
xt::xtensor<T, 2> megatron_collect_backward_x(const xt::xtensor<T, 2>& grad_x,
                                              Communicator& mp_comm, int mp_size);

// Data parallelism. grad_w: (part_in_dim, part_out_dim) and grad_b: (1, part_out_dim), this
// rank's gradients for its weight slice, computed on its own block of the batch. Returns
// (grad_w, grad_b) SUMMED over the data-parallel group dp_comm (not averaged: the loss already
// divides by the global batch size), same shapes, the same on every rank of dp_comm.
template <class T>
std::pair<xt::xtensor<T, 2>, xt::xtensor<T, 2>> collect_weight_grad(const xt::xtensor<T, 2>& grad_w,
                                                                    const xt::xtensor<T, 2>& grad_b,
                                                                    Communicator& dp_comm);

}  // namespace dtk
