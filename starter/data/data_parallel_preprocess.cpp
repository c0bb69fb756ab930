// Part 1: split the training set across the replicas of the model (data parallelism).
// Declared, with the exact contract, in include/dtk/data_parallel_preprocess.hpp.
#include <dtk/data_parallel_preprocess.hpp>

#include <xtensor/xview.hpp>

namespace dtk {

template <class T>
std::pair<xt::xtensor<T, 2>, xt::xtensor<std::int32_t, 1>> split_train(
    const xt::xtensor<T, 2>& x_train, const xt::xtensor<std::int32_t, 1>& y_train, int mp_size,
    int dp_size, int rank) {
  // TODO (Part 1): return this rank's block of rows of x_train and y_train.
  //  1. Find this rank's data-parallel index from rank and mp_size (mp-major layout).
  //  2. Every replica gets m = n / dp_size rows; the ranks with dp_idx = d get rows
  //     [d * m, (d + 1) * m).
  //  3. Copy those rows out, e.g. xt::view(x_train, xt::range(begin, end), xt::all()), into
  //     the xt::xtensor results (assigning a view to an xt::xtensor makes a copy).
  throw NotImplemented("split_train", "data/data_parallel_preprocess.cpp");
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
