// Part 9 public tests: zero_memory_per_rank, zero_shard_range, zero1_grad_shard,
// zero2_grad_shard and zero_gather_params, on 4 ranks.
//   mpirun -n 4 ./build/tests/test_zero
// 9.1 against the ZeRO paper's Figure 1 and hand-computed cases; 9.2 against written-out shard
// tables. 9.3 to 9.5 run on data-parallel groups of 1, 2, 3 and 4 ranks cut from the 4 ranks,
// with inputs that say where they come from (element i of rank r's gradient is 1000 r + i), and
// count the bytes each call sends with the Communicator's estimates (communicator.hpp).
#include "dtk_test.hpp"

#include <dtk/zero.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr int kRanks = 4;

using dtk::testing::expect_invalid_argument;
using dtk::testing::report_first_few;

// ----------------------------------- 9.1 ----------------------------------------------------

std::string number_text(double value) {
  std::ostringstream text;
  text.precision(17);
  text << value;
  return text.str();
}

// The four stages' bytes per rank of num_params parameters on dp_size ranks with this k.
void check_memory(dtk::testing::Checks& check, double num_params, int dp_size, double k,
                  const std::vector<double>& expected, double rtol) {
  for (int stage = 0; stage <= 3; ++stage) {
    const double actual = dtk::zero_memory_per_rank(num_params, dp_size, stage, k);
    const double want = expected[stage];
    check.that(std::abs(actual - want) <= rtol * want,
               "zero_memory_per_rank(" + number_text(num_params) + ", " + std::to_string(dp_size) +
                   ", " + std::to_string(stage) + ", " + number_text(k) + "): expected " +
                   number_text(want) + " bytes, got " + number_text(actual));
  }
}

// ----------------------------------- 9.2 ----------------------------------------------------

using Range = std::pair<std::size_t, std::size_t>;

std::string range_text(const Range& range) {
  return "{" + std::to_string(range.first) + ", " + std::to_string(range.second) + "}";
}

// Every rank's zero_shard_range(numel, dp_size, rank) against the table `expected`.
void check_ranges(dtk::testing::Checks& check, std::size_t numel, int dp_size,
                  const std::vector<Range>& expected) {
  for (int rank = 0; rank < dp_size; ++rank) {
    const Range actual = dtk::zero_shard_range(numel, dp_size, rank);
    check.that(actual == expected[rank], "zero_shard_range(" + std::to_string(numel) + ", " +
                                             std::to_string(dp_size) + ", " + std::to_string(rank) +
                                             "): expected " + range_text(expected[rank]) +
                                             ", got " + range_text(actual));
  }
}

// ----------------------------------- 9.3 - 9.5 ----------------------------------------------

// numel 0, smaller than the groups of 2 to 4 ranks (1, 3), and not divisible by 3 or 4 (10) or
// by any of 2, 3 and 4 (1001).
const std::vector<std::size_t> kNumels = {0, 1, 3, 10, 1001};

// The 4 ranks cut into data-parallel groups of `size` consecutive ranks; with size 3, rank 3
// forms a group of 1. Every rank computes in some group, so every rank calls every function.
dtk::Communicator group_of(int size) {
  dtk::Communicator world;
  return world.Split(world.Get_rank() / size, world.Get_rank());
}

std::size_t shard_size(std::size_t numel, int p) { return (numel + p - 1) / p; }

// Element i of rank r's gradient: the value says which rank and element it comes from.
double gradient_value(int r, std::size_t i) { return 1000.0 * r + static_cast<double>(i); }

template <class T>
xt::xtensor<T, 1> rank_gradient(int r, std::size_t numel) {
  xt::xtensor<T, 1> grad = xt::xtensor<T, 1>::from_shape({numel});
  for (std::size_t i = 0; i < numel; ++i) grad(i) = static_cast<T>(gradient_value(r, i));
  return grad;
}

// Rank r's shard of the gradient summed over p ranks: s values, element j the sum's element
// r * s + j, 0 past numel.
template <class T>
xt::xtensor<T, 1> summed_shard(int r, int p, std::size_t numel) {
  const std::size_t s = shard_size(numel, p);
  xt::xtensor<T, 1> shard = xt::zeros<T>({s});
  for (std::size_t j = 0; j < s && r * s + j < numel; ++j) {
    for (int q = 0; q < p; ++q) shard(j) += static_cast<T>(gradient_value(q, r * s + j));
  }
  return shard;
}

// "on 3 ranks, rank 2, numel 10 (s = 4)": where a finding was made.
std::string where(const dtk::Communicator& comm, std::size_t numel) {
  return "on " + std::to_string(comm.Get_size()) + " rank(s), rank " +
         std::to_string(comm.Get_rank()) + ", numel " + std::to_string(numel) +
         " (s = " + std::to_string(shard_size(numel, comm.Get_size())) + ")";
}

// The bytes `comm` sent during call(), against the Communicator's estimate `expected`.
template <class Call>
void check_bytes(dtk::testing::Checks& check, dtk::Communicator& comm, const std::string& what,
                 long long expected, Call call) {
  const auto before = comm.total_bytes_transferred();
  call();
  check.equal(what, expected, static_cast<long long>(comm.total_bytes_transferred() - before));
}

// zero1_grad_shard or zero2_grad_shard (`function`, named `name`) on every group size and numel.
// `bytes(p, numel, s)` is what the one allowed collective sends.
template <class T, class Function, class Bytes>
void check_grad_shard(dtk::testing::Checks& check, const std::string& name, Function function,
                      Bytes bytes) {
  report_first_few(check, [&](dtk::testing::Checks& each) {
    for (int size = 1; size <= kRanks; ++size) {
      dtk::Communicator dp_comm = group_of(size);
      const int p = dp_comm.Get_size(), r = dp_comm.Get_rank();
      for (std::size_t numel : kNumels) {
        xt::xtensor<T, 1> shard;
        check_bytes(
            each, dp_comm,
            name + " " + where(dp_comm, numel) + ": bytes sent" + " (total_bytes_transferred)",
            bytes(p, numel, shard_size(numel, p)),
            [&] { shard = function(rank_gradient<T>(r, numel), dp_comm); });
        each.close(name + " " + where(dp_comm, numel) +
                       ": this rank's shard of the summed gradient (element i of rank q's "
                       "gradient is 1000 q + i), zeros past numel",
                   summed_shard<T>(r, p, numel), shard);
      }
    }
  });
}

}  // namespace

// ----------------------------------- 9.1 ----------------------------------------------------

TEST_CASE(
    "Part 9 | zero_memory_per_rank: the ZeRO paper's Figure 1 (7.5 B parameters, 64 ranks, "
    "K = 12), exactly",
    "[part9]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_memory(check, 7.5e9, 64, 12, {120e9, 31.40625e9, 16.640625e9, 1.875e9}, 0);
  });
}

TEST_CASE(
    "Part 9 | zero_memory_per_rank: 1 B parameters with K = 12 on 8 ranks, K = 8 on 4 "
    "ranks, and one rank",
    "[part9]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // 16 bytes per parameter; then 4 + 12/8, 2 + 14/8 and 16/8.
    check_memory(check, 1e9, 8, 12, {16e9, 5.5e9, 3.75e9, 2e9}, 1e-12);
    // 12 bytes per parameter; then 4 + 8/4, 2 + 10/4 and 12/4.
    check_memory(check, 1e9, 4, 8, {12e9, 6e9, 4.5e9, 3e9}, 1e-12);
    // Nothing to share with: every stage is plain data parallelism.
    check_memory(check, 1e9, 1, 12, {16e9, 16e9, 16e9, 16e9}, 1e-12);
  });
}

TEST_CASE("Part 9 | zero_memory_per_rank: bad arguments throw std::invalid_argument", "[part9]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    expect_invalid_argument(check, "zero_memory_per_rank(1e9, 0, 1) (dp_size 0)",
                            [] { dtk::zero_memory_per_rank(1e9, 0, 1); });
    expect_invalid_argument(check, "zero_memory_per_rank(1e9, 8, 4) (stage 4)",
                            [] { dtk::zero_memory_per_rank(1e9, 8, 4); });
    expect_invalid_argument(check, "zero_memory_per_rank(1e9, 8, -1) (stage -1)",
                            [] { dtk::zero_memory_per_rank(1e9, 8, -1); });
    expect_invalid_argument(check, "zero_memory_per_rank(-1, 8, 1) (num_params -1)",
                            [] { dtk::zero_memory_per_rank(-1, 8, 1); });
    expect_invalid_argument(check, "zero_memory_per_rank(1e9, 8, 1, -4) (k -4)",
                            [] { dtk::zero_memory_per_rank(1e9, 8, 1, -4); });
  });
}

// ----------------------------------- 9.2 ----------------------------------------------------

TEST_CASE("Part 9 | zero_shard_range: numel 10 on 4 ranks (the handout's example)", "[part9]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_ranges(check, 10, 4, {{0, 3}, {3, 6}, {6, 9}, {9, 10}});
  });
}

TEST_CASE("Part 9 | zero_shard_range: empty shards (numel smaller than dp_size, numel 0)",
          "[part9]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // s = 2: the last rank's shard starts past numel and is clamped to {5, 5}.
    check_ranges(check, 5, 4, {{0, 2}, {2, 4}, {4, 5}, {5, 5}});
    check_ranges(check, 1, 4, {{0, 1}, {1, 1}, {1, 1}, {1, 1}});
    check_ranges(check, 0, 4, {{0, 0}, {0, 0}, {0, 0}, {0, 0}});
    check_ranges(check, 9, 8, {{0, 2}, {2, 4}, {4, 6}, {6, 8}, {8, 9}, {9, 9}, {9, 9}, {9, 9}});
  });
}

TEST_CASE(
    "Part 9 | zero_shard_range: one rank owns everything; shards of numel 0 to 40 on 1 to 8 "
    "ranks tile [0, numel) in rank order",
    "[part9]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_ranges(check, 0, 1, {{0, 0}});
    check_ranges(check, 7, 1, {{0, 7}});
    report_first_few(check, [](dtk::testing::Checks& each) {
      for (std::size_t numel = 0; numel <= 40; ++numel) {
        for (int p = 1; p <= 8; ++p) {
          const std::size_t s = shard_size(numel, p);
          std::vector<Range> expected;
          for (int r = 0; r < p; ++r) {
            expected.push_back({std::min(r * s, numel), std::min((r + 1) * s, numel)});
          }
          check_ranges(each, numel, p, expected);
        }
      }
    });
  });
}

TEST_CASE("Part 9 | zero_shard_range: bad arguments throw std::invalid_argument", "[part9]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    expect_invalid_argument(check, "zero_shard_range(10, 0, 0) (dp_size 0)",
                            [] { dtk::zero_shard_range(10, 0, 0); });
    expect_invalid_argument(check, "zero_shard_range(10, 4, 4) (dp_idx 4 of 4 ranks)",
                            [] { dtk::zero_shard_range(10, 4, 4); });
    expect_invalid_argument(check, "zero_shard_range(10, 4, -1) (dp_idx -1)",
                            [] { dtk::zero_shard_range(10, 4, -1); });
  });
}

// ----------------------------------- 9.3 - 9.5 ----------------------------------------------

TEMPLATE_TEST_CASE(
    "Part 9 | zero1_grad_shard: the summed gradient's shard, zero-padded, in one "
    "Allreduce, on groups of 1 to 4 ranks",
    "[part9]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // One Allreduce of the numel values sends 2 (p - 1) / p of their bytes.
    check_grad_shard<TestType>(
        check, "zero1_grad_shard",
        [](const auto& grad, auto& comm) { return dtk::zero1_grad_shard(grad, comm); },
        [](int p, std::size_t numel, std::size_t) {
          return static_cast<long long>(2 * (p - 1) * numel * sizeof(TestType) / p);
        });
  });
}

TEMPLATE_TEST_CASE(
    "Part 9 | zero2_grad_shard: the same shard in one Reduce_scatter (half the "
    "bytes of an Allreduce), on groups of 1 to 4 ranks",
    "[part9]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // One Reduce_scatter into s values sends (p - 1) s values; an Allreduce would send about
    // twice as many, and fails here.
    check_grad_shard<TestType>(
        check, "zero2_grad_shard",
        [](const auto& grad, auto& comm) { return dtk::zero2_grad_shard(grad, comm); },
        [](int p, std::size_t, std::size_t s) {
          return static_cast<long long>((p - 1) * s * sizeof(TestType));
        });
  });
}

TEMPLATE_TEST_CASE(
    "Part 9 | zero_gather_params: every rank's shard in rank order, the padding "
    "dropped, in one Allgather, on groups of 1 to 4 ranks",
    "[part9]", float, double) {
  using T = TestType;
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    report_first_few(check, [](dtk::testing::Checks& each) {
      for (int size = 1; size <= kRanks; ++size) {
        dtk::Communicator dp_comm = group_of(size);
        const int p = dp_comm.Get_size(), r = dp_comm.Get_rank();
        for (std::size_t numel : kNumels) {
          const std::size_t s = shard_size(numel, p);
          // Element j of rank r's shard is 1000 r + j; its padding (past numel) is -1, which
          // must not reach the result.
          xt::xtensor<T, 1> shard = xt::xtensor<T, 1>::from_shape({s});
          for (std::size_t j = 0; j < s; ++j) {
            shard(j) = static_cast<T>(r * s + j < numel ? gradient_value(r, j) : -1);
          }
          xt::xtensor<T, 1> full;
          check_bytes(each, dp_comm,
                      "zero_gather_params " + where(dp_comm, numel) +
                          ": bytes sent (one Allgather of s values sends (p - 1) s of them)",
                      static_cast<long long>((p - 1) * s * sizeof(T)),
                      [&] { full = dtk::zero_gather_params(shard, numel, dp_comm); });
          xt::xtensor<T, 1> expected = xt::xtensor<T, 1>::from_shape({numel});
          for (std::size_t i = 0; i < numel; ++i) {
            expected(i) = static_cast<T>(gradient_value(static_cast<int>(i / s), i % s));
          }
          each.close("zero_gather_params " + where(dp_comm, numel) +
                         ": the whole vector (element j of rank q's shard is 1000 q + j)",
                     expected, full);
        }
      }
    });
  });
}

TEMPLATE_TEST_CASE(
    "Part 9 | zero_gather_params: a shard of the wrong size throws "
    "std::invalid_argument",
    "[part9]", float, double) {
  using T = TestType;
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    // numel 10 on 4 ranks: s = 3. Every rank passes the same wrong size, so all of them throw
    // before the Allgather.
    const xt::xtensor<T, 1> too_long = xt::zeros<T>({4});
    expect_invalid_argument(check, "zero_gather_params(a shard of 4 values, 10, 4 ranks)",
                            [&] { dtk::zero_gather_params(too_long, 10, world); });
    const xt::xtensor<T, 1> unpadded = xt::zeros<T>({2});
    expect_invalid_argument(check, "zero_gather_params(a shard of 2 values, 10, 4 ranks)",
                            [&] { dtk::zero_gather_params(unpadded, 10, world); });
  });
}
