// Part 3 public tests: naive_collect_forward_input / naive_collect_forward_output on 4 ranks.
//   mpirun -n 4 ./build/tests/test_naive_forward
#include "dtk_test.hpp"

#include <dtk/func_impl.hpp>

#include <xtensor/xview.hpp>

namespace {

constexpr int kRanks = 4;

// full(i, j) = 100 i + j: a (batch, width * mp_size) matrix whose column block r is what model-
// parallel rank r holds.
template <class T>
xt::xtensor<T, 2> full_matrix(std::size_t batch, std::size_t width) {
  xt::xtensor<T, 2> full({batch, width});
  for (std::size_t i = 0; i < batch; ++i) {
    for (std::size_t j = 0; j < width; ++j) full(i, j) = static_cast<T>(100 * i + j);
  }
  return full;
}

template <class T>
using CollectFn = xt::xtensor<T, 2> (*)(const xt::xtensor<T, 2>&, dtk::Communicator&, int);

// Every rank of `mp_comm` (mp_size ranks) holds its (batch, width) column block of full_matrix;
// collecting must give every rank the whole matrix.
template <class T>
void check_collect(dtk::testing::Checks& check, CollectFn<T> collect, const std::string& name,
                   dtk::Communicator& mp_comm, std::size_t batch, std::size_t width) {
  const int mp_size = mp_comm.Get_size(), mp_idx = mp_comm.Get_rank();
  const xt::xtensor<T, 2> full = full_matrix<T>(batch, width * mp_size);
  const xt::xtensor<T, 2> mine =
      xt::view(full, xt::all(), xt::range(mp_idx * width, (mp_idx + 1) * width));
  const xt::xtensor<T, 2> collected = collect(mine, mp_comm, mp_size);
  check.close(name + " with batch " + std::to_string(batch) + ", part dim " +
                  std::to_string(width) + ", mp_size " + std::to_string(mp_size),
              full, collected);
}

}  // namespace

TEMPLATE_TEST_CASE("Part 3 | naive_collect_forward_input: 1 row, mp_size=4", "[part3]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](auto& check) {
    dtk::Communicator world;
    check_collect<TestType>(check, dtk::naive_collect_forward_input<TestType>,
                            "naive_collect_forward_input", world, 1, 4);
  });
}

TEMPLATE_TEST_CASE("Part 3 | naive_collect_forward_input: 2 rows, mp_size=4", "[part3]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](auto& check) {
    dtk::Communicator world;
    check_collect<TestType>(check, dtk::naive_collect_forward_input<TestType>,
                            "naive_collect_forward_input", world, 2, 2);
  });
}

TEMPLATE_TEST_CASE("Part 3 | naive_collect_forward_output: 1 row, mp_size=4", "[part3]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](auto& check) {
    dtk::Communicator world;
    check_collect<TestType>(check, dtk::naive_collect_forward_output<TestType>,
                            "naive_collect_forward_output", world, 1, 4);
  });
}

TEMPLATE_TEST_CASE("Part 3 | naive_collect_forward_output: 2 rows, mp_size=4", "[part3]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](auto& check) {
    dtk::Communicator world;
    check_collect<TestType>(check, dtk::naive_collect_forward_output<TestType>,
                            "naive_collect_forward_output", world, 2, 2);
  });
}

TEMPLATE_TEST_CASE("Part 3 | naive collection inside two model-parallel groups (mp=2, dp=2)",
                   "[part3]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](auto& check) {
    // Groups built here with Split, not with your get_info: this test checks Part 3 alone.
    dtk::Communicator world;
    const int rank = world.Get_rank();
    dtk::Communicator mp_comm = world.Split(/*color=*/rank / 2, /*key=*/rank % 2);
    check_collect<TestType>(check, dtk::naive_collect_forward_input<TestType>,
                            "naive_collect_forward_input", mp_comm, 3, 5);
    check_collect<TestType>(check, dtk::naive_collect_forward_output<TestType>,
                            "naive_collect_forward_output", mp_comm, 3, 5);
  });
}
