#include "dtk/mlp/layer_weights.hpp"

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

#include <xtensor/xview.hpp>

namespace dtk {

namespace {

// A (rows, cols) matrix of normal values with standard deviation `scale`, drawn from `rng`.
Matrix random_normal(std::size_t rows, std::size_t cols, float scale, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, scale);
  Matrix m({rows, cols});
  for (float& value : m) value = normal(rng);
  return m;
}

}  // namespace

LayerWeights initial_layer_weights(int in_dim, int out_dim, std::uint32_t seed) {
  // The classic's scales.
  std::mt19937 rng(seed);
  Matrix weight = random_normal(in_dim, out_dim, 1.0f / std::sqrt(float(in_dim)), rng);
  Matrix bias = random_normal(1, out_dim, 1.0f / std::sqrt(float(out_dim)), rng);
  return {std::move(weight), std::move(bias)};
}

LayerWeights layer_slice(const ParallelInfo& info, const Parallelism& parallelism, bool is_fc1,
                         int in_dim, int out_dim, std::uint32_t seed) {
  // The full W and b, drawn the same way on every rank.
  const auto [full_weight, full_bias] = initial_layer_weights(in_dim, out_dim, seed);
  // This rank's slice: rows of W for Megatron's fc2, columns of W and b otherwise.
  const bool split_by_rows = parallelism.megatron && !is_fc1;
  const int mp_size = parallelism.mp_size, rows = info.part_in_dim, cols = info.part_out_dim;
  const bool tiles_w = split_by_rows ? rows * mp_size == in_dim && cols == out_dim
                                     : rows == in_dim && cols * mp_size == out_dim;
  if (!tiles_w || info.mp_idx < 0 || info.mp_idx >= mp_size) {
    throw std::runtime_error(
        "get_info returned mp_idx " + std::to_string(info.mp_idx) + ", part_in_dim " +
        std::to_string(rows) + ", part_out_dim " + std::to_string(cols) + " for " +
        (is_fc1 ? "fc1 (" : "fc2 (") + std::to_string(in_dim) + " -> " + std::to_string(out_dim) +
        ", mp_size " + std::to_string(mp_size) +
        (parallelism.megatron ? ", Megatron)" : ", naive)") + ": these slices do not tile W");
  }
  const std::size_t first_row = split_by_rows ? info.mp_idx * rows : 0;
  const std::size_t first_col = split_by_rows ? 0 : info.mp_idx * cols;
  return {xt::view(full_weight, xt::range(first_row, first_row + rows),
                   xt::range(first_col, first_col + cols)),
          xt::view(full_bias, xt::all(), xt::range(first_col, first_col + cols))};
}

}  // namespace dtk
