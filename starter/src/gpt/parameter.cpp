#include "dtk/gpt/parameter.hpp"

#include <numeric>
#include <random>

namespace dtk::gpt {

namespace {

// FNV-1a: a hash of the name that is the same with every compiler (std::hash is not).
std::uint64_t name_hash(const std::string& name) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const unsigned char c : name) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

template <class T>
Parameter<T> make(const std::string& name, Matrix<T> value, Sharing sharing,
                  const Matrix<double>& full) {
  Parameter<T> p;
  p.name = name;
  p.grad = xt::zeros<T>(value.shape());
  p.value = std::move(value);
  p.sharing = sharing;
  p.full_rows = full.shape(0);
  p.full_cols = full.shape(1);
  return p;
}

}  // namespace

Matrix<double> InitialWeights::normal(const std::string& name, std::size_t rows, std::size_t cols,
                                      double std) const {
  std::seed_seq seq{seed_, static_cast<std::uint32_t>(name_hash(name)),
                    static_cast<std::uint32_t>(name_hash(name) >> 32)};
  std::mt19937_64 rng(seq);
  std::normal_distribution<double> draw(0.0, std);
  Matrix<double> m({rows, cols});
  for (double& value : m) value = draw(rng);
  return m;
}

Matrix<double> constant(std::size_t rows, std::size_t cols, double value) {
  Matrix<double> m({rows, cols});
  m.fill(value);
  return m;
}

std::vector<int> index_range(int begin, int end) {
  std::vector<int> indices(end > begin ? end - begin : 0);
  std::iota(indices.begin(), indices.end(), begin);
  return indices;
}

template <class T>
Parameter<T> whole(const std::string& name, const Matrix<double>& full, Sharing sharing) {
  return make<T>(name, xt::cast<T>(full), sharing, full);
}

template <class T>
Parameter<T> column_slice(const std::string& name, const Matrix<double>& full,
                          const std::vector<int>& columns) {
  Matrix<T> slice({full.shape(0), columns.size()});
  for (std::size_t i = 0; i < full.shape(0); ++i) {
    for (std::size_t j = 0; j < columns.size(); ++j) slice(i, j) = T(full(i, columns[j]));
  }
  return make<T>(name, std::move(slice), Sharing::TensorParallel, full);
}

template <class T>
Parameter<T> column_slice(const std::string& name, const Matrix<double>& full, int begin, int end) {
  return column_slice<T>(name, full, index_range(begin, end));
}

template <class T>
Parameter<T> row_slice(const std::string& name, const Matrix<double>& full,
                       const std::vector<int>& rows) {
  Matrix<T> slice({rows.size(), full.shape(1)});
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::size_t j = 0; j < full.shape(1); ++j) slice(i, j) = T(full(rows[i], j));
  }
  return make<T>(name, std::move(slice), Sharing::TensorParallel, full);
}

#define DTK_GPT_INSTANTIATE(T)                                                             \
  template Parameter<T> whole(const std::string&, const Matrix<double>&, Sharing);         \
  template Parameter<T> column_slice(const std::string&, const Matrix<double>&,            \
                                     const std::vector<int>&);                             \
  template Parameter<T> column_slice(const std::string&, const Matrix<double>&, int, int); \
  template Parameter<T> row_slice(const std::string&, const Matrix<double>&,               \
                                  const std::vector<int>&);
DTK_GPT_INSTANTIATE(float)
DTK_GPT_INSTANTIATE(double)

}  // namespace dtk::gpt
