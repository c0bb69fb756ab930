#include "dtk/training/sharded_optimizer.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>

#include "dtk/my_collectives.hpp"
#include "dtk/training/adam.hpp"
#include "dtk/training/flat_parameters.hpp"
#include "dtk/zero.hpp"

namespace dtk {

namespace {

using Flat = xt::xtensor<float, 1>;

constexpr std::size_t kFloatBytes = sizeof(float);

// What a student function returned must have the size the step needs next, or the message
// names the function (a wrong size would otherwise surface as a confusing error further on).
void expect_size(const Flat& values, std::size_t expected, const std::string& function) {
  if (values.size() == expected) return;
  throw std::runtime_error(function + " returned " + std::to_string(values.size()) +
                           " values, expected " + std::to_string(expected));
}

// [begin, end) of `values`, zero-padded to s values: a rank's shard as ZeRO passes it around.
Flat padded_shard(const Flat& values, std::size_t begin, std::size_t end, std::size_t s) {
  Flat shard = xt::zeros<float>({s});
  std::copy(values.begin() + begin, values.begin() + end, shard.begin());
  return shard;
}

Matrix empty_matrix() { return Matrix::from_shape({0, 0}); }

}  // namespace

// The update rule over a flat vector, with the state of `size` values: Adam's m and v, or none.
class ShardedOptimizer::Update {
 public:
  Update(OptimizerKind kind, std::size_t size)
      : kind_(kind), size_(size), adam_(kind == OptimizerKind::Adam ? size : 0) {}

  // params[offset, offset + size) -= the rule's step for grad[0, size).
  void step(Flat& params, std::size_t offset, const Flat& grad, float lr) {
    if (kind_ == OptimizerKind::Adam) {
      adam_.step(params, offset, grad, lr);
      return;
    }
    for (std::size_t i = 0; i < size_; ++i) params(offset + i) -= lr * grad(i);
  }

  std::size_t state_bytes() const { return kind_ == OptimizerKind::Adam ? adam_.state_bytes() : 0; }

 private:
  OptimizerKind kind_;
  std::size_t size_;
  Adam<float> adam_;  // size 0 (nothing held) for SGD
};

struct ShardedOptimizer::LayerShard {
  std::size_t rows, cols;         // W's shape; b is (1, cols)
  std::size_t numel, begin, end;  // zero_shard_range of the layer's flat vector
  std::size_t s;                  // shard size, padding included
  Flat params;                    // stage 3: this rank's s parameters (kept)
  Flat grad;                      // stages 2 and 3: this rank's s summed gradients (kept)
  std::unique_ptr<Update> update;
};

ShardedOptimizer::ShardedOptimizer(MlpStageLayers& layers, int zero_stage, OptimizerKind kind,
                                   const Communicator& dp_comm)
    : layers_(layers), stage_(zero_stage), dp_comm_(dp_comm) {
  if (zero_stage < 0 || zero_stage > 3) {
    throw std::invalid_argument("ShardedOptimizer: ZeRO stage " + std::to_string(zero_stage) +
                                " does not exist (0 to 3)");
  }
  const int p = dp_comm_.Get_size();
  for (DenseLayer& layer : layers_.layers()) {
    LayerShard shard;
    shard.rows = layer.weight.shape(0);
    shard.cols = layer.weight.shape(1);
    shard.numel = layer.weight.size() + layer.bias.size();
    // Stage 0 shards nothing (and so needs none of Part 9): every rank owns every value.
    std::tie(shard.begin, shard.end) = zero_stage == 0
                                           ? std::pair<std::size_t, std::size_t>{0, shard.numel}
                                           : zero_shard_range(shard.numel, p, dp_comm_.Get_rank());
    shard.s = zero_stage == 0 ? shard.numel : (shard.numel + p - 1) / p;
    if (shard.end < shard.begin || shard.end - shard.begin > shard.s) {
      throw std::runtime_error("zero_shard_range(" + std::to_string(shard.numel) + ", " +
                               std::to_string(p) + ", " + std::to_string(dp_comm_.Get_rank()) +
                               ") returned [" + std::to_string(shard.begin) + ", " +
                               std::to_string(shard.end) + "), not a shard of at most " +
                               std::to_string(shard.s) + " values");
    }
    // A rank updates (and keeps optimizer states for) the values it owns.
    shard.update = std::make_unique<Update>(kind, shard.end - shard.begin);
    if (zero_stage == 3) {
      shard.params = padded_shard(flat_parameters(layer), shard.begin, shard.end, shard.s);
      layer.weight = empty_matrix();
      layer.bias = empty_matrix();
    }
    shards_.push_back(std::move(shard));
  }
  layers_.set_gate(zero_stage == 3 ? this : nullptr);
}

ShardedOptimizer::~ShardedOptimizer() { layers_.set_gate(nullptr); }

void ShardedOptimizer::hold(std::size_t values) {
  live_transient_ += values * kFloatBytes;
  peak_transient_ = std::max(peak_transient_, live_transient_);
}

void ShardedOptimizer::drop(std::size_t values) { live_transient_ -= values * kFloatBytes; }

void ShardedOptimizer::allocate_gradients(DenseLayer& layer, std::size_t j) const {
  layer.grad_weight = xt::zeros<float>({shards_[j].rows, shards_[j].cols});
  layer.grad_bias = xt::zeros<float>({std::size_t{1}, shards_[j].cols});
}

void ShardedOptimizer::start_step() {
  if (stage_ < 2) {
    layers_.zero_grads();
    return;
  }
  for (std::size_t j = 0; j < shards_.size(); ++j) {
    allocate_gradients(layers_.layers()[j], j);
    hold(shards_[j].numel);
  }
}

void ShardedOptimizer::step(float lr) {
  for (std::size_t j = 0; j < shards_.size(); ++j) reduce_and_update(j, lr);
}

void ShardedOptimizer::reduce_and_update(std::size_t j, float lr) {
  DenseLayer& layer = layers_.layers()[j];
  LayerShard& shard = shards_[j];
  const std::size_t n = shard.numel;
  const Flat grad = flat_gradients(layer);
  hold(n);

  if (stage_ == 0) {
    Flat summed = grad;  // one rank: nothing to sum
    if (dp_comm_.Get_size() > 1) my_allreduce(grad, summed, MPI_SUM, dp_comm_);
    Flat params = flat_parameters(layer);
    shard.update->step(params, 0, summed, lr);
    set_flat_parameters(layer, params);
    drop(n);
    return;
  }

  const Flat grad_shard =
      stage_ == 1 ? zero1_grad_shard(grad, dp_comm_) : zero2_grad_shard(grad, dp_comm_);
  expect_size(grad_shard, shard.s, stage_ == 1 ? "zero1_grad_shard" : "zero2_grad_shard");
  drop(n);
  if (stage_ >= 2) {
    // Reduced: the full gradient is no longer needed, only this rank's shard of the sum.
    shard.grad = grad_shard;
    layer.grad_weight = empty_matrix();
    layer.grad_bias = empty_matrix();
    drop(n);
  }
  if (stage_ == 3) {
    shard.update->step(shard.params, 0, grad_shard, lr);
    return;
  }
  Flat params = flat_parameters(layer);
  shard.update->step(params, shard.begin, grad_shard, lr);
  const Flat gathered =
      zero_gather_params(padded_shard(params, shard.begin, shard.end, shard.s), n, dp_comm_);
  expect_size(gathered, n, "zero_gather_params");
  set_flat_parameters(layer, gathered);
}

void ShardedOptimizer::acquire(std::size_t j) {
  DenseLayer& layer = layers_.layers()[j];
  const LayerShard& shard = shards_[j];
  const Flat gathered = zero_gather_params(shard.params, shard.numel, dp_comm_);
  expect_size(gathered, shard.numel, "zero_gather_params");
  layer.weight = Matrix::from_shape({shard.rows, shard.cols});
  layer.bias = Matrix::from_shape({std::size_t{1}, shard.cols});
  set_flat_parameters(layer, gathered);
  hold(shard.numel);
}

void ShardedOptimizer::release(std::size_t j) {
  DenseLayer& layer = layers_.layers()[j];
  layer.weight = empty_matrix();
  layer.bias = empty_matrix();
  drop(shards_[j].numel);
}

std::size_t ShardedOptimizer::parameter_count() const {
  std::size_t count = 0;
  for (const LayerShard& shard : shards_) count += shard.numel;
  return count;
}

ModelStateBytes ShardedOptimizer::state_bytes() const {
  ModelStateBytes bytes;
  for (std::size_t j = 0; j < shards_.size(); ++j) {
    const DenseLayer& layer = layers_.layers()[j];
    bytes.parameters +=
        (layer.weight.size() + layer.bias.size() + shards_[j].params.size()) * kFloatBytes;
    bytes.gradients +=
        (layer.grad_weight.size() + layer.grad_bias.size() + shards_[j].grad.size()) * kFloatBytes;
    bytes.optimizer += shards_[j].update->state_bytes();
  }
  return bytes;
}

}  // namespace dtk
