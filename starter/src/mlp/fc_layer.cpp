#include "dtk/mlp/fc_layer.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include <xtensor/xview.hpp>

#include "dtk/mlp/shape_check.hpp"
#include "dtk/training/sgd.hpp"

namespace dtk {

FCLayer::FCLayer(const Communicator& comm, const Parallelism& parallelism, bool is_fc1, int in_dim,
                 int out_dim, std::uint32_t seed)
    : is_fc1_(is_fc1),
      parallelism_(parallelism),
      info_(get_info(comm, comm.Get_rank(), parallelism.mp_size, parallelism.dp_size, is_fc1,
                     parallelism.megatron, in_dim, out_dim)) {
  const LayerWeights slice = layer_slice(info_, parallelism, is_fc1, in_dim, out_dim, seed);
  weight_ = slice.weight;
  bias_ = slice.bias;
  grad_weight_ = xt::zeros_like(weight_);
  grad_bias_ = xt::zeros_like(bias_);
}

// ------------------------------------ forward -------------------------------------------------

const Matrix& FCLayer::forward(const Matrix& x) {
  forward_memory_.start();
  forward_memory_.add(x);
  forward_memory_.add(weight_);
  forward_memory_.add(bias_);
  if (is_fc1_) {
    forward_fc1(x);
  } else if (parallelism_.megatron) {
    forward_megatron_fc2(x);
  } else {
    forward_naive_fc2(x);
  }
  forward_memory_.add(output_);
  forward_memory_.end();
  return output_;
}

// fc1 (naive and Megatron alike) is split by output columns and its input is the whole batch,
// which every rank of the group already has: no communication. Its output stays split.
void FCLayer::forward_fc1(const Matrix& x) {
  input_ = &x;
  ensure_shape(output_, x.shape(0), weight_.shape(1));
  matmul(x, weight_, output_);
  add_row(output_, bias_);
}

// Naive fc2 is split by output columns too, so it needs the WHOLE hidden activation, of which
// this rank has only its columns: gather them, compute this rank's output columns, gather
// those into the full output.
void FCLayer::forward_naive_fc2(const Matrix& x) {
  const std::size_t batch = x.shape(0);
  collected_input_ = naive_collect_forward_input(x, info_.mp_comm, parallelism_.mp_size);
  expect_shape(collected_input_, batch, weight_.shape(0), "naive_collect_forward_input");
  input_ = &collected_input_;

  ensure_shape(local_output_, batch, weight_.shape(1));
  matmul(collected_input_, weight_, local_output_);
  add_row(local_output_, bias_);

  output_ = naive_collect_forward_output(local_output_, info_.mp_comm, parallelism_.mp_size);
  expect_shape(output_, batch, weight_.shape(1) * parallelism_.mp_size,
               "naive_collect_forward_output");
  forward_memory_.add(collected_input_);
  forward_memory_.add(local_output_);
}

// Megatron's fc2 is split by input rows: the hidden columns this rank has are exactly the
// rows of W it holds, and x · W_r is this rank's share of a sum over the group. The bias is
// added once, after the sum, as Megatron-LM does: added on every rank before the sum, it would
// count mp_size times.
void FCLayer::forward_megatron_fc2(const Matrix& x) {
  const std::size_t batch = x.shape(0);
  collected_input_ = megatron_collect_forward_input(x, info_.mp_comm, parallelism_.mp_size);
  expect_shape(collected_input_, batch, weight_.shape(0), "megatron_collect_forward_input");
  input_ = &collected_input_;

  ensure_shape(local_output_, batch, weight_.shape(1));
  matmul(collected_input_, weight_, local_output_);

  output_ = megatron_collect_forward_output(local_output_, info_.mp_comm, parallelism_.mp_size);
  expect_shape(output_, batch, weight_.shape(1), "megatron_collect_forward_output");
  add_row(output_, bias_);
  forward_memory_.add(collected_input_);
  forward_memory_.add(local_output_);
}

// ------------------------------------ backward ------------------------------------------------

const Matrix& FCLayer::backward(const Matrix& output_grad) {
  backward_memory_.start();
  backward_memory_.add(output_grad);
  if (is_fc1_) {
    backward_fc1(output_grad);
  } else if (parallelism_.megatron) {
    backward_megatron_fc2(output_grad);
  } else {
    backward_naive_fc2(output_grad);
  }
  backward_memory_.add(grad_weight_);
  backward_memory_.add(grad_bias_);
  backward_memory_.end();
  return input_grad_;
}

// grad_W = inputᵀ · output_grad and grad_b = column sums of output_grad, on this rank's slice
// and this rank's part of the batch (collect_weight_grad adds the other parts in update()).
void FCLayer::compute_weight_grads(const Matrix& output_grad) {
  matmul(*input_, output_grad, grad_weight_, /*transpose_a=*/true);
  column_sums(output_grad, grad_bias_);
}

// fc1 receives the gradient of its own output columns (the ReLU's backward is element-wise).
// Nothing comes before fc1, so it does not compute the gradient of its input.
void FCLayer::backward_fc1(const Matrix& output_grad) { compute_weight_grads(output_grad); }

// Naive fc2: every rank holds the gradient of the full output; keep this rank's columns.
// output_grad_r · W_rᵀ is then this rank's contribution to the gradient of the whole hidden
// activation: sum the contributions and hand each rank back its own columns.
void FCLayer::backward_naive_fc2(const Matrix& output_grad) {
  const std::size_t batch = output_grad.shape(0);
  collected_output_grad_ =
      naive_collect_backward_output(output_grad, info_.mp_idx, parallelism_.mp_size);
  expect_shape(collected_output_grad_, batch, weight_.shape(1), "naive_collect_backward_output");
  compute_weight_grads(collected_output_grad_);

  ensure_shape(local_input_grad_, batch, weight_.shape(0));
  matmul(collected_output_grad_, weight_, local_input_grad_, false, /*transpose_b=*/true);
  input_grad_ = naive_collect_backward_x(local_input_grad_, info_.mp_comm, parallelism_.mp_size);
  expect_shape(input_grad_, batch, weight_.shape(0) / parallelism_.mp_size,
               "naive_collect_backward_x");
  backward_memory_.add(collected_output_grad_);
  backward_memory_.add(local_input_grad_);
  backward_memory_.add(input_grad_);
}

// Megatron fc2: this rank's slice produced a share of EVERY output column, so it needs the
// whole output gradient; and output_grad · W_rᵀ involves only this rank's rows of W, which is
// exactly the gradient of this rank's input slice.
void FCLayer::backward_megatron_fc2(const Matrix& output_grad) {
  const std::size_t batch = output_grad.shape(0);
  collected_output_grad_ =
      megatron_collect_backward_output(output_grad, info_.mp_idx, parallelism_.mp_size);
  expect_shape(collected_output_grad_, batch, weight_.shape(1), "megatron_collect_backward_output");
  compute_weight_grads(collected_output_grad_);

  ensure_shape(local_input_grad_, batch, weight_.shape(0));
  matmul(collected_output_grad_, weight_, local_input_grad_, false, /*transpose_b=*/true);
  input_grad_ = megatron_collect_backward_x(local_input_grad_, info_.mp_comm, parallelism_.mp_size);
  expect_shape(input_grad_, batch, weight_.shape(0), "megatron_collect_backward_x");
  backward_memory_.add(collected_output_grad_);
  backward_memory_.add(local_input_grad_);
  backward_memory_.add(input_grad_);
}

// ------------------------------------ update --------------------------------------------------

void FCLayer::update(float lr) {
  const auto [grad_weight, grad_bias] =
      collect_weight_grad(grad_weight_, grad_bias_, info_.dp_comm);
  sgd_step(weight_, grad_weight, lr, "collect_weight_grad (grad_w)");
  sgd_step(bias_, grad_bias, lr, "collect_weight_grad (grad_b)");
}

}  // namespace dtk
