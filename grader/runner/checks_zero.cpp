// Part 9 (assignment 2): ZeRO. The memory model on the paper's numbers and on numbers drawn from
// the seed; shard ranges on every rank of a grid; the three collectives on dp ranks, each rank
// with a random gradient or shard of its own, the mistakes the issue names recorded (in the
// reference's run, from every rank's values), and the bytes each sends: a function asked for
// one Reduce_scatter (or one Allgather) that sends more, an Allreduce say, fails that item.
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
                     context.call([&] { return zero_memory_per_rank(psi, dp, stage, k); }));
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
  record_tensor(context.out, name, ranges_of(dp, [&](int r) {
                  return context.call([&] { return zero_shard_range(numel, dp, r); });
                }));
  context.judge([&](Judgement& judgement) {
    const std::size_t floor = numel / dp;  // the mistake: s = numel / dp, rounded down
    judgement.mistake(
        name, "shards of numel / dp values, rounded down", ranges_of(dp, [&](int r) {
          return std::pair{std::min(r * floor, numel), std::min((r + 1) * floor, numel)};
        }));
  });
}

// A rank's flat vector of n values, drawn from its key.
template <class T>
xt::xtensor<T, 1> random_flat(Rng rng, std::size_t n) {
  auto v = xt::xtensor<T, 1>::from_shape({n});
  for (T& value : v) value = static_cast<T>(rng.value());
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
  const int p = context.world.Get_size(), r = context.rank();
  const std::size_t s = shard_size(numel, p);
  context.out.note(std::to_string(p) + " ranks, " + std::to_string(numel) + " values of " +
                   context.test.type + " (shards of s = " + std::to_string(s) +
                   "); every rank's gradient drawn from the seed");
  const xt::xtensor<T, 1> grad = random_flat<T>(context.rng("gradient"), numel);
  const xt::xtensor<T, 1> shard = context.call([&] {
    return kReduceScatter ? zero2_grad_shard<T>(grad, context.world)
                          : zero1_grad_shard<T>(grad, context.world);
  });
  context.out.part("the shard");
  const std::string name = "this rank's shard of the summed gradient";
  record_tensor(context.out, name, shard);
  context.judge([&](Judgement& judgement) {
    xt::xtensor<T, 1> sum = xt::zeros<T>({numel});
    for (int q = 0; q < p; ++q) sum += random_flat<T>(judgement.rng_of(q, "gradient"), numel);
    judgement.mistake(name, "the gradient averaged, not summed",
                      xt::xtensor<T, 1>(padded_slice(sum, r * s, s) / T(p)));
    if (p > 1)
      judgement.mistake(name, "rank r + 1's shard", padded_slice(sum, ((r + 1) % p) * s, s));
    const std::size_t begin = std::min(r * s, numel), end = std::min((r + 1) * s, numel);
    if (end - begin != s) {
      judgement.mistake(name, "the shard without its zero padding",
                        xt::xtensor<T, 1>(xt::view(sum, xt::range(begin, end))));
    }
  });
  if (kReduceScatter) {
    context.out.part("one Reduce_scatter");
    record_bytes_beyond(context, (p - 1) * s * sizeof(T), "that one Reduce_scatter sends");
  } else {
    context.out.part("one Allreduce");
    record_bytes_beyond(context, 2 * (p - 1) * numel * sizeof(T) / p, "that one Allreduce sends");
  }
}

template <class T>
void gather_case(CheckContext& context) {
  const std::size_t numel = context.test.numel;
  const int p = context.world.Get_size();
  const std::size_t s = shard_size(numel, p);
  context.out.note(std::to_string(p) + " ranks, " + std::to_string(numel) + " values of " +
                   context.test.type + " (shards of s = " + std::to_string(s) +
                   "); every rank's shard drawn from the seed, padding past numel included");
  const xt::xtensor<T, 1> shard = random_flat<T>(context.rng("shard"), s);
  const xt::xtensor<T, 1> full =
      context.call([&] { return zero_gather_params<T>(shard, numel, context.world); });
  context.out.part("the parameters");
  const std::string name = "the whole flat vector";
  record_tensor(context.out, name, full);
  context.judge([&](Judgement& judgement) {
    // Every shard one after another, in rank order or reversed.
    auto all = xt::xtensor<T, 1>::from_shape({p * s}), reversed = all;
    for (int q = 0; q < p; ++q) {
      const xt::xtensor<T, 1> shard_q = random_flat<T>(judgement.rng_of(q, "shard"), s);
      xt::view(all, xt::range(q * s, (q + 1) * s)) = shard_q;
      xt::view(reversed, xt::range((p - 1 - q) * s, (p - q) * s)) = shard_q;
    }
    judgement.mistake(name, "the padding kept (p s values)", all);
    judgement.mistake(name, "the shards in reverse rank order",
                      xt::xtensor<T, 1>(xt::view(reversed, xt::range(0, numel))));
  });
  context.out.part("one Allgather");
  record_bytes_beyond(context, (p - 1) * s * sizeof(T), "that one Allgather sends");
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
