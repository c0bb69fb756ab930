// ZeRO-3 on the GPT (Part 16.3 in the trainer, gpt_train --zero 3): every rank keeps a shard of
// each piece's parameters (the embedding, each block, the head) and gathers a piece whole only
// while it computes, forward and again backward, then frees it; a piece's gradients are summed
// into this rank's shard as its backward ends. The pieces are the blocks of the students'
// FullyShardedBlocks (dtk/memory.hpp), one object per group of ranks that sum a gradient (as
// model_states.hpp groups them: an expert's replicas, the stage for a replicated tensor under
// sequence parallelism, else the dp · cp ranks of the same tp_idx): a piece is a block of each
// group it has parameters of.
//
// The optimizer keeps its own copy of this rank's shards (FullyShardedBlocks gives out no way to
// change a shard): it updates them, then the blocks are made again from them for the next step.
//
// In bf16 (gpt_train --dtype bf16 --zero 3) it does as PyTorch's FSDP with a mixed-precision
// policy of bf16 parameters and fp32 reductions: the optimizer's copy is the fp32 master (Adam
// steps it directly, not 16.2's step), the blocks are made from it rounded to bf16 (so a piece
// is gathered as bf16 values), a piece's gradients are rounded to bf16 as its backward ends and
// reduce-scattered in fp32. The model states are float's (the blocks hold their bf16 values as
// floats): bf16 saves the activations here.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "dtk/communicator.hpp"
#include "dtk/gpt/config.hpp"  // Bf16Rounding
#include "dtk/gpt/model_states.hpp"
#include "dtk/gpt/parameter.hpp"
#include "dtk/training/adam.hpp"

namespace dtk::gpt {

struct GptGrid;

// What the trainer calls of 16.3's FullyShardedBlocks, bound by gpt_train.
template <class T>
struct ShardedBlocks {
  std::function<const xt::xtensor<T, 1>&(int block)> gather;
  std::function<void(int block)> release;
  std::function<void(int block, const xt::xtensor<T, 1>& gradient)> reduce_gradient;
  std::function<const xt::xtensor<T, 1>&(int block)> gradient_shard;
};

// Makes a FullyShardedBlocks of these shards (s_b values each) of blocks of numel[b] values.
template <class T>
using MakeShardedBlocks = std::function<ShardedBlocks<T>(
    std::vector<xt::xtensor<T, 1>> shards, std::vector<std::size_t> numel, Communicator& comm)>;

template <class T>
class FullyShardedStates {
 public:
  // The pieces of this rank's chunks (Gpt::pieces(), chunk after chunk), their values whole:
  // each rank keeps its shards and frees the rest. Collective over the groups. With `bf16`
  // (16.1's to_bf16), the pieces compute in bf16 values and their gradients are rounded.
  FullyShardedStates(std::vector<std::vector<Parameter<T>*>> pieces, GptGrid& g,
                     typename ModelStates<T>::Update update, MakeShardedBlocks<T> make,
                     Bf16Rounding bf16 = {});
  FullyShardedStates(const FullyShardedStates&) = delete;
  FullyShardedStates& operator=(const FullyShardedStates&) = delete;

  // GptCommunication's piece_starts and piece_ends.
  void piece_starts(const std::vector<Parameter<T>*>& piece, bool backward);
  void piece_ends(const std::vector<Parameter<T>*>& piece, bool backward);

  // After the step's last backward: every shard updated with its summed gradient's shard, and
  // the blocks made again from them.
  void step(double lr);

  // Every piece gathered (to read the whole model: weights_l2), and freed again.
  void gather_all();
  void release_all();

  // parameters: the shards and the most of whole pieces held at once; gradients: the summed
  // shards; optimizer: Adam's m and v and the shards' copy; transient: one piece's gathered
  // values and whole gradients, and the flat vector of its reduce-scatter.
  typename ModelStates<T>::Bytes bytes() const;

 private:
  struct Group {
    Communicator* comm;
    std::vector<int> block_of_piece;  // -1: the piece has no parameters of this group
    std::vector<std::vector<Parameter<T>*>> parameters;  // of each block, in the piece's order
    std::vector<std::size_t> numel;
    std::vector<xt::xtensor<T, 1>> shards;  // the optimizer's copy
    std::vector<std::unique_ptr<Adam<T>>> adam;
    ShardedBlocks<T> blocks;
  };
  int piece_index(const std::vector<Parameter<T>*>& piece) const;
  void make_blocks();

  std::vector<std::vector<Parameter<T>*>> pieces_;
  std::map<const Parameter<T>*, int> piece_of_;                      // its first parameter's
  std::map<const Parameter<T>*, std::array<std::size_t, 2>> shape_;  // every parameter's
  typename ModelStates<T>::Update update_;
  MakeShardedBlocks<T> make_;
  Bf16Rounding bf16_;  // empty: the model's own precision
  std::vector<Group> groups_;
  std::size_t held_bytes_ = 0, peak_held_bytes_ = 0;  // whole pieces' values
  std::size_t largest_piece_ = 0;                     // values
};

}  // namespace dtk::gpt
