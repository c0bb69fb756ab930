// Part 1 public tests: split_train. Serial: one process plays every rank of the grid.
//   ./build/tests/test_split_train        (or: mpirun -n 1 ./build/tests/test_split_train)
#include "dtk_test.hpp"

#include <dtk/data_parallel_preprocess.hpp>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

namespace {

constexpr int kRanks = 1;  // serial; tests/public/CMakeLists.txt reads the rank count here

// A (rows, cols) training set whose row i holds i * 100 + column, labelled i.
template <class T>
std::pair<xt::xtensor<T, 2>, xt::xtensor<std::int32_t, 1>> numbered_rows(int rows, int cols) {
  xt::xtensor<T, 2> x = xt::zeros<T>({rows, cols});
  xt::xtensor<std::int32_t, 1> y = xt::zeros<std::int32_t>({rows});
  for (int i = 0; i < rows; ++i) {
    y(i) = i;
    for (int j = 0; j < cols; ++j) x(i, j) = static_cast<T>(i * 100 + j);
  }
  return {x, y};
}

// Checks every rank of an (mp_size, dp_size) grid: the ranks with dp_idx d = rank / mp_size get
// rows [d * m, (d + 1) * m) with m = rows / dp_size.
template <class T>
void check_grid(dtk::testing::Checks& check, int rows, int cols, int mp_size, int dp_size) {
  const auto [x, y] = numbered_rows<T>(rows, cols);
  const int m = rows / dp_size;
  for (int rank = 0; rank < mp_size * dp_size; ++rank) {
    const auto [x_part, y_part] = dtk::split_train<T>(x, y, mp_size, dp_size, rank);
    const int begin = (rank / mp_size) * m;
    const std::string where =
        "rows=" + std::to_string(rows) + ", mp_size=" + std::to_string(mp_size) +
        ", dp_size=" + std::to_string(dp_size) + ", rank=" + std::to_string(rank);
    xt::xtensor<T, 2> x_expected = xt::view(x, xt::range(begin, begin + m), xt::all());
    xt::xtensor<std::int32_t, 1> y_expected = xt::view(y, xt::range(begin, begin + m));
    check.close("x block (" + where + ")", x_expected, x_part);
    check.close("y block (" + where + ")", y_expected, y_part);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("Part 1 | split_train: mp_size=2, dp_size=4 on 16 rows", "[part1]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks,
                              [](auto& check) { check_grid<TestType>(check, 16, 3, 2, 4); });
}

TEMPLATE_TEST_CASE("Part 1 | split_train: one replica keeps every row", "[part1]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](auto& check) {
    check_grid<TestType>(check, 5, 2, 1, 1);
    check_grid<TestType>(check, 6, 4, 4, 1);  // four model-parallel ranks, one replica
  });
}

TEMPLATE_TEST_CASE("Part 1 | split_train: the ranks of one replica share its block", "[part1]",
                   float, double) {
  dtk::testing::on_every_rank(kRanks,
                              [](auto& check) { check_grid<TestType>(check, 12, 5, 4, 2); });
}

TEMPLATE_TEST_CASE("Part 1 | split_train: leftover rows are dropped (10 rows, dp_size=3)",
                   "[part1]", float, double) {
  dtk::testing::on_every_rank(kRanks,
                              [](auto& check) { check_grid<TestType>(check, 10, 2, 1, 3); });
}
