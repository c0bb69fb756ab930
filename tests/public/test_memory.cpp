// Part 16 public tests: to_bf16 by hand (ties, NaN, the infinities, subnormals) and on random
// floats (the nearest bf16 of the two around each); MixedPrecisionAdam against the kit's Adam on
// the master copy, with updates far below a bf16 step; FullyShardedBlocks on 4 ranks (and on
// groups of 2 and of 1) through a forward and two micro-batches' backwards: the gathered blocks,
// the gradient shards, the parameter bytes, the bytes sent, and the memory given back by
// release; choose_recomputation by hand and, on random cases, its set checked for what any best
// set must be.
//   mpirun -n 4 ./build/tests/test_memory
// The hidden tests check the same on other shapes, bit for bit where bits are asked, and the
// chosen sets' FLOPs against the best.
#include "dtk_test.hpp"

#include <dtk/memory.hpp>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int kRanks = 4;

using dtk::testing::expect_invalid_argument;

float float_of_bits(std::uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", x);
  return text;
}

std::string hex(std::uint32_t bits, int digits) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%0*X", digits, bits);
  return text;
}

struct Rounding {
  std::uint32_t float_bits;
  dtk::bf16 expected;
  const char* why;
};

const std::vector<Rounding> kByHand = {
    {0x3F800000, 0x3F80, "1 is a bf16"},
    {0x3F808000, 0x3F80, "1 + 2^-8: a tie between 1 and 1 + 2^-7, to the even one, 1"},
    {0x3F818000, 0x3F82, "1 + 3 * 2^-8: a tie, to the even one, 1 + 2^-6 (up)"},
    {0x3F808001, 0x3F81, "just above the tie: up"},
    {0x3F807FFF, 0x3F80, "just below the tie: down"},
    {0xBFC0C000, 0xBFC1, "-1.5 - 3 * 2^-9: negative numbers round the same way"},
    {0x7F7FFFFF, 0x7F80, "the largest float rounds to infinity"},
    {0x7F7F7FFF, 0x7F7F, "below the largest bf16's tie: stays finite"},
    {0x7F800000, 0x7F80, "+infinity"},
    {0xFF800000, 0xFF80, "-infinity"},
    {0x7F800001, 0x7FC0, "a NaN whose only set mantissa bit is the lowest"},
    {0xFFC00000, 0x7FC0, "a negative NaN"},
    {0x80000000, 0x8000, "-0"},
    {0x00000001, 0x0000, "the smallest subnormal rounds to 0"},
    {0x00008000, 0x0000, "a subnormal tie, to the even one"},
    {0x00018000, 0x0002, "a subnormal tie, to the even one (up)"},
};

TEST_CASE("Part 16 | to_bf16: by hand", "[part16]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    for (const Rounding& c : kByHand) {
      const dtk::bf16 actual = dtk::to_bf16(float_of_bits(c.float_bits));
      check.that(actual == c.expected, "to_bf16 of the float " + hex(c.float_bits, 8) + " (" +
                                           c.why + ")\n  expected " + hex(c.expected, 4) +
                                           "\n  actual   " + hex(actual, 4));
    }
  });
}

TEST_CASE("Part 16 | to_bf16: random floats round to the nearer bf16", "[part16]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    std::mt19937 bits_of(20261206);
    int reported = 0;
    for (int i = 0; i < 100000 && reported < 3; ++i) {
      const std::uint32_t bits = bits_of();
      const float x = float_of_bits(bits);
      if (!std::isfinite(x)) continue;
      // The two bf16 around x: its high half cut off, and the next one away from 0.
      const dtk::bf16 below = static_cast<dtk::bf16>(bits >> 16);
      const double lo = dtk::from_bf16(below), hi = dtk::from_bf16(below + 1);
      const double to_lo = std::abs(double(x) - lo), to_hi = std::abs(double(x) - hi);
      const dtk::bf16 actual = dtk::to_bf16(x);
      bool ok = actual == (to_lo < to_hi ? below : below + 1);
      if (to_lo == to_hi) ok = actual == below || actual == below + 1;  // ties: by hand above
      if (!ok) {
        ++reported;
        check.that(false, "to_bf16 of the float " + hex(bits, 8) + " should be " +
                              hex(to_lo < to_hi ? below : below + 1, 4) + ", the nearer of " +
                              hex(below, 4) + " and " + hex(below + 1, 4) + "; got " +
                              hex(actual, 4));
      }
    }
  });
}

// Numbers a bf16 holds exactly, as bf16 (their float's high half: nothing to round).
std::vector<dtk::bf16> exact_bf16(const std::vector<float>& values) {
  std::vector<dtk::bf16> out;
  for (float v : values) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    out.push_back(static_cast<dtk::bf16>(bits >> 16));
  }
  return out;
}

TEST_CASE("Part 16 | MixedPrecisionAdam: the master copy learns what bf16 cannot hold",
          "[part16]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // Weights near 1 (a bf16 step of 2^-7 there) and updates of about lr = 1e-3 a step: applied
    // to the bf16 numbers they would round away every time.
    const std::vector<dtk::bf16> start = exact_bf16({1.0f, -1.0f, 0.5f, 2.0f, 0.0f});
    const std::vector<dtk::bf16> grads = exact_bf16({0.25f, -0.5f, 1.0f, -2.0f, 0.125f});
    std::vector<dtk::bf16> params = start;
    dtk::MixedPrecisionAdam optimizer(params);
    // The kit's Adam on a float copy, as the header says the master copy learns.
    dtk::Adam<float> adam(start.size());
    xt::xtensor<float, 1> master = xt::zeros<float>({start.size()});
    xt::xtensor<float, 1> grad = xt::zeros<float>({start.size()});
    for (std::size_t i = 0; i < start.size(); ++i) {
      master(i) = dtk::from_bf16(start[i]);
      grad(i) = dtk::from_bf16(grads[i]);
    }
    for (int step = 1; step <= 10; ++step) {
      optimizer.step(params, grads, 1e-3f);
      adam.step(master, 0, grad, 1e-3f);
    }
    const xt::xtensor<float, 1>& actual = optimizer.master();
    check.that(actual.size() == start.size(), "master() holds " + std::to_string(actual.size()) +
                                                  " weights, expected " +
                                                  std::to_string(start.size()));
    for (std::size_t i = 0; i < std::min(actual.size(), start.size()); ++i) {
      check.that(actual(i) == master(i), "after 10 steps, master weight " + std::to_string(i) +
                                             " should be " + number(master(i)) +
                                             " (the kit's Adam<float> on the gradients' float "
                                             "values), got " +
                                             number(actual(i)));
      const bool unmoved = params[i] == start[i] && dtk::to_bf16(master(i)) != start[i];
      check.that(params[i] == dtk::to_bf16(master(i)),
                 "after 10 steps, bf16 parameter " + std::to_string(i) +
                     " should be to_bf16 of "
                     "its master weight " +
                     number(master(i)) + ", got " + number(dtk::from_bf16(params[i])) +
                     (unmoved ? " (where it started: the updates went to the bf16 numbers, not "
                                "the master copy?)"
                              : ""));
    }
    expect_invalid_argument(check, "MixedPrecisionAdam::step(5 parameters, 4 gradients)",
                            [&] { optimizer.step(params, std::vector<dtk::bf16>(4), 1e-3f); });
  });
}

// Allocated bytes of the whole process (every thread's arena, and mmapped blocks).
std::size_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// Block b's parameter i, as its owner shards it: known to every rank, so the gathered block can
// be checked anywhere.
double parameter_value(int block, std::size_t i) { return 1000.0 * block + double(i); }

template <class T>
void sharded_blocks_case(dtk::testing::Checks& check, dtk::Communicator& dp_comm,
                         const std::vector<std::size_t>& numel) {
  const std::size_t p = dp_comm.Get_size(), r = dp_comm.Get_rank();
  const std::string where = " (dp group of " + std::to_string(p) + ", blocks of " +
                            std::to_string(numel.size()) + " sizes from " +
                            std::to_string(numel.front()) + ")";
  std::vector<xt::xtensor<T, 1>> shards;
  std::size_t shard_values = 0, largest = 0;
  for (std::size_t b = 0; b < numel.size(); ++b) {
    const std::size_t s = (numel[b] + p - 1) / p;
    xt::xtensor<T, 1> shard = xt::zeros<T>({s});
    for (std::size_t j = 0; j < s && r * s + j < numel[b]; ++j) {
      shard(j) = T(parameter_value(int(b), r * s + j));
    }
    shards.push_back(shard);
    shard_values += s;
    largest = std::max(largest, numel[b]);
  }
  const std::uint64_t sent_before = dp_comm.total_bytes_transferred();
  dtk::FullyShardedBlocks<T> blocks(shards, numel, dp_comm);
  check.that(blocks.parameter_bytes() == shard_values * sizeof(T),
             "parameter_bytes() before any gather: " + std::to_string(blocks.parameter_bytes()) +
                 ", expected the shards' " + std::to_string(shard_values * sizeof(T)) + where);
  bool gathered_right = true, bytes_right = true, freed = true;
  std::uint64_t expected_sent = 0;
  const auto use = [&](int b, bool backward, int micro_batches) {
    const std::size_t before = heap_in_use();
    const xt::xtensor<T, 1>& whole = blocks.gather(b);
    gathered_right = gathered_right && whole.size() == numel[b];
    for (std::size_t i = 0; gathered_right && i < numel[b]; ++i) {
      gathered_right = whole(i) == T(parameter_value(b, i));
    }
    bytes_right = bytes_right && blocks.parameter_bytes() == (shard_values + numel[b]) * sizeof(T);
    const std::size_t s = (numel[b] + p - 1) / p;
    expected_sent += (p - 1) * s * sizeof(T);
    for (int mb = 0; backward && mb < micro_batches; ++mb) {
      xt::xtensor<T, 1> gradient = xt::zeros<T>({numel[b]});
      for (std::size_t i = 0; i < numel[b]; ++i) gradient(i) = T(double(r + 1) * double(i + 1));
      blocks.reduce_gradient(b, gradient);
      expected_sent += (p - 1) * s * sizeof(T);
    }
    const std::size_t held = heap_in_use();
    blocks.release(b);
    // What gather took must be back (large blocks only: the allocator's own bookkeeping aside).
    if (numel[b] * sizeof(T) >= (1 << 20) && held > 0) {
      freed = freed && heap_in_use() + numel[b] * sizeof(T) * 9 / 10 <= std::max(held, before);
    }
    bytes_right = bytes_right && blocks.parameter_bytes() == shard_values * sizeof(T);
  };
  for (int b = 0; b < int(numel.size()); ++b) use(b, false, 0);
  for (int b = int(numel.size()) - 1; b >= 0; --b) use(b, true, 2);
  check.that(gathered_right, "a gathered block is not the block's numel parameters in order" +
                                 where + ": rank k's shard holds elements [k s, (k + 1) s)");
  check.that(bytes_right, "parameter_bytes() is not the shards' bytes plus the block held" + where);
  check.that(blocks.peak_parameter_bytes() == (shard_values + largest) * sizeof(T),
             "peak_parameter_bytes(): " + std::to_string(blocks.peak_parameter_bytes()) +
                 ", expected the shards and the largest block, " +
                 std::to_string((shard_values + largest) * sizeof(T)) + where);
  check.that(freed, "release() did not give a block's memory back to the allocator" + where +
                        " (a buffer kept for reuse is still allocated)");
  const std::uint64_t sent = dp_comm.total_bytes_transferred() - sent_before;
  check.that(sent == expected_sent,
             "bytes sent: " + std::to_string(sent) + ", expected " + std::to_string(expected_sent) +
                 ": one Allgather per gather, one Reduce_scatter per reduce_gradient" + where);
  // Two micro-batches of gradients (r + 1)(i + 1) from every rank: element i sums to
  // 2 (i + 1) p (p + 1) / 2.
  std::string first_wrong;
  for (std::size_t b = 0; b < numel.size() && first_wrong.empty(); ++b) {
    const std::size_t s = (numel[b] + p - 1) / p;
    const xt::xtensor<T, 1>& mine = blocks.gradient_shard(int(b));
    if (mine.size() != s) {
      first_wrong = "block " + std::to_string(b) + "'s gradient shard holds " +
                    std::to_string(mine.size()) + " values, expected s = " + std::to_string(s);
    }
    for (std::size_t j = 0; first_wrong.empty() && j < s; ++j) {
      const std::size_t i = r * s + j;
      const double expected = i < numel[b] ? double(i + 1) * double(p * (p + 1)) : 0.0;
      if (mine(j) != T(expected)) {
        first_wrong =
            "block " + std::to_string(b) + "'s gradient shard, value " + std::to_string(j) +
            " (element " + std::to_string(i) + "): expected " + number(expected) +
            ", the sum over the ranks and both micro-batches" + (i < numel[b] ? "" : " (padding)") +
            ", got " + number(mine(j)) +
            (mine(j) == T(expected / 2) ? " (one micro-batch's: overwritten, not added?)" : "");
      }
    }
  }
  check.that(first_wrong.empty(), first_wrong + where);
}

TEMPLATE_TEST_CASE("Part 16 | FullyShardedBlocks: a forward and a backward of two micro-batches",
                   "[part16]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world(MPI_COMM_WORLD);
    const int rank = world.Get_rank();
    const std::vector<std::size_t> numel = {10, 7, 1, 13, (1 << 20) / sizeof(TestType) + 3};
    sharded_blocks_case<TestType>(check, world, numel);
    dtk::Communicator pairs = world.Split(rank / 2, rank);
    sharded_blocks_case<TestType>(check, pairs, numel);
    dtk::Communicator alone = world.Split(rank, rank);
    sharded_blocks_case<TestType>(check, alone, {5, 3});
  });
}

TEST_CASE("Part 16 | FullyShardedBlocks: bad calls throw", "[part16]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world(MPI_COMM_WORLD);
    dtk::Communicator alone = world.Split(world.Get_rank(), world.Get_rank());
    expect_invalid_argument(check, "FullyShardedBlocks({a shard of 2 values}, {3}, 1 rank)", [&] {
      dtk::FullyShardedBlocks<float>({xt::zeros<float>({2})}, {3}, alone);
    });
    dtk::FullyShardedBlocks<float> blocks({xt::zeros<float>({3})}, {3}, alone);
    expect_invalid_argument(check, "FullyShardedBlocks::gather(1) of one block",
                            [&] { blocks.gather(1); });
    expect_invalid_argument(check, "FullyShardedBlocks::reduce_gradient(0, 2 values of 3)",
                            [&] { blocks.reduce_gradient(0, xt::zeros<float>({2})); });
    bool logic_error = false;
    try {
      blocks.release(0);
    } catch (const std::logic_error& e) {
      logic_error = dynamic_cast<const std::invalid_argument*>(&e) == nullptr;
    }
    check.that(logic_error,
               "release(0) of a block not held should throw std::logic_error itself "
               "(std::invalid_argument, its subclass, is for bad arguments)");
  });
}

struct Choice {
  std::vector<dtk::Activation> activations;
  std::uint64_t budget;
  std::vector<int> expected;
  const char* why;
};

const std::vector<Choice> kChoices = {
    {{{"a", 6, 3}, {"b", 10, 6}, {"c", 5, 5}},
     11,
     {1},
     "drop b alone (6 FLOPs); the cheapest per byte first drops a, then b (9 FLOPs)"},
    {{{"a", 6, 3}, {"b", 10, 6}}, 16, {}, "everything fits"},
    {{{"a", 6, 3}, {"b", 10, 6}}, 0, {0, 1}, "nothing fits"},
    {{{"scores", 8, 1}, {"hidden", 4, 10}, {"qkv", 3, 9}}, 7, {0}, "one cheap big tensor"},
    {{}, 5, {}, "no activations"},
};

std::string indices_text(const std::vector<int>& indices) {
  std::string text;
  for (int i : indices) text += (text.empty() ? "" : ", ") + std::to_string(i);
  return "{" + text + "}";
}

TEST_CASE("Part 16 | choose_recomputation: by hand", "[part16]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    for (const Choice& c : kChoices) {
      const std::vector<int> actual = dtk::choose_recomputation(c.activations, c.budget);
      check.that(actual == c.expected, "choose_recomputation, budget " + std::to_string(c.budget) +
                                           " bytes (" + c.why + ")\n  expected " +
                                           indices_text(c.expected) + "\n  actual   " +
                                           indices_text(actual));
    }
    expect_invalid_argument(check, "choose_recomputation(21 activations, 0)", [] {
      dtk::choose_recomputation(std::vector<dtk::Activation>(21, {"x", 1, 1}), 0);
    });
    expect_invalid_argument(check, "choose_recomputation({an activation of 0 FLOPs}, 0)", [] {
      dtk::choose_recomputation({{"x", 4, 0}}, 0);
    });
  });
}

TEST_CASE("Part 16 | choose_recomputation: random cases, what any best set must be", "[part16]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    std::mt19937 draw(16);
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<dtk::Activation> activations;
      std::uint64_t total = 0;
      const int n = 1 + trial % 16;
      for (int i = 0; i < n; ++i) {
        activations.push_back({"t" + std::to_string(i), 1 + draw() % 1000, 1 + draw() % 1000});
        total += activations.back().bytes;
      }
      const std::uint64_t budget = total * (draw() % 100) / 100;
      const std::vector<int> chosen = dtk::choose_recomputation(activations, budget);
      std::uint64_t kept = total;
      bool increasing = true;
      for (std::size_t k = 0; k < chosen.size(); ++k) {
        increasing =
            increasing && chosen[k] >= 0 && chosen[k] < n && (k == 0 || chosen[k] > chosen[k - 1]);
        if (chosen[k] >= 0 && chosen[k] < n) kept -= activations[chosen[k]].bytes;
      }
      std::string listed;
      for (const dtk::Activation& a : activations) {
        listed += (listed.empty() ? "" : ", ") + std::string("(") + std::to_string(a.bytes) +
                  " bytes, " + std::to_string(a.flops) + " FLOPs)";
      }
      const std::string call = "choose_recomputation of " + listed + ", budget " +
                               std::to_string(budget) + " bytes = " + indices_text(chosen);
      check.that(increasing, call + ": expected distinct valid indices, increasing");
      if (!increasing) continue;
      check.that(kept <= budget, call + ": the kept activations take " + std::to_string(kept) +
                                     " bytes, over the budget");
      // A best set recomputes nothing it could keep: keeping it would save its FLOPs.
      for (int i : chosen) {
        check.that(kept + activations[i].bytes > budget,
                   call + ": activation " + std::to_string(i) + " fits back in the budget");
      }
    }
  });
}

}  // namespace
