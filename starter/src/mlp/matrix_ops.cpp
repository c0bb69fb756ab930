#include "dtk/mlp/matrix_ops.hpp"

#include <stdexcept>
#include <string>

#include <xtensor-blas/xblas.hpp>

namespace dtk {

void matmul(const Matrix& a, const Matrix& b, Matrix& out, bool transpose_a, bool transpose_b) {
  const std::size_t m = a.shape(transpose_a ? 1 : 0), k = a.shape(transpose_a ? 0 : 1);
  const std::size_t b_rows = b.shape(transpose_b ? 1 : 0), n = b.shape(transpose_b ? 0 : 1);
  if (k != b_rows || out.shape(0) != m || out.shape(1) != n) {
    throw std::logic_error("matmul: shapes do not fit (" + std::to_string(m) + "x" +
                           std::to_string(k) + " times " + std::to_string(b_rows) + "x" +
                           std::to_string(n) + " into " + std::to_string(out.shape(0)) + "x" +
                           std::to_string(out.shape(1)) + ")");
  }
  xt::blas::gemm(a, b, out, transpose_a, transpose_b);
}

template <class T>
void add_row(xt::xtensor<T, 2>& out, const xt::xtensor<T, 2>& row) {
  const std::size_t rows = out.shape(0), cols = out.shape(1);
  T* o = out.data();
  const T* r = row.data();
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) o[i * cols + j] += r[j];
  }
}

template void add_row(xt::xtensor<float, 2>&, const xt::xtensor<float, 2>&);
template void add_row(xt::xtensor<double, 2>&, const xt::xtensor<double, 2>&);

void column_sums(const Matrix& m, Matrix& sums) {
  const std::size_t rows = m.shape(0), cols = m.shape(1);
  ensure_shape(sums, 1, cols);
  float* s = sums.data();
  const float* v = m.data();
  for (std::size_t j = 0; j < cols; ++j) s[j] = 0.0f;
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) s[j] += v[i * cols + j];
  }
}

}  // namespace dtk
