// ReLU, the activation between fc1 and fc2.
#pragma once

#include "dtk/mlp/matrix_ops.hpp"

namespace dtk {

// Element-wise, so it needs no communication: each rank applies it to its own columns of
// fc1's output.
class ReLU {
 public:
  // max(x, 0), element-wise.
  const Matrix& forward(const Matrix& x);

  // output_grad where forward's input was positive, 0 elsewhere.
  const Matrix& backward(const Matrix& output_grad);

 private:
  Matrix output_, input_grad_;
};

}  // namespace dtk
