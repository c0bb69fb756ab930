// Part 9 (assignment 2): ZeRO. The memory model on the paper's numbers and on numbers drawn from
// the seed; shard ranges on every rank of a grid; the three collectives on dp ranks with values
// that say where they come from (element i of rank r's gradient or shard is 1000 r + i), the
// mistakes the issue names recorded, and the bytes each sends: a function asked for one
// Reduce_scatter (or one Allgather) that sends more, an Allreduce say, fails that item.
#include <algorithm>
#include <cstdio>

#include <xtensor/xview.hpp>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

void check_zero_memory_per_rank(CheckContext& context) {
  double psi = context.test.psi, k = context.test.k;
  int dp = context.test.dp;
  if (!context.test.arg.empty()) {  // "random": a model of 0.1 to 70 billion parameters
    Rng rng = context.rng("model");
    psi = std::round(rng.uniform(0.1, 70.0) * 1000) * 1e6;
    dp = 1 << rng.uniform_int(0, 10);
    k = rng.uniform_int(4, 16);
  }
  context.out.note("Ψ = " + number(psi) + " parameters, N_d = " + std::to_string(dp) +
                   ", k = " + number(k));
  for (int stage = 0; stage <= 3; ++stage) {
    context.out.real("stage " + std::to_string(stage) + ": bytes per rank",
                     zero_memory_per_rank(psi, dp, stage, k));
  }
}

// The ranges of every rank, as rows (begin, end).
template <class Range>
xt::xtensor<std::int64_t, 2> ranges_of(int dp, Range range) {
  xt::xtensor<std::int64_t, 2> rows({std::size_t(dp), 2});
  for (int r = 0; r < dp; ++r) {
    const auto [begin, end] = range(r);
    rows(r, 0) = static_cast<std::int64_t>(begin);
    rows(r, 1) = static_cast<std::int64_t>(end);
  }
  return rows;
}

void check_zero_shard_range(CheckContext& context) {
  const std::size_t numel = context.test.numel;
  const int dp = context.test.dp;
  context.out.note(std::to_string(numel) + " values on " + std::to_string(dp) +
                   " ranks; row r is rank r's (begin, end)");
  const std::string name = "every rank's (begin, end)";
  record_tensor(context.out, name,
                ranges_of(dp, [&](int r) { return zero_shard_range(numel, dp, r); }));
  const std::size_t floor = numel / dp;  // the mistake: s = numel / dp, rounded down
  record_mistake(context.out, name, "shards of numel / dp values, rounded down",
                 ranges_of(dp, [&](int r) {
                   return std::pair{std::min(r * floor, numel), std::min((r + 1) * floor, numel)};
                 }));
}

// Rank r's flat vector: element i is 1000 r + i.
template <class T>
xt::xtensor<T, 1> numbered_flat(int r, std::size_t n) {
  auto v = xt::xtensor<T, 1>::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) v(i) = static_cast<T>(1000 * r + static_cast<int>(i));
  return v;
}

std::size_t shard_size(std::size_t numel, int p) { return (numel + p - 1) / p; }

// Elements [begin, begin + s) of v, zero past its end.
template <class T>
xt::xtensor<T, 1> padded_slice(const xt::xtensor<T, 1>& v, std::size_t begin, std::size_t s) {
  xt::xtensor<T, 1> out = xt::zeros<T>({s});
  for (std::size_t j = 0; j < s && begin + j < v.size(); ++j) out(j) = v(begin + j);
  return out;
}

// ZeRO-1 (one Allreduce) or ZeRO-2 (one Reduce_scatter): the same shard.
template <class T, bool kReduceScatter>
void grad_shard_case(CheckContext& context) {
  const std::size_t numel = context.test.numel;
  const int p = context.world.Get_size(), r = context.world.Get_rank();
  const std::size_t s = shard_size(numel, p);
  context.out.note(std::to_string(p) + " ranks, " + std::to_string(numel) + " values of " +
                   context.test.type + " (shards of s = " + std::to_string(s) +
                   "); element i of rank r's gradient is 1000 r + i");
  const xt::xtensor<T, 1> grad = numbered_flat<T>(r, numel);
  std::uint64_t moved = 0;
  const xt::xtensor<T, 1> shard = moved_through(
      context, context.world,
      [&] {
        return kReduceScatter ? zero2_grad_shard<T>(grad, context.world)
                              : zero1_grad_shard<T>(grad, context.world);
      },
      &moved);
  xt::xtensor<T, 1> sum = xt::zeros<T>({numel});
  for (int q = 0; q < p; ++q) sum += numbered_flat<T>(q, numel);
  context.out.part("the shard");
  record_tensor(context.out, "this rank's shard of the summed gradient", shard);
  const std::string name = "this rank's shard of the summed gradient";
  record_mistake(context.out, name, "the gradient averaged, not summed",
                 xt::xtensor<T, 1>(padded_slice(sum, r * s, s) / T(p)));
  if (p > 1) {
    record_mistake(context.out, name, "rank r + 1's shard",
                   padded_slice(sum, ((r + 1) % p) * s, s));
  }
  const std::size_t begin = std::min(r * s, numel), end = std::min((r + 1) * s, numel);
  if (end - begin != s) {
    record_mistake(context.out, name, "the shard without its zero padding",
                   xt::xtensor<T, 1>(xt::view(sum, xt::range(begin, end))));
  }
  if (kReduceScatter) {
    context.out.part("one Reduce_scatter");
    record_bytes_beyond(context, moved, (p - 1) * s * sizeof(T), "that one Reduce_scatter sends");
  } else {
    context.out.part("one Allreduce");
    record_bytes_beyond(context, moved, 2 * (p - 1) * numel * sizeof(T) / p,
                        "that one Allreduce sends");
  }
}

template <class T>
void gather_case(CheckContext& context) {
  const std::size_t numel = context.test.numel;
  const int p = context.world.Get_size(), r = context.world.Get_rank();
  const std::size_t s = shard_size(numel, p);
  context.out.note(std::to_string(p) + " ranks, " + std::to_string(numel) + " values of " +
                   context.test.type + " (shards of s = " + std::to_string(s) +
                   "); rank r's shard element j is 1000 r + j, or -1 for padding past numel");
  auto shard_of = [&](int q) {
    xt::xtensor<T, 1> shard = numbered_flat<T>(q, s);
    for (std::size_t j = 0; j < s; ++j) {
      if (q * s + j >= numel) shard(j) = T(-1);
    }
    return shard;
  };
  std::uint64_t moved = 0;
  const xt::xtensor<T, 1> full = moved_through(
      context, context.world,
      [&] { return zero_gather_params<T>(shard_of(r), numel, context.world); }, &moved);
  // Every shard one after another, in rank order or reversed.
  auto all = xt::xtensor<T, 1>::from_shape({p * s}), reversed = all;
  for (int q = 0; q < p; ++q) {
    xt::view(all, xt::range(q * s, (q + 1) * s)) = shard_of(q);
    xt::view(reversed, xt::range(q * s, (q + 1) * s)) = shard_of(p - 1 - q);
  }
  context.out.part("the parameters");
  const std::string name = "the whole flat vector";
  record_tensor(context.out, name, full);
  record_mistake(context.out, name, "the padding kept (p s values)", all);
  record_mistake(context.out, name, "the shards in reverse rank order",
                 xt::xtensor<T, 1>(xt::view(reversed, xt::range(0, numel))));
  context.out.part("one Allgather");
  record_bytes_beyond(context, moved, (p - 1) * s * sizeof(T), "that one Allgather sends");
}

void check_zero1_grad_shard(CheckContext& context) {
  run_typed(context, grad_shard_case<float, false>, grad_shard_case<double, false>);
}
void check_zero2_grad_shard(CheckContext& context) {
  run_typed(context, grad_shard_case<float, true>, grad_shard_case<double, true>);
}
void check_zero_gather_params(CheckContext& context) {
  run_typed(context, gather_case<float>, gather_case<double>);
}

}  // namespace

DTK_GRADE_CHECK(
    check_zero_memory_per_rank,
    {"zero_memory_per_rank", CaseKind::zero, /*collective=*/false, /*typed=*/false, {}});
DTK_GRADE_CHECK(check_zero_shard_range,
                {"zero_shard_range", CaseKind::zero, /*collective=*/false, /*typed=*/false, {}});
DTK_GRADE_CHECK(check_zero1_grad_shard, {"zero1_grad_shard",
                                         CaseKind::zero,
                                         /*collective=*/true,
                                         /*typed=*/true,
                                         {"the shard", "one Allreduce"}});
DTK_GRADE_CHECK(check_zero2_grad_shard, {"zero2_grad_shard",
                                         CaseKind::zero,
                                         /*collective=*/true,
                                         /*typed=*/true,
                                         {"the shard", "one Reduce_scatter"}});
DTK_GRADE_CHECK(check_zero_gather_params, {"zero_gather_params",
                                           CaseKind::zero,
                                           /*collective=*/true,
                                           /*typed=*/true,
                                           {"the parameters", "one Allgather"}});

}  // namespace dtk::grade
