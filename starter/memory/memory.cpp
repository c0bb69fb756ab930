// Part 16: memory: bf16 numbers, mixed precision's master copy, a model fully sharded block by
// block, and what to recompute. Declared, with the exact contract of every function, in
// include/dtk/memory.hpp. Data moves with the Communicator's Allgather and Reduce_scatter only.
#include <dtk/memory.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dtk {

// Helpers you write go in an anonymous namespace here, so that they stay private to this file:
// namespace {
// ...
// }  // namespace

// ----------------------------------- 16.1 -------------------------------------------------------

bf16 to_bf16(float x) {
  // TODO (Part 16.1): on the float's bits. Work the header's hard cases by hand before you
  // write it.
  throw NotImplemented("to_bf16", "memory/memory.cpp");
}

// ----------------------------------- 16.2 -------------------------------------------------------

// What the optimizer keeps from step to step. Yours to design.
struct MixedPrecisionAdam::State {};

MixedPrecisionAdam::MixedPrecisionAdam(const std::vector<bf16>& params, AdamOptions options)
    : state_(std::make_unique<State>()) {
  // TODO (Part 16.2): the master copy and the optimizer it needs. Which numbers does Adam see?
  throw NotImplemented("MixedPrecisionAdam", "memory/memory.cpp");
}

MixedPrecisionAdam::~MixedPrecisionAdam() = default;

void MixedPrecisionAdam::step(std::vector<bf16>& params, const std::vector<bf16>& grads, float lr) {
  // TODO (Part 16.2): where does the learning happen, and what does the model compute with?
  throw NotImplemented("MixedPrecisionAdam::step", "memory/memory.cpp");
}

const xt::xtensor<float, 1>& MixedPrecisionAdam::master() const {
  // TODO (Part 16.2)
  throw NotImplemented("MixedPrecisionAdam::master", "memory/memory.cpp");
}

// ----------------------------------- 16.3 -------------------------------------------------------

// What the object keeps between calls. Yours to design.
template <class T>
struct FullyShardedBlocks<T>::State {};

template <class T>
FullyShardedBlocks<T>::FullyShardedBlocks(std::vector<xt::xtensor<T, 1>> shards,
                                          std::vector<std::size_t> numel, Communicator& dp_comm)
    : state_(std::make_unique<State>()) {
  // TODO (Part 16.3): check the arguments against Part 9.2's shards.
  throw NotImplemented("FullyShardedBlocks", "memory/memory.cpp");
}

template <class T>
FullyShardedBlocks<T>::~FullyShardedBlocks() = default;

template <class T>
const xt::xtensor<T, 1>& FullyShardedBlocks<T>::gather(int block) {
  // TODO (Part 16.3): one Allgather. Trap: the last shards' padding is not the block's.
  throw NotImplemented("FullyShardedBlocks::gather", "memory/memory.cpp");
}

template <class T>
void FullyShardedBlocks<T>::release(int block) {
  // TODO (Part 16.3): the memory itself goes back now, not only the count.
  throw NotImplemented("FullyShardedBlocks::release", "memory/memory.cpp");
}

template <class T>
void FullyShardedBlocks<T>::reduce_gradient(int block, const xt::xtensor<T, 1>& gradient) {
  // TODO (Part 16.3): one Reduce_scatter.
  throw NotImplemented("FullyShardedBlocks::reduce_gradient", "memory/memory.cpp");
}

template <class T>
const xt::xtensor<T, 1>& FullyShardedBlocks<T>::gradient_shard(int block) const {
  // TODO (Part 16.3)
  throw NotImplemented("FullyShardedBlocks::gradient_shard", "memory/memory.cpp");
}

template <class T>
std::size_t FullyShardedBlocks<T>::parameter_bytes() const {
  // TODO (Part 16.3)
  throw NotImplemented("FullyShardedBlocks::parameter_bytes", "memory/memory.cpp");
}

template <class T>
std::size_t FullyShardedBlocks<T>::peak_parameter_bytes() const {
  // TODO (Part 16.3)
  throw NotImplemented("FullyShardedBlocks::peak_parameter_bytes", "memory/memory.cpp");
}

// ----------------------------------- 16.4 -------------------------------------------------------

std::vector<int> choose_recomputation(const std::vector<Activation>& activations,
                                      std::uint64_t budget_bytes) {
  // TODO (Part 16.4): the exact best set, within the header's limits.
  throw NotImplemented("choose_recomputation", "memory/memory.cpp");
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests link against exactly these.
// -------------------------------------------------------------------------------------------
template class FullyShardedBlocks<float>;
template class FullyShardedBlocks<double>;

}  // namespace dtk
