// How ranks share a layer (Parallelism), and a fully connected layer's starting weights, whole or
// as one rank's slice: the same on every rank and in every layout, so that any layout trains the
// same model. Apart from fc_layer.cpp, so that code using only these (MlpStage) links without
// assignment 1's functions.
#pragma once

#include <cstdint>

#include "dtk/func_impl.hpp"
#include "dtk/mlp/matrix_ops.hpp"

namespace dtk {

// The starting weights of a fully connected layer in_dim -> out_dim: W (in_dim, out_dim) from
// N(0, 1 / in_dim) and then b (1, out_dim) from N(0, 1 / out_dim), drawn from a generator seeded
// with `seed`. The same on every rank and in every layout: layers keep slices of these.
struct LayerWeights {
  Matrix weight, bias;
};
LayerWeights initial_layer_weights(int in_dim, int out_dim, std::uint32_t seed);

// How the ranks share the training: mp_size * dp_size ranks, each model-parallel group split
// naive or Megatron style.
struct Parallelism {
  int mp_size = 1;
  int dp_size = 1;
  bool megatron = false;
};

// This rank's slice of the layer's starting W and b (initial_layer_weights(in_dim, out_dim,
// seed)), as get_info's `info` describes it: rows of W for Megatron's fc2, columns of W and b
// otherwise. Throws std::runtime_error naming get_info when the slices it describes do not
// tile W.
LayerWeights layer_slice(const ParallelInfo& info, const Parallelism& parallelism, bool is_fc1,
                         int in_dim, int out_dim, std::uint32_t seed);

}  // namespace dtk
