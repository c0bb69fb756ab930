// How the layers of one pipeline stage are split over a model-parallel group (3-D training:
// pipeline x tensor x data parallel), and the communication a split layer needs around its
// matrix product. MlpStage calls a LayerSplit where a layer has one; tensor_parallel_split.hpp
// makes them, with your assignment 1 functions doing the communication.
//
// This header knows nothing of those functions, so that a build without assignment 1's files
// (assignment 2's bundle) still links the pipeline trainer: there, no stage is split.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dtk/communicator.hpp"
#include "dtk/mlp/fc_layer.hpp"
#include "dtk/mlp/matrix_ops.hpp"

namespace dtk {

// One layer's part in a model-parallel group. With W_r and b_r this rank's slices:
//   forward   product = forward_input(x) · W_r;  output = forward_output(product, b_r)
//   backward  g_r = backward_output(output_grad);  grad W_r = inputᵀ · g_r, grad b_r = Σ g_r;
//             input_grad = backward_input(g_r · W_rᵀ)
class LayerSplit {
 public:
  virtual ~LayerSplit() = default;
  virtual Matrix forward_input(const Matrix& x) = 0;
  virtual Matrix forward_output(const Matrix& product, const Matrix& bias) = 0;
  virtual Matrix backward_output(const Matrix& output_grad) = 0;
  virtual Matrix backward_input(const Matrix& product_grad) = 0;
  // False where every rank of the group holds the same whole bias and another rank's copy
  // counts (when the model's weights are measured, e.g. weights_l2).
  virtual bool owns_bias() const = 0;
  // What this rank sent over its model-parallel communicator so far.
  virtual std::uint64_t bytes_sent() const = 0;
};

// A stage's layers split over its model-parallel group.
struct StageSplit {
  std::vector<std::unique_ptr<LayerSplit>> layers;  // one per layer of the stage
  std::vector<LayerWeights> weights;                // this rank's slices of their starting weights
  // The ranks holding the same slices (the data-parallel group).
  Communicator dp_comm = Communicator(MPI_COMM_WORLD);
};

// Splits layers [first_layer, last_layer) of the MLP with these widths over the model-parallel
// groups of stage_comm (the stage's mp_size * dp_size ranks, in assignment 1's layout).
// Collective over stage_comm.
using TensorParallelSplitter = StageSplit (*)(const Communicator& stage_comm,
                                              const Parallelism& parallelism,
                                              const std::vector<int>& widths, int first_layer,
                                              int last_layer, std::uint32_t seed);

}  // namespace dtk
