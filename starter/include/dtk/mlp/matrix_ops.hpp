// The few matrix operations the model needs, on row-major float32 matrices, written so that the
// training loop allocates nothing: every result goes into a buffer the caller keeps between
// steps. ensure_shape and add_row serve the GPT's float and double matrices too (dtk/gpt/).
#pragma once

#include <cstddef>

#include <xtensor/xtensor.hpp>

namespace dtk {

using Matrix = xt::xtensor<float, 2>;

// Gives `buffer` the shape (rows, cols). Its memory is reused when the shape is already right,
// which is every step but the last (shorter) batch of an epoch.
template <class T>
void ensure_shape(xt::xtensor<T, 2>& buffer, std::size_t rows, std::size_t cols) {
  if (buffer.shape(0) != rows || buffer.shape(1) != cols) buffer.resize({rows, cols});
}

// out = op(a) · op(b) with BLAS sgemm, where op transposes when asked. `out` must already have
// the shape of the product.
void matmul(const Matrix& a, const Matrix& b, Matrix& out, bool transpose_a = false,
            bool transpose_b = false);

// out(i, j) += row(0, j) for every row i: adds a (1, cols) bias to a (rows, cols) matrix.
// T is float or double.
template <class T>
void add_row(xt::xtensor<T, 2>& out, const xt::xtensor<T, 2>& row);

// sums(0, j) = sum over i of m(i, j): the bias gradient. Reshapes `sums` to (1, cols).
void column_sums(const Matrix& m, Matrix& sums);

}  // namespace dtk
