// FCLayer: a fully connected layer, out = x · W + b, split across a model-parallel group.
//
// This is where your Part 3 and Part 6 functions run. The layer computes with its own slice of
// W and b and calls your functions whenever it needs what other ranks hold:
//
//                  forward                            backward
//   fc1            (none: its input is the whole      (none: no layer before it needs the
//                   batch, its output stays split)     gradient of its input)
//   fc2, naive     naive_collect_forward_input        naive_collect_backward_output
//                  naive_collect_forward_output       naive_collect_backward_x
//   fc2, Megatron  megatron_collect_forward_input     megatron_collect_backward_output
//                  megatron_collect_forward_output    megatron_collect_backward_x
//
// Both layers call collect_weight_grad in update(). Read fc_layer.cpp to see what each
// function receives and what the layer does with its result.
#pragma once

#include <cstdint>

#include "dtk/communicator.hpp"
#include "dtk/func_impl.hpp"
#include "dtk/mlp/layer_weights.hpp"
#include "dtk/mlp/matrix_ops.hpp"
#include "dtk/mlp/memory_profiler.hpp"

namespace dtk {

class FCLayer {
 public:
  // comm holds the mp_size * dp_size ranks that train together. The layer asks get_info
  // (Part 2) for its communicators and slice sizes, then draws the FULL W (in_dim, out_dim) and
  // b (1, out_dim) from `seed` and keeps its slice: every rank, in every layout, starts from
  // the same full weights. Collective over comm.
  FCLayer(const Communicator& comm, const Parallelism& parallelism, bool is_fc1, int in_dim,
          int out_dim, std::uint32_t seed);

  // fc1: x is this rank's batch (batch, in_dim); returns its output columns
  //      (batch, part_out_dim).
  // fc2: x is this rank's slice of the hidden activations (batch, in_dim / mp_size); returns
  //      the full output (batch, out_dim), the same on every rank of the model-parallel group.
  // x must stay unchanged until backward(): fc1 multiplies by it again there.
  const Matrix& forward(const Matrix& x);

  // output_grad: the gradient of the loss with respect to what forward() returned. Computes the
  // gradients of this rank's W and b slices. fc2 returns the gradient with respect to its input
  // x (same shape as x); fc1 returns an empty matrix (no layer before it needs one).
  const Matrix& backward(const Matrix& output_grad);

  // One SGD step: sums the gradients over the data-parallel group with collect_weight_grad,
  // then W -= lr * grad_W and b -= lr * grad_b.
  void update(float lr);

  const ParallelInfo& info() const { return info_; }
  const Matrix& weight() const { return weight_; }  // (part_in_dim, part_out_dim)
  const Matrix& bias() const { return bias_; }      // (1, part_out_dim)

  // Peak bytes of the tensors of one forward pass (input, collected input, W, b, local and
  // collected output) and of one backward pass (output gradient, collected output gradient,
  // grad W, grad b, local and collected input gradient).
  const MemoryProfiler& forward_memory() const { return forward_memory_; }
  const MemoryProfiler& backward_memory() const { return backward_memory_; }

 private:
  void forward_fc1(const Matrix& x);
  void forward_naive_fc2(const Matrix& x);
  void forward_megatron_fc2(const Matrix& x);
  void backward_fc1(const Matrix& output_grad);
  void backward_naive_fc2(const Matrix& output_grad);
  void backward_megatron_fc2(const Matrix& output_grad);
  void compute_weight_grads(const Matrix& output_grad);

  bool is_fc1_;
  Parallelism parallelism_;
  ParallelInfo info_;
  Matrix weight_, bias_;
  Matrix grad_weight_, grad_bias_;

  // Buffers kept from step to step (see matrix_ops.hpp) and the results of your functions.
  const Matrix* input_ = nullptr;  // what forward multiplied by W: x or collected_input_
  Matrix collected_input_;         // fc2: your *_collect_forward_input(x)
  Matrix local_output_;            // fc2: this rank's x · W (+ b for naive)
  Matrix output_;                  // what forward returns
  Matrix collected_output_grad_;   // fc2: your *_collect_backward_output(output_grad)
  Matrix local_input_grad_;        // fc2: collected output grad · Wᵀ
  Matrix input_grad_;              // what backward returns: your *_collect_backward_x(...)

  MemoryProfiler forward_memory_, backward_memory_;
};

}  // namespace dtk
