// The model: a 784-256-10 multi-layer perceptron, fc1 -> ReLU -> fc2 -> softmax cross-entropy,
// trained with model parallelism inside each replica (mp_size ranks: one model-parallel group)
// and data parallelism across the dp_size replicas.
#pragma once

#include <cstdint>

#include "dtk/communicator.hpp"
#include "dtk/mlp/activations.hpp"
#include "dtk/mlp/fc_layer.hpp"
#include "dtk/mlp/loss.hpp"

namespace dtk {

struct MlpDims {
  int in_dim = 784;  // 28 x 28 pixels
  int hidden_dim = 256;
  int out_dim = 10;  // classes
};

class MLP {
 public:
  static constexpr std::uint32_t kDefaultSeed = 2024;

  // comm holds the mp_size * dp_size ranks that train together (collective over comm). fc1 is
  // drawn from `seed` and fc2 from seed + 1: every layout starts from the same full weights.
  MLP(const Communicator& comm, const Parallelism& parallelism, std::uint32_t seed = kDefaultSeed,
      const MlpDims& dims = {});

  // x: this replica's part of the global batch, (batch, in_dim), and its labels.
  // Every rank of the replica passes the same x. Returns the replica's loss and
  // correct predictions on it.
  BatchStats forward(const Matrix& x, const Labels& labels);

  // Backpropagates the loss of the last forward() through fc2, ReLU and fc1.
  void backward();

  // SGD step of both layers with learning rate lr.
  void update(float lr);

  // forward, backward, update.
  BatchStats train_step(const Matrix& x, const Labels& labels, float lr);

  const FCLayer& fc1() const { return fc1_; }
  const FCLayer& fc2() const { return fc2_; }
  const Parallelism& parallelism() const { return parallelism_; }

 private:
  Parallelism parallelism_;
  FCLayer fc1_;
  ReLU relu_;
  FCLayer fc2_;
  SoftmaxCrossEntropy loss_;
};

}  // namespace dtk
