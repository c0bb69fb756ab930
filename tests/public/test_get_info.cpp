// Part 2 public tests: get_info on the mp_size=2, dp_size=4 grid.
//   mpirun -n 8 ./build/tests/test_get_info
#include "dtk_test.hpp"

#include <dtk/func_impl.hpp>

#include <xtensor/xview.hpp>

namespace {

constexpr int kMpSize = 2, kDpSize = 4;
constexpr int kRanks = 8;  // tests/public/CMakeLists.txt reads the rank count here
static_assert(kRanks == kMpSize * kDpSize);

struct Layer {
  bool is_fc1, is_megatron_mp;
  int in_dim, out_dim;
  int part_in_dim, part_out_dim;  // expected
};

// Rank r holds row r of a (8, 10) matrix m(r, j) = 10 r + j. Summing it over the communicators
// shows who is in them: mp_comm of data-parallel group d holds ranks 2d and 2d + 1, dp_comm of
// model-parallel index i holds ranks i, i + 2, i + 4, i + 6.
template <class T>
void check_layer(const Layer& layer) {
  dtk::testing::on_every_rank(kRanks, [&](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int rank = world.Get_rank();
    dtk::ParallelInfo info = dtk::get_info(world, rank, kMpSize, kDpSize, layer.is_fc1,
                                           layer.is_megatron_mp, layer.in_dim, layer.out_dim);

    xt::xtensor<T, 1> mine = 10 * rank + xt::arange<T>(10);
    xt::xtensor<T, 1> mp_sum = xt::zeros<T>({10}), dp_sum = xt::zeros<T>({10});
    info.mp_comm.Allreduce(mine, mp_sum, MPI_SUM);
    info.dp_comm.Allreduce(mine, dp_sum, MPI_SUM);

    const int mp_idx = rank % kMpSize, dp_idx = rank / kMpSize;
    check.equal("mp_idx", mp_idx, info.mp_idx);
    check.equal("dp_idx", dp_idx, info.dp_idx);
    check.equal("part_in_dim", layer.part_in_dim, info.part_in_dim);
    check.equal("part_out_dim", layer.part_out_dim, info.part_out_dim);
    check.equal("mp_comm.Get_size()", kMpSize, info.mp_comm.Get_size());
    check.equal("dp_comm.Get_size()", kDpSize, info.dp_comm.Get_size());
    check.equal("rank in mp_comm (must be mp_idx)", mp_idx, info.mp_comm.Get_rank());
    check.equal("rank in dp_comm (must be dp_idx)", dp_idx, info.dp_comm.Get_rank());

    xt::xtensor<T, 1> mp_expected = xt::zeros<T>({10}), dp_expected = xt::zeros<T>({10});
    for (int i = 0; i < kMpSize; ++i)
      mp_expected += 10 * (dp_idx * kMpSize + i) + xt::arange<T>(10);
    for (int d = 0; d < kDpSize; ++d)
      dp_expected += 10 * (d * kMpSize + mp_idx) + xt::arange<T>(10);
    check.close("sum over mp_comm", mp_expected, mp_sum);
    check.close("sum over dp_comm", dp_expected, dp_sum);
  });
}

}  // namespace

TEMPLATE_TEST_CASE("Part 2 | get_info: fc1, naive (784 -> 256)", "[part2]", float, double) {
  check_layer<TestType>({true, false, 784, 256, 784, 128});
}

TEMPLATE_TEST_CASE("Part 2 | get_info: fc2, naive (256 -> 10)", "[part2]", float, double) {
  check_layer<TestType>({false, false, 256, 10, 256, 5});
}

TEMPLATE_TEST_CASE("Part 2 | get_info: fc1, Megatron (784 -> 256)", "[part2]", float, double) {
  check_layer<TestType>({true, true, 784, 256, 784, 128});
}

TEMPLATE_TEST_CASE("Part 2 | get_info: fc2, Megatron (256 -> 10)", "[part2]", float, double) {
  check_layer<TestType>({false, true, 256, 10, 128, 10});
}
