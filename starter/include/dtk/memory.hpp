// Part 16 (assignment 4): memory. A model's training memory is its model states (parameters,
// gradients, optimizer states: Part 9.1) and its activations (Part 4). Three tools cut them:
// 16-bit numbers with a 32-bit master copy (16.1, 16.2), parameters fully sharded and gathered
// only while a block runs (16.3: FSDP, ZeRO-3 in time), and activations recomputed in the
// backward instead of kept (16.4). You implement these in memory/memory.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "dtk/communicator.hpp"
#include "dtk/not_implemented.hpp"  // what the stubs throw until you write them
#include "dtk/training/adam.hpp"

namespace dtk {

// ---------------------------------------------------------------------------------------------
// 16.1 bfloat16
// ---------------------------------------------------------------------------------------------

// A bfloat16 number, as its 16 bits: the high half of a float's IEEE 754 bits (1 sign bit, the
// same 8 exponent bits, the 7 highest of the 23 mantissa bits). The same range as float, with 8
// significant bits instead of 24: 1 + 2^-8 is not a bf16 number (it rounds to 1), and 257
// rounds to 256.
using bf16 = std::uint16_t;

// Provided: the float a bf16 stands for, exactly (its bits, then 16 zero bits).
inline float from_bf16(bf16 value) {
  const std::uint32_t bits = static_cast<std::uint32_t>(value) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// The bf16 nearest to x: IEEE 754's round to nearest, ties to even (the tie goes to the bf16
// whose lowest bit is 0), as PyTorch's x.to(torch.bfloat16) and every accelerator round. Every
// float has one answer, bit for bit:
//   - a NaN, of any sign and payload, becomes 0x7FC0, the canonical quiet NaN (c10::BFloat16's
//     constructor makes it; PyTorch's vectorised conversion writes 0xFFFF, another NaN: any NaN
//     would do in a trainer, one is fixed here so that every answer is exact);
//   - the infinities stay infinities, and finite floats beyond the largest bf16 round to
//     infinity, as the rule says (they are nearer to it in IEEE's sense);
//   - -0, the subnormals and the negative numbers follow the same rule as every other float.
// Work on the bits (std::memcpy a float into a std::uint32_t; never a pointer cast). Traps: cut
// off, the low 16 bits lose their rounding (and a NaN whose set mantissa bits are all among them
// becomes infinity); a tie that always rounds up is biased.
bf16 to_bf16(float x);

// ---------------------------------------------------------------------------------------------
// 16.2 Mixed precision: bf16 to compute with, fp32 to learn with
// ---------------------------------------------------------------------------------------------

// The optimizer of a model whose parameters and gradients are bf16 (what the forward and the
// backward read and write, 2 bytes each), with an fp32 master copy of every parameter and Adam's
// moments in fp32 (4 + 4 + 4 bytes): Part 9.1's 2 + 2 + 12 bytes per parameter. The master copy
// is what learns: an update smaller than half a bf16 step of the parameter (an update of 1e-3 on
// a weight of 1, say) would be rounded away if applied to the bf16 number, step after step; the
// master keeps adding such updates until the bf16 parameter moves.
class MixedPrecisionAdam {
 public:
  // The optimizer of these bf16 parameters: the master copy starts as their exact float values,
  // Adam's moments at 0 (the kit's Adam<float>, training/adam.hpp, with `options`).
  MixedPrecisionAdam(const std::vector<bf16>& params, AdamOptions options = {});
  ~MixedPrecisionAdam();
  MixedPrecisionAdam(const MixedPrecisionAdam&) = delete;
  MixedPrecisionAdam& operator=(const MixedPrecisionAdam&) = delete;

  // One step with the bf16 gradients `grads` (one per parameter): the kit's Adam<float> steps
  // the master copy with the gradients' exact float values and learning rate lr, then every
  // bf16 parameter becomes to_bf16 of its master weight. `params` is the vector the optimizer
  // was made with (as the model holds it now). Throws std::invalid_argument when params or
  // grads has another length than the optimizer's.
  void step(std::vector<bf16>& params, const std::vector<bf16>& grads, float lr);

  // The fp32 master copy, one weight per parameter: the tensor Adam<float> steps (no other copy).
  const xt::xtensor<float, 1>& master() const;

  // What the optimizer keeps from step to step: yours to define, in memory/memory.cpp.
  struct State;

 private:
  std::unique_ptr<State> state_;
};

// ---------------------------------------------------------------------------------------------
// 16.3 A model fully sharded, block by block (FSDP)
// ---------------------------------------------------------------------------------------------

// ZeRO-3 (Part 9) keeps 1/p of the parameters on each of the p ranks of dp_comm. In time, that
// means a block's whole parameters exist on a rank only while the block runs: gathered before its
// forward, freed after it, gathered again before its backward, freed after that, its gradient
// summed over the ranks and kept as this rank's shard only. A rank then holds every block's
// shard and one block whole (two, where the next one's gather is started early: prefetching).
//
// Each block is its own flat vector of numel[b] parameters, sharded as Part 9.2 says: with p =
// dp_comm.Get_size() and s_b = ceil(numel[b] / p), rank r holds elements [r · s_b, (r + 1) · s_b)
// of it, the last ranks' shards ending in zero padding (s_b values on every rank). Every rank of
// dp_comm makes one with the same numel and calls gather, release and reduce_gradient for the
// same blocks in the same order. Data moves with the Communicator's Allgather and
// Reduce_scatter: one call per gather and one per reduce_gradient.
//
// A rank's parameter bytes are sizeof(T) times every shard's s_b values plus numel[b] for each
// block gathered and not yet released. T is float or double.
template <class T>
class FullyShardedBlocks {
 public:
  // shards[b]: this rank's shard of block b (s_b values); numel[b]: the block's size. Throws
  // std::invalid_argument when the lists' lengths differ, a numel is 0 or a shard is not s_b
  // values.
  FullyShardedBlocks(std::vector<xt::xtensor<T, 1>> shards, std::vector<std::size_t> numel,
                     Communicator& dp_comm);
  ~FullyShardedBlocks();
  FullyShardedBlocks(const FullyShardedBlocks&) = delete;
  FullyShardedBlocks& operator=(const FullyShardedBlocks&) = delete;

  // Block b's numel[b] parameters, gathered from every rank's shard, held until release(b).
  // Throws std::logic_error (itself: not its subclass std::invalid_argument, which is for bad
  // arguments) when block b is held already.
  const xt::xtensor<T, 1>& gather(int block);

  // Frees block b's gathered parameters: their memory goes back to the allocator now, not at the
  // next gather. Throws std::logic_error (itself) when block b is not held.
  void release(int block);

  // This rank's gradient of block b (numel[b] values) summed over dp_comm; this rank keeps its
  // shard of the sum only, added to what the block's gradient shard holds already (a step of
  // several micro-batches reduces each block once per micro-batch), whether or not the block is
  // held. Throws std::invalid_argument when the gradient is not numel[b] values.
  void reduce_gradient(int block, const xt::xtensor<T, 1>& gradient);

  // This rank's shard of block b's summed gradient: s_b values, zeros until reduce_gradient.
  const xt::xtensor<T, 1>& gradient_shard(int block) const;

  // This rank's parameter bytes now, and the most they were since the object was made.
  std::size_t parameter_bytes() const;
  std::size_t peak_parameter_bytes() const;

  // Every function that takes a block throws std::invalid_argument for one outside 0 ..
  // numel.size() - 1.

  // What the object keeps: yours to define, in memory/memory.cpp.
  struct State;

 private:
  std::unique_ptr<State> state_;
};

// ---------------------------------------------------------------------------------------------
// 16.4 What to recompute
// ---------------------------------------------------------------------------------------------

// One tensor the forward makes and the backward reads: keeping it costs `bytes` of memory from
// the forward to the backward; dropping it costs `flops` to recompute it in the backward (from
// inputs that are kept: a block's input, the attention's Q, K and V, ...).
struct Activation {
  std::string name;  // "attention scores", "MLP hidden", ...
  std::uint64_t bytes = 0;
  std::uint64_t flops = 0;
};

// The activations to recompute (their indices, increasing) so that the ones kept take at most
// budget_bytes, with the fewest recomputed FLOPs in total; when several sets tie on FLOPs, any of
// them. Nothing when everything fits. At most 20 activations, each of bytes >= 1 and flops >= 1:
// throws std::invalid_argument otherwise. The trap: the tensors that are cheapest to recompute per
// byte are not always the best ones to drop; the best set is exact, not a good guess.
std::vector<int> choose_recomputation(const std::vector<Activation>& activations,
                                      std::uint64_t budget_bytes);

}  // namespace dtk
