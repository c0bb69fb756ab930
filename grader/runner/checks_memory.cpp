// Part 16 (assignment 4): memory. to_bf16 and choose_recomputation are pure: one process asks
// for a case's floats (drawn from the test's shared key, of the kinds a case names) or
// activations. MixedPrecisionAdam steps one process's parameters, from bf16 numbers the grader
// rounds itself. FullyShardedBlocks runs on the test's ranks, each holding its own shards and
// gradients only: a forward and m micro-batches' backwards, every block gathered, used and
// released, its parameter bytes recorded after each call and the heap's own figures around each
// release (was the block's memory given back?).
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <xtensor/xadapt.hpp>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

// --- bf16 ------------------------------------------------------------------------------------

std::uint32_t bits_of(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

float float_of(std::uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// The grader's own rounding (a check never calls the student's outside call()): the inputs of
// the optimizer's cases, and the optimizer without a master copy (a known mistake).
bf16 nearest_even(std::uint32_t bits) {
  if (std::isnan(float_of(bits))) return 0x7FC0;
  return static_cast<bf16>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

// Known mistakes: the low half cut off; ties rounded up (away from zero in magnitude); a NaN
// rounded like a number (its payload's carry may reach infinity or flip nothing).
bf16 truncated(std::uint32_t bits) { return static_cast<bf16>(bits >> 16); }
bf16 ties_up(std::uint32_t bits) {
  if (std::isnan(float_of(bits))) return 0x7FC0;
  return static_cast<bf16>((bits + 0x8000) >> 16);
}
bf16 nan_as_number(std::uint32_t bits) {
  return static_cast<bf16>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

// The case's floats, as bits: "random" (any finite bit pattern), "ties" (exactly
// half-way: low half 0x8000), "near" (one below or above a tie), "subnormal" (exponent 0,
// either sign), "specials" (NaNs of every kind, the infinities, the largest floats, zeros).
std::vector<std::uint32_t> case_floats(const CheckContext& context) {
  const TestCase& test = context.test;
  const std::size_t n = static_cast<std::size_t>(test.value("n", 64));
  Rng rng = context.shared_rng("floats");
  const auto draw = [&] { return static_cast<std::uint32_t>(rng.next()); };
  std::vector<std::uint32_t> floats;
  if (test.has_word("specials")) {
    floats = {0x7F800000, 0xFF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x7F800001,
              0x7F80FFFF, 0xFF800001, 0x7FC00000, 0xFFC00000, 0x7FFFFFFF, 0x00000000, 0x80000000};
    for (std::size_t i = floats.size(); i < n; ++i) {
      floats.push_back((draw() & 0x807FFFFFu) | 0x7F800000u | 1u);  // a NaN, any payload
    }
    return floats;
  }
  while (floats.size() < n) {
    std::uint32_t bits = draw();
    if (test.has_word("ties")) bits = (bits & 0xFFFF0000u) | 0x8000u;
    if (test.has_word("near")) bits = (bits & 0xFFFF0000u) | (draw() & 1 ? 0x8001u : 0x7FFFu);
    if (test.has_word("subnormal")) bits &= 0x807FFFFFu;
    if (std::isnan(float_of(bits)) || std::isinf(float_of(bits))) continue;
    floats.push_back(bits);
  }
  return floats;
}

template <class Round>
xt::xtensor<std::int64_t, 1> rounded_all(const std::vector<std::uint32_t>& floats, Round round) {
  std::vector<std::int64_t> out;
  for (std::uint32_t bits : floats) out.push_back(round(bits));
  return int_tensor(out);
}

void check_to_bf16(CheckContext& context) {
  const std::vector<std::uint32_t> floats = case_floats(context);
  context.out.note(std::to_string(floats.size()) + " floats (" + context.test.case_text() +
                   "): the bf16 bits of each, in order");
  record_evidence(context.out, "the floats' bits", rounded_all(floats, [](std::uint32_t b) {
                    return static_cast<std::int64_t>(b);
                  }));
  const std::string name = "to_bf16 of each float (bits)";
  record_tensor(context.out, name, context.call([&] {
    std::vector<std::int64_t> out;
    for (std::uint32_t bits : floats) out.push_back(to_bf16(float_of(bits)));
    return int_tensor(out);
  }));
  context.judge([&](Judgement& judgement) {
    judgement.mistake(name, "the low 16 bits cut off (rounding toward zero)",
                      rounded_all(floats, truncated));
    judgement.mistake(name, "ties rounded up, not to the even bf16", rounded_all(floats, ties_up));
    judgement.mistake(name, "a NaN rounded like a number (not 0x7FC0)",
                      rounded_all(floats, nan_as_number));
  });
}

// --- the mixed-precision optimizer -----------------------------------------------------------

// n bf16 numbers near `scale` (the grader's rounding of random floats).
std::vector<bf16> random_bf16(Rng& rng, std::size_t n, double scale) {
  std::vector<bf16> values;
  for (std::size_t i = 0; i < n; ++i) {
    values.push_back(nearest_even(bits_of(static_cast<float>(scale * rng.value()))));
  }
  return values;
}

xt::xtensor<std::int64_t, 1> bf16_tensor(const std::vector<bf16>& values) {
  return int_tensor(std::vector<std::int64_t>(values.begin(), values.end()));
}

// A known mistake: Adam steps the bf16 parameters' own float values every step (no master
// copy), writing them back rounded as `round` does.
template <class Round>
std::pair<std::vector<bf16>, std::vector<float>> without_master(
    std::vector<bf16> params, const std::vector<std::vector<bf16>>& grads, float lr, Round round) {
  Adam<float> adam(params.size());
  xt::xtensor<float, 1> weights = xt::zeros<float>({params.size()});
  xt::xtensor<float, 1> grad = xt::zeros<float>({params.size()});
  for (const std::vector<bf16>& step_grads : grads) {
    for (std::size_t i = 0; i < params.size(); ++i) {
      weights(i) = from_bf16(params[i]);
      grad(i) = from_bf16(step_grads[i]);
    }
    adam.step(weights, 0, grad, lr);
    for (std::size_t i = 0; i < params.size(); ++i) params[i] = round(bits_of(weights(i)));
  }
  return {params, std::vector<float>(weights.begin(), weights.end())};
}

constexpr const char* kParamsPart = "the bf16 parameters";
constexpr const char* kMasterPart = "the fp32 master copy";

void check_mixed_precision_adam(CheckContext& context) {
  const TestCase& test = context.test;
  const std::size_t n = static_cast<std::size_t>(test.value("n", 16));
  const int steps = static_cast<int>(test.value("steps", 5));
  // "small": updates (about lr) far below half a bf16 step of the weights (near 1: 2^-8).
  const float lr = test.has_word("small") ? 1e-4f : 1e-2f;
  Rng rng = context.shared_rng("optimizer");
  const std::vector<bf16> start = random_bf16(rng, n, test.has_word("small") ? 2.0 : 1.0);
  std::vector<std::vector<bf16>> grads;
  for (int s = 0; s < steps; ++s) grads.push_back(random_bf16(rng, n, 1.0));
  if (test.has_word("wrong")) {
    context.out.note(std::to_string(n) + " parameters, " + std::to_string(n + 1) +
                     " gradients: a step it must refuse");
    record_refusal(context, "MixedPrecisionAdam::step with one gradient too many", [&] {
      std::vector<bf16> params = start;
      MixedPrecisionAdam optimizer(params);
      optimizer.step(params, std::vector<bf16>(n + 1), lr);
    });
    return;
  }
  context.out.note(std::to_string(n) + " bf16 parameters of magnitude up to " +
                   (test.has_word("small") ? "2" : "1") + ", " + std::to_string(steps) +
                   " steps of random bf16 gradients, lr " + std::to_string(lr) +
                   " (AdamOptions' defaults)");
  std::vector<bf16> params = start;
  xt::xtensor<float, 1> master;
  context.call([&] {
    MixedPrecisionAdam optimizer(params);
    for (const std::vector<bf16>& step_grads : grads) optimizer.step(params, step_grads, lr);
    master = optimizer.master();
  });
  context.out.part(kParamsPart);
  const std::string params_name = "the parameters after the steps (bf16 bits)";
  record_tensor(context.out, params_name, bf16_tensor(params));
  context.out.part(kMasterPart);
  const std::string master_name = "the master weights after the steps";
  record_tensor(context.out, master_name, master);
  context.judge([&](Judgement& judgement) {
    const auto [no_master, no_master_weights] = without_master(start, grads, lr, nearest_even);
    judgement.mistake(params_name,
                      "no master copy: Adam steps the bf16 parameters' own values, so updates "
                      "below half a bf16 step are lost",
                      bf16_tensor(no_master));
    judgement.mistake(master_name, "no master copy: the last step's weights before rounding",
                      xt::xtensor<float, 1>(xt::adapt(no_master_weights, {n})));
  });
}

// --- FSDP ------------------------------------------------------------------------------------

constexpr const char* kGatheredPart = "the gathered blocks";
constexpr const char* kBytesPart = "parameter bytes and the bytes sent";
constexpr const char* kFreedPart = "release gives the memory back";
constexpr const char* kGradientPart = "the gradient shards";

// Allocated bytes of the whole process: every arena's, and the mmapped blocks.
std::size_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// The case's blocks: `blocks` of 1 .. size parameters drawn from the shared key; with "big",
// one more of 1 MiB and a little (its release is watched on the heap).
template <class T>
std::vector<std::size_t> block_sizes(const CheckContext& context) {
  const TestCase& test = context.test;
  Rng rng = context.shared_rng("blocks");
  std::vector<std::size_t> numel;
  const int count = static_cast<int>(test.value("blocks", 4));
  const int size = static_cast<int>(test.value("size", 20));
  for (int b = 0; b < count; ++b)
    numel.push_back(static_cast<std::size_t>(rng.uniform_int(1, size)));
  if (test.has_word("big")) numel.push_back((1 << 20) / sizeof(T) + 5);
  return numel;
}

std::size_t shard_size(std::size_t numel, int p) { return (numel + p - 1) / p; }

// Rank r's shard of block b (its own values; zero padding past the block's end).
template <class T>
xt::xtensor<T, 1> shard_of(Rng rng, std::size_t numel, int p, int r) {
  const std::size_t s = shard_size(numel, p);
  xt::xtensor<T, 1> shard = xt::zeros<T>({s});
  for (std::size_t j = 0; j < s && r * s + j < numel; ++j) shard(j) = static_cast<T>(rng.value());
  return shard;
}

// Every 1000th element of a big tensor: a sample.
template <class T>
xt::xtensor<T, 1> sampled(const xt::xtensor<T, 1>& values) {
  const std::size_t stride = values.size() > 4096 ? 1000 : 1;
  std::vector<T> out;
  for (std::size_t i = 0; i < values.size(); i += stride) out.push_back(values(i));
  return xt::xtensor<T, 1>(xt::adapt(out, {out.size()}));
}

template <class T>
void sharded_blocks_case(CheckContext& context) {
  const TestCase& test = context.test;
  const int p = test.p, r = context.rank();
  const std::vector<std::size_t> numel = block_sizes<T>(context);
  const int micro_batches = static_cast<int>(test.value("m", 2));
  std::vector<xt::xtensor<T, 1>> shards;
  for (std::size_t b = 0; b < numel.size(); ++b) {
    shards.push_back(shard_of<T>(context.rng("shard " + std::to_string(b)), numel[b], p, r));
  }
  if (test.has_word("refuse")) {
    context.out.note("arguments and calls it must refuse, on " + std::to_string(p) + " ranks");
    auto bad = shards;
    bad[0] = xt::zeros<T>({shards[0].size() + 1});
    record_refusal(context, "FullyShardedBlocks with a shard one value too long",
                   [&] { FullyShardedBlocks<T> blocks(bad, numel, context.world); });
    long long logic_errors = 0;
    // Counts a call that throws std::logic_error itself (its subclass invalid_argument is for
    // bad arguments, not bad calls).
    const auto count_logic_error = [&logic_errors](const auto& bad_call) {
      try {
        bad_call();
      } catch (const std::invalid_argument&) {
      } catch (const std::logic_error&) {
        ++logic_errors;
      }
    };
    context.call([&] {
      FullyShardedBlocks<T> blocks(shards, numel, context.world);
      count_logic_error([&] { blocks.release(0); });
      blocks.gather(0);
      count_logic_error([&] { blocks.gather(0); });
      blocks.release(0);
    });
    context.out.integer(
        "std::logic_error for release of a block not held and a second gather "
        "(of 2)",
        logic_errors);
    return;
  }
  std::string sizes;
  for (std::size_t n : numel) sizes += (sizes.empty() ? "" : ", ") + std::to_string(n);
  context.out.note(std::to_string(p) + " ranks, " + test.type + ", blocks of " + sizes +
                   " parameters: a forward (each block gathered, released) and " +
                   std::to_string(micro_batches) +
                   " micro-batches' backwards (each block gathered, its gradient reduced once "
                   "per micro-batch, released), last block first");
  std::vector<xt::xtensor<T, 1>> gathered, gradients;
  std::vector<std::int64_t> bytes;
  long long kept = 0;
  std::size_t peak = 0;
  std::unique_ptr<FullyShardedBlocks<T>> blocks;
  const auto parameter_bytes = [&] {
    bytes.push_back(
        static_cast<std::int64_t>(context.call([&] { return blocks->parameter_bytes(); })));
  };
  const auto run_block = [&](int b, int reductions) {
    const std::size_t before = heap_in_use();
    gathered.push_back(context.call([&] { return blocks->gather(b); }));
    parameter_bytes();
    for (int mb = 0; mb < reductions; ++mb) {
      const xt::xtensor<T, 1> gradient = xt::flatten(random_matrix<T>(
          context.rng("gradient " + std::to_string(b) + " " + std::to_string(mb)), 1, numel[b]));
      context.call([&] { blocks->reduce_gradient(b, gradient); });
    }
    const std::size_t held = heap_in_use();
    context.call([&] { blocks->release(b); });
    // A block of 1 MiB or more must leave the heap at release: 90 % of it, the rest is slack
    // for what other threads of the process allocate meanwhile.
    if (numel[b] * sizeof(T) >= (1u << 20) &&
        heap_in_use() + numel[b] * sizeof(T) * 9 / 10 > std::max(held, before)) {
      ++kept;
    }
    parameter_bytes();
  };
  try {
    context.call(
        [&] { blocks = std::make_unique<FullyShardedBlocks<T>>(shards, numel, context.world); });
    parameter_bytes();
    for (int b = 0; b < static_cast<int>(numel.size()); ++b) run_block(b, 0);
    for (int b = static_cast<int>(numel.size()) - 1; b >= 0; --b) run_block(b, micro_batches);
    peak = context.call([&] { return blocks->peak_parameter_bytes(); });
    for (std::size_t b = 0; b < numel.size(); ++b) {
      gradients.push_back(
          context.call([&] { return blocks->gradient_shard(static_cast<int>(b)); }));
    }
    context.call([&] { blocks.reset(); });
  } catch (...) {
    // Its destructor is the student's: never run outside a student call.
    static_cast<void>(blocks.release());
    throw;
  }

  context.out.part(kGatheredPart);
  for (std::size_t b = 0; b < numel.size(); ++b) {
    record_tensor(context.out,
                  "block " + std::to_string(b) + " gathered for its forward" +
                      (numel[b] > 4096 ? " (every 1000th element)" : ""),
                  sampled(gathered[b]));
  }
  context.out.part(kBytesPart);
  record_tensor(context.out,
                "parameter_bytes() after making, then after each gather and each release",
                int_tensor(bytes));
  context.out.integer("peak_parameter_bytes()", static_cast<long long>(peak));
  std::uint64_t allowed = 0;
  for (std::size_t n : numel) {
    allowed += static_cast<std::uint64_t>(p - 1) * shard_size(n, p) * sizeof(T) *
               (2 + micro_batches);  // two Allgathers, m Reduce_scatters
  }
  record_bytes_beyond(context, allowed,
                      "that one Allgather per gather and one Reduce_scatter "
                      "per reduce_gradient send");
  context.out.part(kFreedPart);
  context.out.integer("blocks of 1 MiB or more whose memory stayed allocated after release", kept);
  context.out.part(kGradientPart);
  for (std::size_t b = 0; b < numel.size(); ++b) {
    const std::string name = "block " + std::to_string(b) + "'s gradient shard" +
                             (gradients[b].size() > 4096 ? " (every 1000th element)" : "");
    record_tensor(context.out, name, sampled(gradients[b]));
    context.judge([&](Judgement& judgement) {
      const std::size_t s = shard_size(numel[b], p);
      xt::xtensor<T, 1> last = xt::zeros<T>({s});
      for (int mb = 0; mb < micro_batches; ++mb) {
        last.fill(T(0));
        for (int q = 0; q < p; ++q) {
          const xt::xtensor<T, 1> g = xt::flatten(random_matrix<T>(
              judgement.rng_of(q, "gradient " + std::to_string(b) + " " + std::to_string(mb)), 1,
              numel[b]));
          for (std::size_t j = 0; j < s && r * s + j < numel[b]; ++j) last(j) += g(r * s + j);
        }
      }
      judgement.mistake(name,
                        "the last micro-batch's sum only: the shard is overwritten, not "
                        "accumulated",
                        sampled(last));
    });
  }
}

void check_fully_sharded_blocks(CheckContext& context) {
  run_typed(context, sharded_blocks_case<float>, sharded_blocks_case<double>);
}

// --- what to recompute -----------------------------------------------------------------------

// The case's activations: n drawn from the shared key (1 .. 1000 bytes and FLOPs), or "greedy":
// a case where dropping the cheapest FLOPs per byte first is not the best. The budget: a share
// of their bytes drawn too ("fits": all of them; "none": 0).
std::pair<std::vector<Activation>, std::uint64_t> case_activations(const CheckContext& context) {
  const TestCase& test = context.test;
  Rng rng = context.shared_rng("activations");
  std::vector<Activation> activations;
  const int n = static_cast<int>(test.value("n", 8));
  const bool greedy = test.has_word("greedy");
  for (int i = 0; i < n; ++i) {
    // With "greedy", small tensors dear to recompute (never worth dropping) around the three
    // below.
    activations.push_back(
        {"activation " + std::to_string(i),
         static_cast<std::uint64_t>(greedy ? rng.uniform_int(1, 10) : rng.uniform_int(1, 1000)),
         static_cast<std::uint64_t>(greedy ? rng.uniform_int(1000, 2000)
                                           : rng.uniform_int(1, 1000))});
  }
  std::uint64_t total = 0;
  for (const Activation& a : activations) total += a.bytes;
  if (greedy) {
    // Scaled copies of "a: 6 bytes, 3 FLOPs; b: 10, 6; c: 5, 5" with 10 k bytes to drop (more
    // than the small ones hold): b alone is best, the cheapest per byte first drops a and b.
    const std::uint64_t k = static_cast<std::uint64_t>(rng.uniform_int(20, 50));
    activations.push_back({"greedy a", 6 * k, 3 * k});
    activations.push_back({"greedy b", 10 * k, 6 * k});
    activations.push_back({"greedy c", 5 * k, 5 * k});
    return {activations, total + 11 * k};
  }
  if (test.has_word("fits")) return {activations, total};
  if (test.has_word("none")) return {activations, 0};
  return {activations, total * static_cast<std::uint64_t>(rng.uniform_int(10, 90)) / 100};
}

// The FLOPs of a set, and whether what it keeps fits.
std::pair<std::uint64_t, bool> cost_of(const std::vector<Activation>& activations,
                                       std::uint64_t budget, const std::vector<int>& chosen) {
  std::uint64_t flops = 0, kept = 0;
  std::vector<bool> dropped(activations.size(), false);
  for (int i : chosen) dropped[i] = true;
  for (std::size_t i = 0; i < activations.size(); ++i) {
    (dropped[i] ? flops += activations[i].flops : kept += activations[i].bytes);
  }
  return {flops, kept <= budget};
}

// A known mistake: the cheapest FLOPs per byte dropped first until the rest fits.
std::vector<int> greedy_by_ratio(const std::vector<Activation>& activations, std::uint64_t budget) {
  std::vector<int> order(activations.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return activations[a].flops * activations[b].bytes <
           activations[b].flops * activations[a].bytes;
  });
  std::uint64_t kept = 0;
  for (const Activation& a : activations) kept += a.bytes;
  std::vector<int> chosen;
  for (int i : order) {
    if (kept <= budget) break;
    chosen.push_back(i);
    kept -= activations[i].bytes;
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

void check_choose_recomputation(CheckContext& context) {
  const auto [activations, budget] = case_activations(context);
  if (context.test.has_word("many")) {
    context.out.note("21 activations: more than the contract takes");
    record_refusal(context, "choose_recomputation of 21 activations", [&] {
      choose_recomputation(std::vector<Activation>(21, Activation{"x", 1, 1}), 0);
    });
    return;
  }
  std::uint64_t total = 0;
  for (const Activation& a : activations) total += a.bytes;
  context.out.note(std::to_string(activations.size()) + " activations of " + std::to_string(total) +
                   " bytes in all, a budget of " + std::to_string(budget) + " bytes");
  const std::vector<int> chosen =
      context.call([&] { return choose_recomputation(activations, budget); });
  bool valid = true;
  for (std::size_t k = 0; k < chosen.size(); ++k) {
    valid = valid && chosen[k] >= 0 && chosen[k] < static_cast<int>(activations.size()) &&
            (k == 0 || chosen[k] > chosen[k - 1]);
  }
  record_evidence(context.out, "the indices returned", int_tensor(chosen));
  context.out.integer("indices distinct, in range and increasing (1: yes)", valid ? 1 : 0);
  const auto [flops, fits] =
      valid ? cost_of(activations, budget, chosen) : std::pair<std::uint64_t, bool>{0, false};
  context.out.integer("the kept activations fit the budget (1: yes)", fits ? 1 : 0);
  const std::string name = "FLOPs recomputed";
  record_tensor(context.out, name, int_tensor(std::vector<std::uint64_t>{flops}));
  context.judge([&](Judgement& judgement) {
    const std::vector<int> greedy = greedy_by_ratio(activations, budget);
    judgement.mistake(
        name, "the cheapest FLOPs per byte dropped first: a good guess, not the best",
        int_tensor(std::vector<std::uint64_t>{cost_of(activations, budget, greedy).first}));
  });
}

}  // namespace

DTK_GRADE_CHECK(check_to_bf16, {"to_bf16",
                                CaseKind::fields,
                                /*collective=*/false,
                                /*typed=*/false,
                                {},
                                /*reduces=*/false,
                                /*timed_against=*/"",
                                /*case_words=*/
                                {"n", "random", "ties", "near", "subnormal", "specials"}});
DTK_GRADE_CHECK(check_mixed_precision_adam, {"MixedPrecisionAdam",
                                             CaseKind::fields,
                                             /*collective=*/false,
                                             /*typed=*/false,
                                             {kParamsPart, kMasterPart},
                                             /*reduces=*/false,
                                             /*timed_against=*/"",
                                             /*case_words=*/{"n", "steps", "small", "wrong"}});
DTK_GRADE_CHECK(check_fully_sharded_blocks,
                {"FullyShardedBlocks",
                 CaseKind::fields,
                 /*collective=*/true,
                 /*typed=*/true,
                 {kGatheredPart, kBytesPart, kFreedPart, kGradientPart},
                 /*reduces=*/false,
                 /*timed_against=*/"",
                 /*case_words=*/{"blocks", "size", "m", "big", "refuse"}});
DTK_GRADE_CHECK(check_choose_recomputation,
                {"choose_recomputation",
                 CaseKind::fields,
                 /*collective=*/false,
                 /*typed=*/false,
                 {},
                 /*reduces=*/false,
                 /*timed_against=*/"",
                 /*case_words=*/{"n", "greedy", "fits", "none", "many"}});

}  // namespace dtk::grade
