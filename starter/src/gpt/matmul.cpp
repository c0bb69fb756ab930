#include "dtk/gpt/matmul.hpp"

#include <stdexcept>
#include <string>
#include <type_traits>

#include <cblas.h>

namespace dtk::gpt {

namespace {

void check(bool fits, const char* what, std::size_t m, std::size_t k, std::size_t k2,
           std::size_t n) {
  if (!fits) {
    throw std::logic_error(std::string(what) + ": shapes do not fit (" + std::to_string(m) + "x" +
                           std::to_string(k) + " times " + std::to_string(k2) + "x" +
                           std::to_string(n) + ")");
  }
}

}  // namespace

template <class T>
void gemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k, T alpha,
          const T* a, std::size_t lda, const T* b, std::size_t ldb, T beta, T* c, std::size_t ldc) {
  if (m == 0 || n == 0) return;
  const CBLAS_TRANSPOSE op_a = transpose_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE op_b = transpose_b ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, op_a, op_b, int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb),
                beta, c, int(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, op_a, op_b, int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb),
                beta, c, int(ldc));
  }
}

template <class T>
void matmul(const Matrix<T>& a, const Matrix<T>& b, Matrix<T>& out) {
  const std::size_t m = a.shape(0), k = a.shape(1), n = b.shape(1);
  check(b.shape(0) == k, "matmul", m, k, b.shape(0), n);
  ensure_shape(out, m, n);
  gemm<T>(false, false, m, n, k, 1, a.data(), k, b.data(), n, 0, out.data(), n);
}

template <class T>
void matmul_add_at_b(const Matrix<T>& a, const Matrix<T>& b, Matrix<T>& out) {
  const std::size_t k = a.shape(0), m = a.shape(1), n = b.shape(1);
  check(b.shape(0) == k && out.shape(0) == m && out.shape(1) == n, "matmul_add_at_b", m, k,
        b.shape(0), n);
  gemm<T>(true, false, m, n, k, 1, a.data(), m, b.data(), n, 1, out.data(), n);
}

template <class T>
void matmul_a_bt(const Matrix<T>& a, const Matrix<T>& b, Matrix<T>& out) {
  const std::size_t m = a.shape(0), k = a.shape(1), n = b.shape(0);
  check(b.shape(1) == k, "matmul_a_bt", m, k, b.shape(1), n);
  ensure_shape(out, m, n);
  gemm<T>(false, true, m, n, k, 1, a.data(), k, b.data(), k, 0, out.data(), n);
}

template <class T>
void add_column_sums(const Matrix<T>& m, Matrix<T>& sums) {
  const std::size_t rows = m.shape(0), cols = m.shape(1);
  T* s = sums.data();
  const T* v = m.data();
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) s[j] += v[i * cols + j];
  }
}

#define DTK_GPT_INSTANTIATE(T)                                                                    \
  template void gemm(bool, bool, std::size_t, std::size_t, std::size_t, T, const T*, std::size_t, \
                     const T*, std::size_t, T, T*, std::size_t);                                  \
  template void matmul(const Matrix<T>&, const Matrix<T>&, Matrix<T>&);                           \
  template void matmul_add_at_b(const Matrix<T>&, const Matrix<T>&, Matrix<T>&);                  \
  template void matmul_a_bt(const Matrix<T>&, const Matrix<T>&, Matrix<T>&);                      \
  template void add_column_sums(const Matrix<T>&, Matrix<T>&);
DTK_GPT_INSTANTIATE(float)
DTK_GPT_INSTANTIATE(double)

}  // namespace dtk::gpt
