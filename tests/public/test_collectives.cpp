// Part 7 public tests: my_allreduce, my_allgather, my_reduce_scatter, my_alltoall on 4 ranks.
//   mpirun -n 4 ./build/tests/test_collectives
// Counts: 0, 1, p - 1, p + 1, a prime (1009), and buffers of more than 1 MB; every op on float,
// double and int32. Expected values are computed here, element by element, from the inputs.
#include "dtk_test.hpp"

#include <dtk/my_collectives.hpp>

#include <algorithm>
#include <vector>

namespace {

constexpr int kRanks = 4;
// Small counts (including 0 and counts that p does not divide) and a prime.
const std::vector<std::size_t> kCounts = {0, 1, kRanks - 1, kRanks + 1, 1009};
// More than 1 MB of float, double or int32 values, not a multiple of p.
constexpr std::size_t kLargeCount = (std::size_t{1} << 20) / 4 + 3;

struct Op {
  MPI_Op op;
  const char* name;
};
const std::vector<Op> kOps = {{MPI_SUM, "MPI_SUM"}, {MPI_MIN, "MPI_MIN"}, {MPI_MAX, "MPI_MAX"}};

// Inputs of the reductions: small integers (float sums stay exact) that differ from rank to
// rank and from element to element, so that every rank wins a MIN or MAX somewhere and a chunk
// moved to the wrong place shows.
template <class T>
T reduce_input(int rank, std::size_t i) {
  return static_cast<T>(static_cast<long>((i * 7 + rank * 13) % 31) - 15);
}

// Inputs of the gathers: element i of rank r's src is r * 1000000 + i, so a value says where it
// came from (3000005: rank 3, element 5).
template <class T>
T tagged_input(int rank, std::size_t i) {
  return static_cast<T>(rank * 1000000 + static_cast<long>(i));
}

template <class T>
T reduce_over_ranks(MPI_Op op, std::size_t i) {
  T acc = reduce_input<T>(0, i);
  for (int r = 1; r < kRanks; ++r) {
    const T v = reduce_input<T>(r, i);
    acc = op == MPI_SUM ? acc + v : op == MPI_MIN ? std::min(acc, v) : std::max(acc, v);
  }
  return acc;
}

template <class T, class F>
xt::xtensor<T, 1> make(std::size_t n, F value) {
  xt::xtensor<T, 1> out = xt::xtensor<T, 1>::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) out(i) = value(i);
  return out;
}

// A dst the function must overwrite entirely: -99 is no correct result.
template <class T>
xt::xtensor<T, 1> untouched(std::size_t n) {
  return make<T>(n, [](std::size_t) { return static_cast<T>(-99); });
}

template <class T>
void check_allreduce(dtk::testing::Checks& check, std::size_t n) {
  dtk::Communicator world;
  const int r = world.Get_rank();
  for (const Op& op : kOps) {
    const auto src = make<T>(n, [r](std::size_t i) { return reduce_input<T>(r, i); });
    auto dst = untouched<T>(n);
    dtk::my_allreduce(src, dst, op.op, world);
    const auto expected = make<T>(n, [&](std::size_t i) { return reduce_over_ranks<T>(op.op, i); });
    check.close("my_allreduce(" + std::string(op.name) + ") of " + std::to_string(n) + " elements",
                expected, dst);
  }
}

// k elements per rank: dst holds every rank's block, rank 0's first.
template <class T>
void check_allgather(dtk::testing::Checks& check, std::size_t k) {
  dtk::Communicator world;
  const int r = world.Get_rank();
  const auto src = make<T>(k, [r](std::size_t i) { return tagged_input<T>(r, i); });
  auto dst = untouched<T>(kRanks * k);
  dtk::my_allgather(src, dst, world);
  const auto expected =
      make<T>(kRanks * k, [k](std::size_t i) { return tagged_input<T>(i / k, i % k); });
  check.close("my_allgather of " + std::to_string(k) + " elements per rank", expected, dst);
}

// p blocks of k elements: rank r receives the reduction of block r.
template <class T>
void check_reduce_scatter(dtk::testing::Checks& check, std::size_t k) {
  dtk::Communicator world;
  const int r = world.Get_rank();
  for (const Op& op : kOps) {
    const auto src = make<T>(kRanks * k, [r](std::size_t i) { return reduce_input<T>(r, i); });
    auto dst = untouched<T>(k);
    dtk::my_reduce_scatter(src, dst, op.op, world);
    const auto expected =
        make<T>(k, [&](std::size_t i) { return reduce_over_ranks<T>(op.op, r * k + i); });
    check.close("my_reduce_scatter(" + std::string(op.name) + ") of blocks of " +
                    std::to_string(k) + " elements, block " + std::to_string(r),
                expected, dst);
  }
}

// p blocks of k elements: block b of rank q's src lands as block q of rank b's dst.
template <class T>
void check_alltoall(dtk::testing::Checks& check, std::size_t k) {
  dtk::Communicator world;
  const int r = world.Get_rank();
  const auto src = make<T>(kRanks * k, [r](std::size_t i) { return tagged_input<T>(r, i); });
  auto dst = untouched<T>(kRanks * k);
  dtk::my_alltoall(src, dst, world);
  const auto expected =
      make<T>(kRanks * k, [k, r](std::size_t i) { return tagged_input<T>(i / k, r * k + i % k); });
  check.close("my_alltoall of blocks of " + std::to_string(k) + " elements", expected, dst);
}

}  // namespace

#define DTK_COLLECTIVE_CASES(function)                                                      \
  TEMPLATE_TEST_CASE("Part 7 | my_" #function ": counts 0, 1, p-1, p+1 and a prime (1009)", \
                     "[part7]", float, double, std::int32_t) {                              \
    dtk::testing::on_every_rank(kRanks, [](auto& check) {                                   \
      for (std::size_t n : kCounts) check_##function<TestType>(check, n);                   \
    });                                                                                     \
  }                                                                                         \
  TEMPLATE_TEST_CASE("Part 7 | my_" #function ": more than 1 MB", "[part7]", float, double, \
                     std::int32_t) {                                                        \
    dtk::testing::on_every_rank(                                                            \
        kRanks, [](auto& check) { check_##function<TestType>(check, kLargeCount); });       \
  }

DTK_COLLECTIVE_CASES(allreduce)
DTK_COLLECTIVE_CASES(allgather)
DTK_COLLECTIVE_CASES(reduce_scatter)
DTK_COLLECTIVE_CASES(alltoall)
