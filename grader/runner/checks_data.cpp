// Part 1: split_train. One process plays every rank of the (mp, dp) grid.
#include "check_context.hpp"

namespace dtk::grade {

namespace {

template <class T>
void split_train_case(CheckContext& context) {
  const int mp = context.test.mp, dp = context.test.dp;
  Rng shape = context.rng("shape");
  // Often not a multiple of dp: the leftover rows must be dropped.
  const std::size_t rows = dp * shape.uniform_int(1, 5) + shape.uniform_int(0, dp - 1);
  const std::size_t features = shape.uniform_int(1, 4);
  Rng data = context.rng("data");
  const xt::xtensor<T, 2> x = random_matrix<T>(data, rows, features);
  auto y = xt::xtensor<std::int32_t, 1>::from_shape({rows});
  for (std::int32_t& label : y) label = data.uniform_int(0, 999);

  context.out.note("training set of " + std::to_string(rows) + " rows and " +
                   std::to_string(features) + " features; every rank of the grid is checked");
  for (int rank = 0; rank < mp * dp; ++rank) {
    const auto [x_part, y_part] = split_train<T>(x, y, mp, dp, rank);
    record_tensor(context.out, "rank " + std::to_string(rank) + ": x block", x_part);
    record_tensor(context.out, "rank " + std::to_string(rank) + ": y block", y_part);
  }
}

}  // namespace

void check_split_train(CheckContext& context) {
  run_typed(context, split_train_case<float>, split_train_case<double>);
}

}  // namespace dtk::grade
