// Part 11 (assignment 3): context parallelism, ring attention (Liu et al., "Ring Attention with
// Blockwise Transformers for Near-Infinite Context", 2023). You implement these functions in
// context_parallel/context_parallel.cpp.
//
// A sequence of seq_len positions is cut over the cp_size ranks of a context-parallel group:
// each rank keeps the queries, keys and values of its own positions only, so a sequence cp_size
// times longer fits in the same activation memory per rank. Attention needs every key, though:
// the blocks of keys and values travel around the ring of ranks (rank r sends to r + 1 and
// receives from r - 1), each rank attends its queries to every block as it passes, and merges
// the partial results with the log-sum-exp trick (11.2).
//
// Conventions used throughout (the GPT's, dtk/gpt/attention_kernels.hpp):
//   - S = positions.size() positions of each of `batch` sequences on this rank, at the absolute
//     positions `positions` (increasing); every rank of cp_comm holds as many as the others;
//   - q, k, v, out, dout, dq, dk, dv are (batch · S, heads · d): row b · S + s is position
//     positions[s] of sequence b; head h is columns [h · d, (h + 1) · d);
//   - lse is (batch · S, heads): per row and head, the natural log of the sum of exp(score)
//     over the keys the query sees, score = q · k / √d;
//   - causal: a query at position i sees the keys at positions j <= i, by ABSOLUTE position;
//   - T is float or double; a bad argument throws std::invalid_argument naming the function.
//
// The attention of some queries over one block of keys is provided, forward and backward:
// attention_block_forward and attention_block_backward (dtk/gpt/attention_kernels.hpp).
#pragma once

#include <vector>

#include <xtensor/xtensor.hpp>

#include "dtk/not_implemented.hpp"  // what the stubs throw until you write them

namespace dtk {

// dtk/communicator.hpp. Declared only: the GPT includes this header for the two types below,
// and the model never talks to other ranks itself.
class Communicator;

// What attention returns for some queries: their output and the lse of their scores. A row
// that saw no key yet ("empty") has lse = -infinity and out = 0.
template <class T>
struct AttentionOutput {
  xt::xtensor<T, 2> out;  // (batch · S_q, heads · d)
  xt::xtensor<T, 2> lse;  // (batch · S_q, heads)
};

// The gradients of attention's inputs.
template <class T>
struct AttentionGrads {
  xt::xtensor<T, 2> dq;  // (batch · S_q, heads · d)
  xt::xtensor<T, 2> dk;  // (batch · S_k, kv_heads · d): k's shape (kv_heads = heads but for
  xt::xtensor<T, 2> dv;  // (batch · S_k, kv_heads · d)   a Llama's grouped-query attention)
};

// ---------------------------------------------------------------------------------------------
// 11.1 Who holds which positions
// ---------------------------------------------------------------------------------------------

// The positions rank cp_idx holds of a sequence of seq_len positions, in increasing order.
//   contiguous (zigzag false): cut the sequence into cp_size equal slices; rank cp_idx holds
//     slice cp_idx: [cp_idx · seq_len / cp_size, (cp_idx + 1) · seq_len / cp_size).
//   zig-zag (zigzag true): cut it into 2 · cp_size equal chunks; rank cp_idx holds chunks
//     cp_idx and 2 · cp_size - 1 - cp_idx, one early and one late, so that every rank's
//     queries see about as many keys under the causal mask (the work is balanced).
// seq_len = 8, cp_size = 2: contiguous {0, 1, 2, 3} and {4, 5, 6, 7}; zig-zag {0, 1, 6, 7} and
// {2, 3, 4, 5}. Throws std::invalid_argument unless seq_len > 0, cp_size >= 1,
// 0 <= cp_idx < cp_size, and cp_size (contiguous) or 2 · cp_size (zig-zag) divides seq_len.
std::vector<int> cp_positions(int seq_len, int cp_size, int cp_idx, bool zigzag);

// ---------------------------------------------------------------------------------------------
// 11.2 Merging two partial attention results
// ---------------------------------------------------------------------------------------------

// (out, lse) and (block_out, block_lse) are the attention of the same queries over two disjoint
// sets of keys A and B. Replaces (out, lse), in place, with the attention over A ∪ B: per row
// and head,
//   out <- (e^lse · out + e^block_lse · block_out) / (e^lse + e^block_lse)
//   lse <- log(e^lse + e^block_lse)
// computed without overflow or underflow (lse may be 1000 or -1000: shift by the larger one).
// An empty side (lse = -infinity) contributes nothing; two empty sides stay empty (lse
// -infinity, out unchanged). out and block_out: (rows, heads · d); lse and block_lse: (rows,
// heads). Throws std::invalid_argument when the shapes do not match each other.
template <class T>
void merge_attention(xt::xtensor<T, 2>& out, xt::xtensor<T, 2>& lse,
                     const xt::xtensor<T, 2>& block_out, const xt::xtensor<T, 2>& block_lse);

// ---------------------------------------------------------------------------------------------
// 11.3 and 11.4 Ring attention
// ---------------------------------------------------------------------------------------------
// Every rank of cp_comm calls them together, with the same batch, heads, head size and S.
// Inside, only cp_comm.Send, cp_comm.Recv and cp_comm.Sendrecv move data (no collective, no MPI
// call of your own); the keys and values are 1 MB and more, so every exchange is a Sendrecv.

// Causal attention of this rank's queries over ALL keys of their sequences. q: this rank's
// (batch · S, heads · d), at `positions`; k and v: (batch · S, kv · d), kv dividing heads. kv =
// heads but for a Llama's grouped-query attention (gpt_train --kv_heads), whose kv key/value
// heads each serve heads / kv query heads (the kernels pair query head h with key/value head
// h / (heads / kv)): the ring then carries kv / heads of multi-head attention's bytes. In cp_size -
// 1 steps the blocks of keys and values (with their positions) travel around the ring; each block
// is attended with attention_block_forward (causal by absolute position) and merged into the result
// with merge_attention. Returns exactly what one rank holding the whole sequence computes for these
// queries: out (batch · S, heads · d) and lse (batch · S, heads).
template <class T>
AttentionOutput<T> ring_attention_forward(const xt::xtensor<T, 2>& q, const xt::xtensor<T, 2>& k,
                                          const xt::xtensor<T, 2>& v,
                                          const std::vector<int>& positions, int batch, int heads,
                                          Communicator& cp_comm);

// Its backward. out and lse: what ring_attention_forward returned; dout = d loss / d out.
// Returns this rank's dq (q's shape), dk and dv (k's shape): dq of its queries, summed
// over every block of keys (it stays here); dk and dv of its OWN keys and values, summed over
// every rank's queries (they travel around the ring with their block, each rank adding its
// share from attention_block_backward, and end on the rank that owns the block).
template <class T>
AttentionGrads<T> ring_attention_backward(const xt::xtensor<T, 2>& q, const xt::xtensor<T, 2>& k,
                                          const xt::xtensor<T, 2>& v, const xt::xtensor<T, 2>& out,
                                          const xt::xtensor<T, 2>& lse,
                                          const xt::xtensor<T, 2>& dout,
                                          const std::vector<int>& positions, int batch, int heads,
                                          Communicator& cp_comm);

}  // namespace dtk
