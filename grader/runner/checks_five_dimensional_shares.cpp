// Part 14.5 (assignment 4): data parallelism with uneven shares. share_sizes and
// partition_examples are pure: one process asks for every share of a case's fractions (named
// sets, such as the labs' {0.7, 0.2, 0.1}, or drawn from the test's shared key) and for the
// arguments to refuse. weighted_gradient_average runs on the test's ranks, each holding its own
// mean gradient and count of examples, drawn from its own key; the mean of the ranks' means (the
// unweighted average) is laid out in judge(), from every rank's inputs.
#include <cmath>
#include <limits>
#include <numeric>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

// The case's fractions: "labs" {0.7, 0.2, 0.1}, "thirds" (equal remainders), "random" (parts=K
// drawn from the shared key; with "zero", the second is 0), and the ones to refuse: "negative",
// "badsum", "empty".
std::vector<double> case_fractions(const CheckContext& context) {
  const TestCase& test = context.test;
  if (test.has_word("labs")) return {0.7, 0.2, 0.1};
  if (test.has_word("thirds")) return {1.0 / 3, 1.0 / 3, 1.0 / 3};
  if (test.has_word("negative")) return {0.6, -0.1, 0.5};
  if (test.has_word("badsum")) return {0.5, 0.4};
  if (test.has_word("empty")) return {};
  const int parts = static_cast<int>(test.value("parts", 3));
  Rng rng = context.shared_rng("fractions");
  std::vector<double> weights;
  for (int i = 0; i < parts; ++i) weights.push_back(rng.uniform_int(1, 9));
  if (test.has_word("zero") && parts > 1) weights[1] = 0;
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  for (double& w : weights) w /= total;
  return weights;
}

bool valid_fractions(const std::vector<double>& fractions) {
  if (fractions.empty()) return false;
  double sum = 0;
  for (double f : fractions) {
    if (f < 0) return false;
    sum += f;
  }
  return std::abs(sum - 1) <= 1e-9;
}

std::string fractions_text(const std::vector<double>& fractions) {
  std::string text = "{";
  for (std::size_t i = 0; i < fractions.size(); ++i) {
    std::string number = std::to_string(fractions[i]);
    number.erase(number.find_last_not_of('0') + 1);
    if (number.back() == '.') number.pop_back();
    text += (i ? ", " : "") + number;
  }
  return text + "}";
}

// floor(n · f) for each fraction: every rule below starts from them.
std::vector<std::size_t> floors(std::size_t n, const std::vector<double>& fractions) {
  std::vector<std::size_t> sizes;
  for (double f : fractions) sizes.push_back(static_cast<std::size_t>(std::floor(double(n) * f)));
  return sizes;
}

// The floors, and the examples they leave over given one each to the shares in `order`.
std::vector<std::size_t> leftovers_by_order(std::size_t n, const std::vector<double>& fractions,
                                            const std::vector<std::size_t>& order) {
  std::vector<std::size_t> sizes = floors(n, fractions);
  const std::size_t left = n - std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
  for (std::size_t i = 0; i < left; ++i) ++sizes[order[i % order.size()]];
  return sizes;
}

std::vector<std::size_t> index_order(std::size_t count) {
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

// A known mistake: every leftover to the last share.
std::vector<std::size_t> leftovers_to_last(std::size_t n, const std::vector<double>& fractions) {
  return leftovers_by_order(n, fractions, {fractions.size() - 1});
}

// A known mistake: the leftovers to the first shares, whatever their remainders.
std::vector<std::size_t> leftovers_in_order(std::size_t n, const std::vector<double>& fractions) {
  return leftovers_by_order(n, fractions, index_order(fractions.size()));
}

// The right sizes, the grader's own (a check never calls a student function outside call()):
// the leftovers by remainder, the largest first, the lower index first among equal ones.
std::vector<std::size_t> largest_remainders(std::size_t n, const std::vector<double>& fractions) {
  const std::vector<std::size_t> sizes = floors(n, fractions);
  const auto remainder = [&](std::size_t i) { return double(n) * fractions[i] - double(sizes[i]); };
  std::vector<std::size_t> order = index_order(fractions.size());
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return remainder(a) > remainder(b); });
  return leftovers_by_order(n, fractions, order);
}

std::vector<std::size_t> rounded(std::size_t n, const std::vector<double>& fractions) {
  std::vector<std::size_t> sizes;
  for (double f : fractions) sizes.push_back(static_cast<std::size_t>(std::llround(double(n) * f)));
  return sizes;
}

std::string case_note(std::size_t n, const std::vector<double>& fractions) {
  return std::to_string(n) + " examples in shares of " + fractions_text(fractions);
}

void check_share_sizes(CheckContext& context) {
  const std::size_t n = static_cast<std::size_t>(context.test.value("n", 10));
  const std::vector<double> fractions = case_fractions(context);
  const std::string call =
      "share_sizes(" + std::to_string(n) + ", " + fractions_text(fractions) + ")";
  if (!valid_fractions(fractions)) {
    context.out.note(call + ": arguments it must refuse");
    record_refusal(context, call, [&] { share_sizes(n, fractions); });
    return;
  }
  context.out.note(case_note(n, fractions));
  const std::string& name = call;
  record_tensor(context.out, name,
                int_tensor(context.call([&] { return share_sizes(n, fractions); })));
  context.judge([&](Judgement& judgement) {
    judgement.mistake(name, "every leftover example to the last share",
                      int_tensor(leftovers_to_last(n, fractions)));
    judgement.mistake(name, "the leftovers one each to the first shares, not by remainder",
                      int_tensor(leftovers_in_order(n, fractions)));
    judgement.mistake(name, "each n · f rounded to the nearest (the sizes need not sum to n)",
                      int_tensor(rounded(n, fractions)));
  });
}

void check_partition_examples(CheckContext& context) {
  const std::size_t n = static_cast<std::size_t>(context.test.value("n", 10));
  const std::vector<double> fractions = case_fractions(context);
  Rng seeds = context.shared_rng("seed");
  const std::uint64_t seed = seeds.next();
  const int only = static_cast<int>(context.test.value("share", -1));
  if (!valid_fractions(fractions) || only >= static_cast<int>(fractions.size())) {
    const std::string call = "partition_examples(" + std::to_string(n) + ", " +
                             fractions_text(fractions) + ", seed, " + std::to_string(only) + ")";
    context.out.note(call + ": arguments it must refuse");
    record_refusal(context, call, [&] { partition_examples(n, fractions, seed, only); });
    return;
  }
  context.out.note(case_note(n, fractions) + ", seed " + std::to_string(seed) +
                   "; each share's examples in the order returned");
  for (int share = 0; share < static_cast<int>(fractions.size()); ++share) {
    const std::string name = "share " + std::to_string(share);
    record_tensor(
        context.out, name,
        int_tensor(context.call([&] { return partition_examples(n, fractions, seed, share); })));
    context.judge([&](Judgement& judgement) {
      const std::vector<std::size_t> sizes = largest_remainders(n, fractions);
      const std::vector<std::size_t> order = seeded_permutation(n, seed);
      const std::size_t begin =
          std::accumulate(sizes.begin(), sizes.begin() + share, std::size_t{0});
      std::vector<std::size_t> mine(order.begin() + begin, order.begin() + begin + sizes[share]);
      std::sort(mine.begin(), mine.end());
      judgement.mistake(name, "the share's examples sorted (the permutation's order was asked)",
                        int_tensor(mine));
      const std::vector<std::size_t> own = seeded_permutation(n, seed + share);
      judgement.mistake(name,
                        "each share cut from a permutation of its own (seed + share): "
                        "shares overlap",
                        int_tensor(std::vector<std::size_t>(own.begin() + begin,
                                                            own.begin() + begin + sizes[share])));
    });
  }
}

// --- the weighted average ------------------------------------------------------------------

// Rank r's inputs: its mean gradient (`size` values) and its count of examples (1 .. 50; 0 for
// rank 1 with the word "empty", whose mean is then NaN, and for every rank with "none").
template <class T>
std::pair<xt::xtensor<T, 1>, std::size_t> rank_inputs(Rng rng, const TestCase& test, int rank) {
  const std::size_t size = static_cast<std::size_t>(test.value("size", 5));
  xt::xtensor<T, 1> mean = xt::flatten(random_matrix<T>(rng, 1, size));
  std::size_t examples = static_cast<std::size_t>(rng.uniform_int(1, 50));
  if (test.has_word("none") || (test.has_word("empty") && rank == 1)) {
    examples = 0;
    mean.fill(std::numeric_limits<T>::quiet_NaN());
  }
  return {mean, examples};
}

template <class T>
void weighted_case(CheckContext& context) {
  const TestCase& test = context.test;
  const int p = test.p, r = context.rank();
  const auto [mean, examples] = rank_inputs<T>(context.rng("gradient"), test, r);
  context.out.note(
      std::to_string(p) + " ranks, " + test.type + ", mean gradients of " +
      std::to_string(mean.size()) + " values over 1-50 examples per rank" +
      (test.has_word("empty") ? "; rank 1 has none (its mean is NaN)" : "") +
      (test.has_word("none") ? "; no rank has an example: every rank must throw" : ""));
  if (test.has_word("none")) {
    record_refusal(context, "weighted_gradient_average with no example on any rank",
                   [&] { weighted_gradient_average<T>(mean, examples, context.world); });
    return;
  }
  context.out.integer("this rank's examples", static_cast<long long>(examples));
  const std::string name = "the batch's mean gradient";
  record_tensor(context.out, name, context.call([&] {
    return weighted_gradient_average<T>(mean, examples, context.world);
  }));
  context.judge([&](Judgement& judgement) {
    xt::xtensor<T, 1> unweighted = xt::zeros<T>({mean.size()});
    int holding = 0;
    for (int rank = 0; rank < p; ++rank) {
      const auto [their_mean, their_examples] =
          rank_inputs<T>(judgement.rng_of(rank, "gradient"), test, rank);
      if (their_examples == 0) continue;
      unweighted += their_mean;
      ++holding;
    }
    judgement.mistake(name,
                      "the mean of the ranks' means (each rank weighted alike, whatever "
                      "its examples)",
                      xt::xtensor<T, 1>(unweighted / T(holding)));
  });
}

void check_weighted_gradient_average(CheckContext& context) {
  run_typed(context, weighted_case<float>, weighted_case<double>);
}

}  // namespace

DTK_GRADE_CHECK(check_share_sizes, {"share_sizes",
                                    CaseKind::fields,
                                    /*collective=*/false,
                                    /*typed=*/false,
                                    {},
                                    /*reduces=*/false,
                                    /*timed_against=*/"",
                                    /*case_words=*/
                                    {"n", "parts", "labs", "thirds", "random", "zero", "negative",
                                     "badsum", "empty"}});
DTK_GRADE_CHECK(check_partition_examples, {"partition_examples",
                                           CaseKind::fields,
                                           /*collective=*/false,
                                           /*typed=*/false,
                                           {},
                                           /*reduces=*/false,
                                           /*timed_against=*/"",
                                           /*case_words=*/
                                           {"n", "parts", "share", "labs", "thirds", "random",
                                            "zero", "negative", "badsum", "empty"}});
DTK_GRADE_CHECK(check_weighted_gradient_average, {"weighted_gradient_average",
                                                  CaseKind::fields,
                                                  /*collective=*/true,
                                                  /*typed=*/true,
                                                  {},
                                                  /*reduces=*/false,
                                                  /*timed_against=*/"",
                                                  /*case_words=*/{"size", "empty", "none"}});

}  // namespace dtk::grade
