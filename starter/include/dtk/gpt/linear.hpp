// A linear layer, y = x · W (+ b): x (N, in), W (in, out), b (1, out).
//
// With tensor parallelism W is a slice: a column-parallel layer (fc1, the LM head) holds some of
// W's columns and b's, and computes those columns of y; a row-parallel one (fc2, the attention's
// output projection) holds some rows of W, multiplies the matching columns of x, and its partial
// products are summed over the group (g) before the whole bias is added, outside this class.
#pragma once

#include <vector>

#include "dtk/gpt/parameter.hpp"

namespace dtk::gpt {

template <class T>
class Linear {
 public:
  explicit Linear(Parameter<T> weight);            // y = x · W
  Linear(Parameter<T> weight, Parameter<T> bias);  // y = x · W + b

  // x (N, in) → y (N, out). Keeps a reference to x, which must stay unchanged until backward.
  const Matrix<T>& forward(const Matrix<T>& x);

  // dy (N, out) → dx = dy · Wᵀ (N, in); adds xᵀ · dy to W's gradient and Σ_rows dy to b's.
  const Matrix<T>& backward(const Matrix<T>& dy);

  const Matrix<T>& output() const { return y_; }  // y of the last forward
  std::vector<Parameter<T>*> parameters();
  // Its buffers: y, and dx. Which of them count as activations (read by a backward pass) is the
  // enclosing layer's to say; x belongs to the layer that made it.
  std::size_t output_bytes() const;
  std::size_t input_grad_bytes() const;

  Parameter<T> weight;
  Parameter<T> bias;  // empty (0, 0) without a bias

 private:
  const Matrix<T>* input_ = nullptr;
  Matrix<T> y_, dx_;
};

}  // namespace dtk::gpt
