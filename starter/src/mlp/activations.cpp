#include "dtk/mlp/activations.hpp"

#include <algorithm>

#include "dtk/mlp/shape_check.hpp"

namespace dtk {

const Matrix& ReLU::forward(const Matrix& x) {
  ensure_shape(output_, x.shape(0), x.shape(1));
  std::transform(x.begin(), x.end(), output_.begin(), [](float v) { return std::max(v, 0.0f); });
  return output_;
}

const Matrix& ReLU::backward(const Matrix& output_grad) {
  expect_shape(output_grad, output_.shape(0), output_.shape(1), "ReLU::backward");
  ensure_shape(input_grad_, output_.shape(0), output_.shape(1));
  // The output is positive exactly where the input was.
  std::transform(output_grad.begin(), output_grad.end(), output_.begin(), input_grad_.begin(),
                 [](float grad, float out) { return out > 0.0f ? grad : 0.0f; });
  return input_grad_;
}

}  // namespace dtk
