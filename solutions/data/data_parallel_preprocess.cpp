// Part 1: split the training set across the replicas of the model (data parallelism).
// Declared, with the exact contract, in include/dtk/data_parallel_preprocess.hpp.
#include <dtk/data_parallel_preprocess.hpp>

#include <xtensor/xview.hpp>

namespace dtk {

template <class T>
std::pair<xt::xtensor<T, 2>, xt::xtensor<std::int32_t, 1>> split_train(
    const xt::xtensor<T, 2>& x_train, const xt::xtensor<std::int32_t, 1>& y_train, int mp_size,
    int dp_size, int rank) {
  const int dp_idx = rank / mp_size;
  const std::size_t rows = x_train.shape(0) / dp_size;
  const std::size_t begin = dp_idx * rows, end = begin + rows;
  xt::xtensor<T, 2> x_block = xt::view(x_train, xt::range(begin, end), xt::all());
  xt::xtensor<std::int32_t, 1> y_block = xt::view(y_train, xt::range(begin, end));
  return {std::move(x_block), std::move(y_block)};
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests and the trainer link against exactly these.
// -------------------------------------------------------------------------------------------
template std::pair<xt::xtensor<float, 2>, xt::xtensor<std::int32_t, 1>> split_train<float>(
    const xt::xtensor<float, 2>&, const xt::xtensor<std::int32_t, 1>&, int, int, int);
template std::pair<xt::xtensor<double, 2>, xt::xtensor<std::int32_t, 1>> split_train<double>(
    const xt::xtensor<double, 2>&, const xt::xtensor<std::int32_t, 1>&, int, int, int);

}  // namespace dtk
