// The matrix products of the GPT, through BLAS (sgemm for float, dgemm for double), into buffers
// the layers keep from one step to the next: the training loop's products allocate nothing.
//
// Every matrix is row-major. A layer's weight W is (in, out), so a linear layer is y = x · W
// with x (rows, in): the forms below are the three products of a linear layer's two passes.
#pragma once

#include <cstddef>

#include <xtensor/xtensor.hpp>

#include "dtk/mlp/matrix_ops.hpp"  // ensure_shape, add_row

namespace dtk::gpt {

template <class T>
using Matrix = xt::xtensor<T, 2>;
template <class T>
using Vector = xt::xtensor<T, 1>;

// out = a · b: a (m, k), b (k, n); out is reshaped to (m, n).                 (forward)
template <class T>
void matmul(const Matrix<T>& a, const Matrix<T>& b, Matrix<T>& out);

// out += aᵀ · b: a (k, m), b (k, n), out (m, n). A weight's gradient, xᵀ · dy, added to what
// the gradient holds already.                                                   (backward)
template <class T>
void matmul_add_at_b(const Matrix<T>& a, const Matrix<T>& b, Matrix<T>& out);

// out = a · bᵀ: a (m, k), b (n, k); out is reshaped to (m, n). An input's gradient, dy · Wᵀ.
//                                                                               (backward)
template <class T>
void matmul_a_bt(const Matrix<T>& a, const Matrix<T>& b, Matrix<T>& out);

// The general product on blocks of row-major matrices, for the products that read or write a
// block of columns of a wider matrix (one attention head of Q, the Q columns of the fused QKV
// weight): C = alpha · op(A) · op(B) + beta · C, op(A) (m, k), op(B) (k, n), C (m, n), where op
// transposes when asked. lda, ldb and ldc are the row strides: a block of columns of a matrix of
// width w is passed as a pointer to its first element and the stride w.
template <class T>
void gemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k, T alpha,
          const T* a, std::size_t lda, const T* b, std::size_t ldb, T beta, T* c, std::size_t ldc);

// sums(0, j) += Σ_i m(i, j): a bias's gradient, added to what it holds. sums is (1, cols).
template <class T>
void add_column_sums(const Matrix<T>& m, Matrix<T>& sums);

}  // namespace dtk::gpt
