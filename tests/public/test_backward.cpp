// Part 6 public tests: the Megatron forward collectors, the backward collectors (naive and
// Megatron) and collect_weight_grad, on 4 ranks.
//   mpirun -n 4 ./build/tests/test_backward
#include "dtk_test.hpp"

#include <dtk/func_impl.hpp>

#include <functional>

#include <xtensor/xview.hpp>

namespace {

constexpr int kRanks = 4;

// The (rows, cols) matrix m(i, j) = value(i, j).
template <class T>
xt::xtensor<T, 2> make_matrix(std::size_t rows, std::size_t cols,
                              const std::function<double(std::size_t, std::size_t)>& value) {
  xt::xtensor<T, 2> m = xt::zeros<T>({rows, cols});
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) m(i, j) = static_cast<T>(value(i, j));
  }
  return m;
}

// Columns [block * width, (block + 1) * width) of m.
template <class T>
xt::xtensor<T, 2> column_block(const xt::xtensor<T, 2>& m, std::size_t block, std::size_t width) {
  return xt::view(m, xt::all(), xt::range(block * width, (block + 1) * width));
}

// What rank r of a group holds in the tests where every rank holds something different:
// small integers, so that float sums are exact.
template <class T>
xt::xtensor<T, 2> rank_matrix(int r, std::size_t rows, std::size_t cols) {
  return make_matrix<T>(rows, cols, [r](std::size_t i, std::size_t j) {
    return static_cast<double>((7 * r + 3 * i + j) % 10 + 10 * r);
  });
}

// The sum over the ranks of a group of `size` ranks of rank_matrix.
template <class T>
xt::xtensor<T, 2> sum_of_rank_matrices(int size, std::size_t rows, std::size_t cols) {
  xt::xtensor<T, 2> sum = xt::zeros<T>({rows, cols});
  for (int r = 0; r < size; ++r) sum += rank_matrix<T>(r, rows, cols);
  return sum;
}

std::string shape_text(std::size_t rows, std::size_t cols) {
  return "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")";
}

// ------------------------------------ naive backward ------------------------------------------

// Every rank holds the same full output gradient (rows, cols); rank r must keep column block r.
template <class T>
void check_naive_backward_output(dtk::testing::Checks& check, std::size_t rows, std::size_t cols) {
  dtk::Communicator world;
  const int mp_idx = world.Get_rank();
  const xt::xtensor<T, 2> output_grad =
      make_matrix<T>(rows, cols, [](std::size_t i, std::size_t j) { return 100.0 * i + j; });
  const xt::xtensor<T, 2> mine = dtk::naive_collect_backward_output<T>(output_grad, mp_idx, kRanks);
  check.close("naive_collect_backward_output of a " + shape_text(rows, cols) +
                  " output_grad, mp_group_idx " + std::to_string(mp_idx) + ", mp_size 4",
              column_block(output_grad, mp_idx, cols / kRanks), mine);
}

// Rank r holds its own contribution grad_x_r (rows, cols); it must receive column block r of
// the sum of all contributions.
template <class T>
void check_naive_backward_x(dtk::testing::Checks& check, dtk::Communicator& mp_comm,
                            std::size_t rows, std::size_t cols) {
  const int mp_size = mp_comm.Get_size(), mp_idx = mp_comm.Get_rank();
  const xt::xtensor<T, 2> grad_x = rank_matrix<T>(mp_idx, rows, cols);
  const xt::xtensor<T, 2> mine = dtk::naive_collect_backward_x<T>(grad_x, mp_comm, mp_size);
  const xt::xtensor<T, 2> expected =
      column_block(sum_of_rank_matrices<T>(mp_size, rows, cols), mp_idx, cols / mp_size);
  check.close("naive_collect_backward_x of a " + shape_text(rows, cols) + " grad_x, mp_size " +
                  std::to_string(mp_size) + " (your columns of the sum over the group)",
              expected, mine);
}

// ------------------------------------ Megatron --------------------------------------------------

// Rank r holds its input slice (rows, cols): Megatron's fc2 multiplies it as it is.
template <class T>
void check_megatron_forward_input(dtk::testing::Checks& check, std::size_t rows, std::size_t cols) {
  dtk::Communicator world;
  const xt::xtensor<T, 2> x = rank_matrix<T>(world.Get_rank(), rows, cols);
  const xt::xtensor<T, 2> collected = dtk::megatron_collect_forward_input<T>(x, world, kRanks);
  check.close("megatron_collect_forward_input of a " + shape_text(rows, cols) +
                  " input slice (fc2 multiplies exactly this slice)",
              x, collected);
}

// Rank r holds its partial output x_r · W_r (rows, cols): the output is the sum over the group.
template <class T>
void check_megatron_forward_output(dtk::testing::Checks& check, dtk::Communicator& mp_comm,
                                   std::size_t rows, std::size_t cols) {
  const int mp_size = mp_comm.Get_size();
  const xt::xtensor<T, 2> partial = rank_matrix<T>(mp_comm.Get_rank(), rows, cols);
  const xt::xtensor<T, 2> out = dtk::megatron_collect_forward_output<T>(partial, mp_comm, mp_size);
  check.close("megatron_collect_forward_output of a " + shape_text(rows, cols) +
                  " partial output, mp_size " + std::to_string(mp_size) +
                  " (the sum over the group)",
              sum_of_rank_matrices<T>(mp_size, rows, cols), out);
}

// Every rank holds the full output gradient: Megatron's fc2 slice needs all of it.
template <class T>
void check_megatron_backward_output(dtk::testing::Checks& check, std::size_t rows,
                                    std::size_t cols) {
  dtk::Communicator world;
  const int mp_idx = world.Get_rank();
  const xt::xtensor<T, 2> output_grad =
      make_matrix<T>(rows, cols, [](std::size_t i, std::size_t j) { return 100.0 * i + j; });
  const xt::xtensor<T, 2> collected =
      dtk::megatron_collect_backward_output<T>(output_grad, mp_idx, kRanks);
  check.close("megatron_collect_backward_output of a " + shape_text(rows, cols) +
                  " output_grad, mp_group_idx " + std::to_string(mp_idx) + " (the whole gradient)",
              output_grad, collected);
}

// Rank r holds output_grad · W_rᵀ (rows, cols), already the gradient of its input slice.
template <class T>
void check_megatron_backward_x(dtk::testing::Checks& check, std::size_t rows, std::size_t cols) {
  dtk::Communicator world;
  const xt::xtensor<T, 2> grad_x = rank_matrix<T>(world.Get_rank(), rows, cols);
  const xt::xtensor<T, 2> collected = dtk::megatron_collect_backward_x<T>(grad_x, world, kRanks);
  check.close("megatron_collect_backward_x of a " + shape_text(rows, cols) +
                  " grad_x (already the gradient of your input slice)",
              grad_x, collected);
}

// ------------------------------------ data parallel -------------------------------------------

// Rank d of dp_comm holds rows [d * w_rows, (d + 1) * w_rows) of a (size * w_rows, cols) matrix
// as its grad_w, and row d of a (size, cols) matrix as its grad_b: the results are the sums of
// those blocks over the group.
template <class T>
void check_collect_weight_grad(dtk::testing::Checks& check, dtk::Communicator& dp_comm,
                               std::size_t w_rows, std::size_t cols) {
  const int size = dp_comm.Get_size(), dp_idx = dp_comm.Get_rank();
  const auto all_w = make_matrix<T>(size * w_rows, cols, [](std::size_t i, std::size_t j) {
    return static_cast<double>((3 * i + j) % 10 + i);
  });
  const auto all_b = make_matrix<T>(size, cols, [](std::size_t i, std::size_t j) {
    return static_cast<double>((3 * i + 7 * j) % 10);
  });
  const xt::xtensor<T, 2> grad_w =
      xt::view(all_w, xt::range(dp_idx * w_rows, (dp_idx + 1) * w_rows), xt::all());
  const xt::xtensor<T, 2> grad_b = xt::view(all_b, xt::range(dp_idx, dp_idx + 1), xt::all());

  const auto [total_w, total_b] = dtk::collect_weight_grad<T>(grad_w, grad_b, dp_comm);

  xt::xtensor<T, 2> expected_w = xt::zeros<T>({w_rows, cols});
  xt::xtensor<T, 2> expected_b = xt::zeros<T>({std::size_t{1}, cols});
  for (int d = 0; d < size; ++d) {
    expected_w += xt::view(all_w, xt::range(d * w_rows, (d + 1) * w_rows), xt::all());
    expected_b += xt::view(all_b, xt::range(d, d + 1), xt::all());
  }
  const std::string what =
      " over a data-parallel group of " + std::to_string(size) + " (summed, not averaged)";
  check.close("collect_weight_grad: grad_w " + shape_text(w_rows, cols) + what, expected_w,
              total_w);
  check.close("collect_weight_grad: grad_b " + shape_text(1, cols) + what, expected_b, total_b);
}

}  // namespace

TEMPLATE_TEST_CASE("Part 6 | naive_collect_backward_output: 1 row, mp_size=4", "[part6]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_naive_backward_output<TestType>(check, 1, 16);
  });
}

TEMPLATE_TEST_CASE("Part 6 | naive_collect_backward_output: 2 rows, mp_size=4", "[part6]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_naive_backward_output<TestType>(check, 2, 8);
  });
}

TEMPLATE_TEST_CASE("Part 6 | naive_collect_backward_x: 1 row, mp_size=4", "[part6]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    check_naive_backward_x<TestType>(check, world, 1, 8);
  });
}

TEMPLATE_TEST_CASE("Part 6 | naive_collect_backward_x: 2 rows, mp_size=4", "[part6]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    check_naive_backward_x<TestType>(check, world, 2, 8);
  });
}

TEMPLATE_TEST_CASE("Part 6 | megatron_collect_forward_input: 1 row, mp_size=4", "[part6]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_megatron_forward_input<TestType>(check, 1, 4);
  });
}

TEMPLATE_TEST_CASE("Part 6 | megatron_collect_forward_input: 2 rows, mp_size=4", "[part6]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_megatron_forward_input<TestType>(check, 2, 2);
  });
}

TEMPLATE_TEST_CASE("Part 6 | megatron_collect_forward_output: 1 row, mp_size=4", "[part6]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    check_megatron_forward_output<TestType>(check, world, 1, 8);
  });
}

TEMPLATE_TEST_CASE("Part 6 | megatron_collect_forward_output: 2 rows, mp_size=4", "[part6]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    check_megatron_forward_output<TestType>(check, world, 2, 8);
  });
}

TEMPLATE_TEST_CASE("Part 6 | megatron_collect_backward_output: 1 row, mp_size=4", "[part6]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_megatron_backward_output<TestType>(check, 1, 16);
  });
}

TEMPLATE_TEST_CASE("Part 6 | megatron_collect_backward_output: 2 rows, mp_size=4", "[part6]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_megatron_backward_output<TestType>(check, 2, 8);
  });
}

TEMPLATE_TEST_CASE("Part 6 | megatron_collect_backward_x: 1 row, mp_size=4", "[part6]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_megatron_backward_x<TestType>(check, 1, 8);
  });
}

TEMPLATE_TEST_CASE("Part 6 | megatron_collect_backward_x: 2 rows, mp_size=4", "[part6]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_megatron_backward_x<TestType>(check, 2, 8);
  });
}

TEMPLATE_TEST_CASE("Part 6 | collect_weight_grad: 2 rows of an (8, 8) grad_w, dp_size=4", "[part6]",
                   float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    check_collect_weight_grad<TestType>(check, world, 2, 8);
  });
}

TEMPLATE_TEST_CASE("Part 6 | collect_weight_grad: 4 rows of a (16, 8) grad_w, dp_size=4", "[part6]",
                   float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    check_collect_weight_grad<TestType>(check, world, 4, 8);
  });
}

TEMPLATE_TEST_CASE(
    "Part 6 | inside two groups of 2 (mp=2, dp=2): backward_x, forward_output, "
    "collect_weight_grad",
    "[part6]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // Groups built here with Split, not with your get_info: this test checks Part 6 alone.
    dtk::Communicator world;
    const int rank = world.Get_rank();
    dtk::Communicator mp_comm = world.Split(/*color=*/rank / 2, /*key=*/rank % 2);
    dtk::Communicator dp_comm = world.Split(/*color=*/rank % 2, /*key=*/rank / 2);
    check_naive_backward_x<TestType>(check, mp_comm, 3, 6);
    check_megatron_forward_output<TestType>(check, mp_comm, 3, 5);
    check_collect_weight_grad<TestType>(check, dp_comm, 3, 5);
  });
}
