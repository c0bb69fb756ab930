// Tensor parallelism inside a pipeline stage (3-D training), with your assignment 1 functions:
// the stage's layers go in pairs, like fc1 and fc2 of assignment 1's MLP.
//
//   first of a pair   split by output columns: its input is whole on every rank of the group,
//                     its output stays split (fc1). Unless it is the model's first layer, its
//                     backward sums the group's partial input gradients: with Megatron
//                     megatron_collect_forward_output (an all-reduce of partial products), naive
//                     naive_collect_backward_x then naive_collect_forward_input (a reduce-scatter
//                     then an all-gather: the same all-reduce in two halves).
//   second of a pair  fc2, naive or Megatron: exactly as FCLayer (fc_layer.hpp) calls your
//                     Part 3 and Part 6 functions. Its output is whole again, so activations
//                     leave the stage whole and a stage boundary falls between pairs.
//
// get_info (Part 2) gives each layer its communicators and slice, as it does for FCLayer.
#pragma once

#include "dtk/mlp/layer_split.hpp"

namespace dtk {

// A TensorParallelSplitter: splits layers [first_layer, last_layer), an even number of them.
StageSplit split_stage_layers(const Communicator& stage_comm, const Parallelism& parallelism,
                              const std::vector<int>& widths, int first_layer, int last_layer,
                              std::uint32_t seed);

}  // namespace dtk
