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

// ----------------------------------- 16.1 -------------------------------------------------------

bf16 to_bf16(float x) {
  if (std::isnan(x)) return 0x7FC0;
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  // Adding 0x7FFF rounds the low half up exactly when it is above one half; the kept half's
  // lowest bit adds the last 1 on a tie to an odd number, so that ties land on even ones. A carry
  // into the exponent is right (the next binade, or infinity past the largest bf16).
  const std::uint32_t lowest_kept_bit = (bits >> 16) & 1;
  return static_cast<bf16>((bits + 0x7FFF + lowest_kept_bit) >> 16);
}

// ----------------------------------- 16.2 -------------------------------------------------------

struct MixedPrecisionAdam::State {
  xt::xtensor<float, 1> master;
  Adam<float> adam{0};
};

MixedPrecisionAdam::MixedPrecisionAdam(const std::vector<bf16>& params, AdamOptions options)
    : state_(std::make_unique<State>()) {
  state_->master = xt::xtensor<float, 1>::from_shape({params.size()});
  std::transform(params.begin(), params.end(), state_->master.begin(), from_bf16);
  state_->adam = Adam<float>(params.size(), options);
}

MixedPrecisionAdam::~MixedPrecisionAdam() = default;

void MixedPrecisionAdam::step(std::vector<bf16>& params, const std::vector<bf16>& grads, float lr) {
  const std::size_t n = state_->master.size();
  if (params.size() != n || grads.size() != n) {
    throw std::invalid_argument("MixedPrecisionAdam::step: the optimizer holds " +
                                std::to_string(n) + " parameters, given " +
                                std::to_string(params.size()) + " parameters and " +
                                std::to_string(grads.size()) + " gradients");
  }
  auto grad = xt::xtensor<float, 1>::from_shape({n});
  std::transform(grads.begin(), grads.end(), grad.begin(), from_bf16);
  state_->adam.step(state_->master, 0, grad, lr);
  std::transform(state_->master.begin(), state_->master.end(), params.begin(), to_bf16);
}

const xt::xtensor<float, 1>& MixedPrecisionAdam::master() const { return state_->master; }

// ----------------------------------- 16.3 -------------------------------------------------------

template <class T>
struct FullyShardedBlocks<T>::State {
  std::vector<xt::xtensor<T, 1>> shards, gradient_shards;
  std::vector<std::size_t> numel;
  std::vector<xt::xtensor<T, 1>> gathered;  // a block's whole parameters, while held
  std::vector<bool> held;
  Communicator* dp_comm = nullptr;
  std::size_t parameter_bytes = 0, peak = 0;

  std::size_t shard_size(int block) const {
    const std::size_t p = static_cast<std::size_t>(dp_comm->Get_size());
    return (numel[block] + p - 1) / p;
  }
  void check_block(int block, const char* function) const {
    if (block < 0 || block >= static_cast<int>(numel.size())) {
      throw std::invalid_argument(std::string("FullyShardedBlocks::") + function + ": block " +
                                  std::to_string(block) + " is not one of the " +
                                  std::to_string(numel.size()) + " blocks");
    }
  }
  void add_bytes(std::size_t values) {
    parameter_bytes += values * sizeof(T);
    peak = std::max(peak, parameter_bytes);
  }
};

template <class T>
FullyShardedBlocks<T>::FullyShardedBlocks(std::vector<xt::xtensor<T, 1>> shards,
                                          std::vector<std::size_t> numel, Communicator& dp_comm)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.numel = std::move(numel);
  s.dp_comm = &dp_comm;
  if (shards.size() != s.numel.size()) {
    throw std::invalid_argument("FullyShardedBlocks: " + std::to_string(shards.size()) +
                                " shards for " + std::to_string(s.numel.size()) + " blocks");
  }
  for (int b = 0; b < static_cast<int>(shards.size()); ++b) {
    if (s.numel[b] == 0 || shards[b].size() != s.shard_size(b)) {
      throw std::invalid_argument("FullyShardedBlocks: block " + std::to_string(b) + " of " +
                                  std::to_string(s.numel[b]) + " parameters has a shard of " +
                                  std::to_string(shards[b].size()) + " values, not " +
                                  std::to_string(s.shard_size(b)));
    }
    s.add_bytes(shards[b].size());
    s.gradient_shards.push_back(xt::zeros<T>({shards[b].size()}));
  }
  s.shards = std::move(shards);
  s.gathered.resize(s.shards.size());
  s.held.assign(s.shards.size(), false);
}

template <class T>
FullyShardedBlocks<T>::~FullyShardedBlocks() = default;

template <class T>
const xt::xtensor<T, 1>& FullyShardedBlocks<T>::gather(int block) {
  State& s = *state_;
  s.check_block(block, "gather");
  if (s.held[block]) {
    throw std::logic_error("FullyShardedBlocks::gather: block " + std::to_string(block) +
                           " is held already (release it first)");
  }
  const std::size_t shard = s.shard_size(block), p = s.dp_comm->Get_size();
  std::vector<T> padded(shard * p);
  s.dp_comm->Allgather(s.shards[block], padded);
  // The padding off: exactly numel values.
  xt::xtensor<T, 1>& whole = s.gathered[block];
  whole = xt::xtensor<T, 1>::from_shape({s.numel[block]});
  std::copy(padded.begin(), padded.begin() + s.numel[block], whole.begin());
  s.held[block] = true;
  s.add_bytes(s.numel[block]);
  return whole;
}

template <class T>
void FullyShardedBlocks<T>::release(int block) {
  State& s = *state_;
  s.check_block(block, "release");
  if (!s.held[block]) {
    throw std::logic_error("FullyShardedBlocks::release: block " + std::to_string(block) +
                           " is not held");
  }
  s.gathered[block] = xt::xtensor<T, 1>();  // the old buffer is freed here
  s.held[block] = false;
  s.parameter_bytes -= s.numel[block] * sizeof(T);
}

template <class T>
void FullyShardedBlocks<T>::reduce_gradient(int block, const xt::xtensor<T, 1>& gradient) {
  State& s = *state_;
  s.check_block(block, "reduce_gradient");
  if (gradient.size() != s.numel[block]) {
    throw std::invalid_argument("FullyShardedBlocks::reduce_gradient: block " +
                                std::to_string(block) + " has " + std::to_string(s.numel[block]) +
                                " parameters, given a gradient of " +
                                std::to_string(gradient.size()));
  }
  const std::size_t shard = s.shard_size(block), p = s.dp_comm->Get_size();
  std::vector<T> padded(shard * p, T(0));
  std::copy(gradient.begin(), gradient.end(), padded.begin());
  std::vector<T> summed(shard);
  s.dp_comm->Reduce_scatter(padded, summed);
  for (std::size_t i = 0; i < shard; ++i) s.gradient_shards[block](i) += summed[i];
}

template <class T>
const xt::xtensor<T, 1>& FullyShardedBlocks<T>::gradient_shard(int block) const {
  state_->check_block(block, "gradient_shard");
  return state_->gradient_shards[block];
}

template <class T>
std::size_t FullyShardedBlocks<T>::parameter_bytes() const {
  return state_->parameter_bytes;
}

template <class T>
std::size_t FullyShardedBlocks<T>::peak_parameter_bytes() const {
  return state_->peak;
}

// ----------------------------------- 16.4 -------------------------------------------------------

std::vector<int> choose_recomputation(const std::vector<Activation>& activations,
                                      std::uint64_t budget_bytes) {
  const int n = static_cast<int>(activations.size());
  if (n > 20) {
    throw std::invalid_argument("choose_recomputation: at most 20 activations, given " +
                                std::to_string(n));
  }
  for (const Activation& a : activations) {
    if (a.bytes == 0 || a.flops == 0) {
      throw std::invalid_argument("choose_recomputation: activation \"" + a.name +
                                  "\" has 0 bytes or 0 FLOPs");
    }
  }
  // Every subset to recompute, as a bit mask: 2^20 at most, each summed in O(n). Recomputing
  // everything always fits: the first mask that fits is the best so far.
  std::uint64_t best_flops = 0;
  std::uint32_t best = 0;
  bool found = false;
  for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {
    std::uint64_t kept = 0, flops = 0;
    for (int i = 0; i < n; ++i) {
      if (mask >> i & 1) {
        flops += activations[i].flops;
      } else {
        kept += activations[i].bytes;
      }
    }
    if (kept <= budget_bytes && (!found || flops < best_flops)) {
      best = mask;
      best_flops = flops;
      found = true;
    }
  }
  std::vector<int> chosen;
  for (int i = 0; i < n; ++i) {
    if (best >> i & 1) chosen.push_back(i);
  }
  return chosen;
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests link against exactly these.
// -------------------------------------------------------------------------------------------
template class FullyShardedBlocks<float>;
template class FullyShardedBlocks<double>;

}  // namespace dtk
