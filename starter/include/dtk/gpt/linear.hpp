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

  // x (N, in) → y (N, out), into `y`. Keeps nothing: the enclosing layer keeps x (its input) and
  // y where its backward can read them, one per micro-batch in flight (slots.hpp).
  void forward(const Matrix<T>& x, Matrix<T>& y) const;

  // x: the forward's input; dy (N, out) → dx = dy · Wᵀ (N, in), into `dx`; adds xᵀ · dy to W's
  // gradient and Σ_rows dy to b's.
  void backward(const Matrix<T>& x, const Matrix<T>& dy, Matrix<T>& dx);

  std::vector<Parameter<T>*> parameters();

  Parameter<T> weight;
  Parameter<T> bias;  // empty (0, 0) without a bias
};

}  // namespace dtk::gpt
