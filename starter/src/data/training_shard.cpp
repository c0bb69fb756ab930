// training_shard and test_shard (shard.hpp): assignment 1's split of the data among replicas.
// Apart from Shard itself, so that a program that never calls split_train (the pipeline trainer
// of assignment 2) links without it.
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "dtk/data/shard.hpp"
#include "dtk/data_parallel_preprocess.hpp"

namespace dtk {

Shard training_shard(const ImageSet& train, const Parallelism& parallelism, int rank) {
  // split_train needs only to know how many rows there are: hand it the row numbers, as a
  // (count, 1) matrix (a double holds them exactly), and get back this rank's row numbers.
  xt::xtensor<double, 2> row_numbers({train.count, 1});
  std::iota(row_numbers.begin(), row_numbers.end(), 0.0);
  xt::xtensor<std::int32_t, 1> labels = xt::empty<std::int32_t>({train.count});
  std::copy(train.labels.begin(), train.labels.end(), labels.begin());

  const xt::xtensor<double, 2> my_rows =
      split_train(row_numbers, labels, parallelism.mp_size, parallelism.dp_size, rank).first;
  std::vector<std::size_t> rows(my_rows.begin(), my_rows.end());
  for (const std::size_t row : rows) {
    if (row >= train.count) {
      throw std::runtime_error("split_train returned row " + std::to_string(row) +
                               " of a training set of " + std::to_string(train.count));
    }
  }
  return Shard(train, std::move(rows));
}

Shard test_shard(const ImageSet& test, const Parallelism& parallelism, int rank) {
  return contiguous_part(test, rank / parallelism.mp_size, parallelism.dp_size);
}

}  // namespace dtk
