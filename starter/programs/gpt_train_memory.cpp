// The students' functions of Part 16 (assignment 4) bound to gpt_train: --dtype bf16 rounds with
// 16.1's to_bf16 and steps with 16.2's MixedPrecisionAdam (dtk/gpt/mixed_precision.hpp); --zero 3
// keeps each piece of the GPT in 16.3's FullyShardedBlocks, gathered while the piece runs
// (dtk/gpt/fully_sharded.hpp says which blocks and when). Built where the tree has Part 16
// (programs/gpt_train.cmake).
#include <memory>

#include <dtk/memory.hpp>

#include "gpt_train.hpp"

namespace dtk::gpt_train {

template <class T>
void bind_memory(gpt::GptParallelism<T>& p) {
  p.to_bf16 = [](const float* values, std::size_t count, std::uint16_t* bits) {
    for (std::size_t i = 0; i < count; ++i) bits[i] = to_bf16(values[i]);
  };
  p.mixed_precision_adam = [](const gpt::Bf16Vector& params) -> gpt::MixedPrecisionStep {
    auto adam = std::make_shared<MixedPrecisionAdam>(params);
    return [adam](gpt::Bf16Vector& values, const gpt::Bf16Vector& grads, float lr) {
      adam->step(values, grads, lr);
    };
  };
  p.fully_sharded_blocks = [](std::vector<xt::xtensor<T, 1>> shards, std::vector<std::size_t> numel,
                              Communicator& comm) {
    auto blocks =
        std::make_shared<FullyShardedBlocks<T>>(std::move(shards), std::move(numel), comm);
    return gpt::ShardedBlocks<T>{
        [blocks](int b) -> const xt::xtensor<T, 1>& { return blocks->gather(b); },
        [blocks](int b) { blocks->release(b); },
        [blocks](int b, const xt::xtensor<T, 1>& gradient) {
          blocks->reduce_gradient(b, gradient);
        },
        [blocks](int b) -> const xt::xtensor<T, 1>& { return blocks->gradient_shard(b); }};
  };
}

template void bind_memory(gpt::GptParallelism<float>&);
template void bind_memory(gpt::GptParallelism<double>&);

}  // namespace dtk::gpt_train
