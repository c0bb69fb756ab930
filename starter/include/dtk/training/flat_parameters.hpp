// Flat views of a stack of layers' parameters and gradients: the one vector that ZeRO shards
// (Part 9) and that the Adam of adam.hpp updates.
//
// The order is fixed: the first layer's W (in, out) in row-major order, then its b (1, out), then
// the next layer's W and b, and so on. Layers {784 -> 256, 256 -> 10} give 203,530 values: W1 at
// [0, 200704), b1 at [200704, 200960), W2 at [200960, 203520), b2 at [203520, 203530). The
// gradients are flattened in the same order, so element i of both belongs to the same parameter.
// These are copies: writing to a flat vector changes the layers only through set_flat_parameters.
#pragma once

#include <cstddef>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "dtk/mlp/mlp_stage.hpp"

namespace dtk {

// numel: the number of parameters of the layers, W and b of each.
std::size_t parameter_count(const std::vector<DenseLayer>& layers);

// Every W and b of the layers as one vector of parameter_count(layers) values.
xt::xtensor<float, 1> flat_parameters(const std::vector<DenseLayer>& layers);

// Every grad_weight and grad_bias of the layers, in the order of flat_parameters.
xt::xtensor<float, 1> flat_gradients(const std::vector<DenseLayer>& layers);

// The other way: writes `flat` (parameter_count(layers) values, in the order of flat_parameters)
// into the layers' W and b. Throws std::invalid_argument for a flat vector of another size.
void set_flat_parameters(std::vector<DenseLayer>& layers, const xt::xtensor<float, 1>& flat);

// The same for one layer (its W, then its b): ZeRO shards each layer on its own, so that ZeRO-3
// can gather one layer at a time.
xt::xtensor<float, 1> flat_parameters(const DenseLayer& layer);
xt::xtensor<float, 1> flat_gradients(const DenseLayer& layer);
void set_flat_parameters(DenseLayer& layer, const xt::xtensor<float, 1>& flat);

}  // namespace dtk
