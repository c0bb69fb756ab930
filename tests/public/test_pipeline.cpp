// Part 8 public tests: partition_layers, gpipe_clock_cycles, gpipe_schedule,
// one_f_one_b_schedule, get_pipeline_info and run_pipeline_schedule, on 4 ranks.
//   mpirun -n 4 ./build/tests/test_pipeline
// Expected values are written out by hand or computed here from the handout's rules (brute
// force for the partition); the executor is driven by a stage of this file whose tensors say
// where they come from, and the last cases send activations of 1 MB and more.
#include "dtk_test.hpp"

#include <dtk/pipeline.hpp>
#include "tagged_tensors.hpp"

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int kRanks = 4;

using dtk::testing::describe_tag;
using dtk::testing::expect_invalid_argument;
using dtk::testing::Kind;
using dtk::testing::report_first_few;
using dtk::testing::shape_text;
using dtk::testing::tagged;

std::string list_text(const std::vector<int>& values) {
  std::string text = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(values[i]);
  }
  return text + "}";
}

// ----------------------------------- 8.1 ----------------------------------------------------

// The tests' costs are whole numbers (parameter counts, small integers).
std::string costs_text(const std::vector<double>& costs) {
  std::string text = "{";
  for (std::size_t i = 0; i < costs.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(static_cast<long long>(costs[i]));
  }
  return text + "}";
}

// Stage costs, summed left to right, of the partition `b` of `costs` into num_stages stages;
// empty (with a failure recorded) when `b` is not such a partition.
std::vector<double> stage_costs(dtk::testing::Checks& check, const std::string& what,
                                const std::vector<double>& costs, int num_stages,
                                const std::vector<int>& b) {
  const int n = static_cast<int>(costs.size());
  bool valid = static_cast<int>(b.size()) == num_stages + 1 && b.front() == 0 && b.back() == n;
  for (std::size_t s = 0; valid && s + 1 < b.size(); ++s) valid = b[s] < b[s + 1];
  if (!valid) {
    check.that(false, what + ": " + list_text(b) + " is not a partition of " + std::to_string(n) +
                          " layers into " + std::to_string(num_stages) +
                          " stages (num_stages + 1 increasing boundaries from 0 to " +
                          std::to_string(n) + ")");
    return {};
  }
  std::vector<double> out;
  for (int s = 0; s < num_stages; ++s) {
    double sum = 0;
    for (int i = b[s]; i < b[s + 1]; ++i) sum += costs[i];
    out.push_back(sum);
  }
  return out;
}

// The smallest largest-stage cost, by trying every partition: stage `stage` starts at `begin`.
double brute_force_optimum(const std::vector<double>& costs, int num_stages, int stage = 0,
                           int begin = 0, double largest = 0) {
  const int n = static_cast<int>(costs.size());
  if (stage == num_stages - 1) {
    double sum = 0;
    for (int i = begin; i < n; ++i) sum += costs[i];
    return std::max(largest, sum);
  }
  double best = std::numeric_limits<double>::infinity();
  double sum = 0;
  // Leave at least one layer for each later stage.
  for (int end = begin + 1; end <= n - (num_stages - stage - 1); ++end) {
    sum += costs[end - 1];
    best = std::min(best,
                    brute_force_optimum(costs, num_stages, stage + 1, end, std::max(largest, sum)));
  }
  return best;
}

// partition_layers(costs, num_stages) must be a partition whose largest stage costs `optimum`.
void check_partition(dtk::testing::Checks& check, const std::vector<double>& costs, int num_stages,
                     double optimum) {
  const std::string what =
      "partition_layers(" + costs_text(costs) + ", " + std::to_string(num_stages) + ")";
  const std::vector<int> b = dtk::partition_layers(costs, num_stages);
  const std::vector<double> stages = stage_costs(check, what, costs, num_stages, b);
  if (stages.empty()) return;
  const double largest = *std::max_element(stages.begin(), stages.end());
  check.that(std::abs(largest - optimum) <= 1e-9 * optimum,
             what + " = " + list_text(b) + ": its largest stage costs " + std::to_string(largest) +
                 ", but " + std::to_string(optimum) + " is possible");
}

// partition_layers(costs, num_stages) must be exactly `expected` (the only optimal partition).
void check_boundaries(dtk::testing::Checks& check, const std::vector<double>& costs, int num_stages,
                      const std::vector<int>& expected) {
  const std::vector<int> actual = dtk::partition_layers(costs, num_stages);
  check.that(actual == expected, "partition_layers(" + costs_text(costs) + ", " +
                                     std::to_string(num_stages) + ") = " + list_text(actual) +
                                     ", expected " + list_text(expected));
}

// Parameter counts of real models' layers: the costs the handout balances.
std::vector<double> mlp_784_256_256_256_10() {
  return {784 * 256 + 256, 256 * 256 + 256, 256 * 256 + 256, 256 * 10 + 10};
}

// GPT-2 small: token and position embeddings, 12 transformer blocks, final norm and head.
std::vector<double> gpt2_small() {
  const double d = 768, vocab = 50257, context = 1024;
  std::vector<double> costs = {vocab * d + context * d};
  costs.insert(costs.end(), 12, 12 * d * d + 13 * d);
  costs.push_back(2 * d + vocab * d);
  return costs;
}

// ----------------------------------- 8.2 and 8.3 --------------------------------------------

std::string ticks_text(const std::vector<std::vector<std::pair<int, int>>>& ticks) {
  std::string text;
  for (std::size_t k = 0; k < ticks.size(); ++k) {
    text += (k ? " | " : "") + std::string("tick ") + std::to_string(k) + ":";
    for (const auto& [i, j] : ticks[k]) {
      text += " (" + std::to_string(i) + ", " + std::to_string(j) + ")";
    }
  }
  return text;
}

// "F0 F1 B0 ...": how the tests write a schedule.
std::string schedule_text(const std::vector<dtk::PipeStep>& steps) {
  std::string text;
  for (const dtk::PipeStep& step : steps) {
    text += (text.empty() ? "" : " ") + std::string(step.op == dtk::PipeOp::Forward ? "F" : "B") +
            std::to_string(step.microbatch);
  }
  return text;
}

// The handout's rules, written out independently of your functions.
std::vector<dtk::PipeStep> expected_gpipe(int num_microbatches) {
  std::vector<dtk::PipeStep> steps;
  for (int mb = 0; mb < num_microbatches; ++mb) steps.push_back({dtk::PipeOp::Forward, mb});
  for (int mb = 0; mb < num_microbatches; ++mb) steps.push_back({dtk::PipeOp::Backward, mb});
  return steps;
}

std::vector<dtk::PipeStep> expected_1f1b(int stage, int num_stages, int num_microbatches) {
  std::vector<dtk::PipeStep> steps;
  const int warm_up = std::min(num_stages - stage - 1, num_microbatches);
  int f = 0, b = 0;
  for (; f < warm_up; ++f) steps.push_back({dtk::PipeOp::Forward, f});
  for (; f < num_microbatches; ++f, ++b) {
    steps.push_back({dtk::PipeOp::Forward, f});
    steps.push_back({dtk::PipeOp::Backward, b});
  }
  for (; b < num_microbatches; ++b) steps.push_back({dtk::PipeOp::Backward, b});
  return steps;
}

void check_schedule(dtk::testing::Checks& check, const std::string& function, int stage,
                    int num_stages, int num_microbatches, const std::string& expected,
                    const std::vector<dtk::PipeStep>& actual) {
  check.that(expected == schedule_text(actual),
             function + "(" + std::to_string(stage) + ", " + std::to_string(num_stages) + ", " +
                 std::to_string(num_microbatches) + ") (stage, num_stages, num_microbatches):" +
                 "\n  expected " + expected + "\n  actual   " + schedule_text(actual));
}

// ----------------------------------- 8.4 ----------------------------------------------------

// The world ranks of comm's members, in comm's rank order (each member sends its world rank).
std::vector<int> members(dtk::Communicator& comm, int world_rank) {
  xt::xtensor<std::int32_t, 1> mine = {world_rank};
  xt::xtensor<std::int32_t, 1> all =
      xt::xtensor<std::int32_t, 1>::from_shape({static_cast<std::size_t>(comm.Get_size())});
  comm.Allgather(mine, all);
  return std::vector<int>(all.begin(), all.end());
}

// ----------------------------------- 8.5 ----------------------------------------------------

// Its tensors say where they come from (tests/harness/tagged_tensors.hpp): piece s is stage s,
// the data is -1 and the loss p.

// One stage of a pipeline for the executor tests. It records the order of the calls it gets
// and checks that every input is exactly what its neighbour (or the data, or the loss) made
// for that micro-batch. The activation between stages b - 1 and b of micro-batch mb is
// (rows + mb, width + b): its shape differs from boundary to boundary and from micro-batch
// to micro-batch, so a receive into the wrong shape shows.
template <class T>
class TracingStage : public dtk::PipelineStage<T> {
 public:
  TracingStage(int stage, int num_stages, std::size_t rows, std::size_t width)
      : stage_(stage), num_stages_(num_stages), rows_(rows), width_(width) {}

  bool is_first() const override { return stage_ == 0; }
  bool is_last() const override { return stage_ == num_stages_ - 1; }
  std::array<std::size_t, 2> input_shape(int mb) const override { return shape(mb, stage_); }
  std::array<std::size_t, 2> output_shape(int mb) const override { return shape(mb, stage_ + 1); }

  xt::xtensor<T, 2> input_microbatch(int mb) const override {
    if (!is_first()) {
      problem("input_microbatch(" + std::to_string(mb) + ") on a stage that is not the first");
    }
    return tagged<T>(Kind::Activation, -1, mb, input_shape(mb));
  }

  xt::xtensor<T, 2> forward(int mb, const xt::xtensor<T, 2>& input) override {
    const std::string call = "forward(" + std::to_string(mb) + ")";
    calls_.push_back({dtk::PipeOp::Forward, mb});
    check_received(call, input, tagged<T>(Kind::Activation, stage_ - 1, mb, input_shape(mb)));
    forwarded_.insert(mb);
    return tagged<T>(Kind::Activation, stage_, mb, output_shape(mb));
  }

  xt::xtensor<T, 2> loss_grad(int mb) const override {
    const std::string call = "loss_grad(" + std::to_string(mb) + ")";
    if (!is_last()) problem(call + " on a stage that is not the last");
    if (!forwarded_.count(mb)) problem(call + " before forward(" + std::to_string(mb) + ")");
    return tagged<T>(Kind::Gradient, num_stages_, mb, output_shape(mb));
  }

  xt::xtensor<T, 2> backward(int mb, const xt::xtensor<T, 2>& output_grad) override {
    const std::string call = "backward(" + std::to_string(mb) + ")";
    calls_.push_back({dtk::PipeOp::Backward, mb});
    check_received(call, output_grad, tagged<T>(Kind::Gradient, stage_ + 1, mb, output_shape(mb)));
    return tagged<T>(Kind::Gradient, stage_, mb, input_shape(mb));
  }

  const std::vector<dtk::PipeStep>& calls() const { return calls_; }
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::array<std::size_t, 2> shape(int mb, int boundary) const {
    return {rows_ + mb, width_ + boundary};
  }

  void problem(const std::string& text) const { problems_.push_back(text); }

  void check_received(const std::string& call, const xt::xtensor<T, 2>& actual,
                      const xt::xtensor<T, 2>& expected) const {
    const std::array<std::size_t, 2> actual_shape = {actual.shape(0), actual.shape(1)};
    const std::array<std::size_t, 2> expected_shape = {expected.shape(0), expected.shape(1)};
    if (actual_shape != expected_shape) {
      problem(call + " got a " + shape_text(actual_shape) + " tensor, expected " +
              shape_text(expected_shape));
      return;
    }
    for (std::size_t e = 0; e < expected.size(); ++e) {
      if (actual.data()[e] != expected.data()[e]) {
        problem(call + " got " + describe_tag(actual.data()[e], num_stages_, "stage") +
                " (element " + std::to_string(e) + "), expected " +
                describe_tag(expected.data()[e], num_stages_, "stage"));
        return;
      }
    }
  }

  int stage_, num_stages_;
  std::size_t rows_, width_;
  std::vector<dtk::PipeStep> calls_;
  std::set<int> forwarded_;
  mutable std::vector<std::string> problems_;
};

using ScheduleMaker = std::function<std::vector<dtk::PipeStep>(int stage, int num_stages, int m)>;

const ScheduleMaker kGpipe = [](int, int, int m) { return expected_gpipe(m); };
const ScheduleMaker kOneFOneB = expected_1f1b;

// Runs pipelines of 1, 2, 3 and 4 stages on the 4 ranks (rank r is stage r % p of pipeline
// r / p; with p = 3, rank 3 is a pipeline of its own) for each count of micro-batches, and
// checks every stage's calls, every tensor it received and the bytes it sent.
template <class T>
void check_executor(dtk::testing::Checks& check, const ScheduleMaker& make_schedule,
                    const std::string& schedule_name, std::size_t rows, std::size_t width) {
  dtk::Communicator world;
  const int rank = world.Get_rank();
  report_first_few(check, [&](dtk::testing::Checks& each) {
    for (int p = 1; p <= kRanks; ++p) {
      dtk::Communicator pp_comm = world.Split(/*color=*/rank / p, /*key=*/rank);
      const int stage = pp_comm.Get_rank(), num_stages = pp_comm.Get_size();
      for (int m : {1, 3, 8}) {
        const std::vector<dtk::PipeStep> schedule = make_schedule(stage, num_stages, m);
        TracingStage<T> traced(stage, num_stages, rows, width);
        const std::uint64_t bytes_before = pp_comm.total_bytes_transferred();
        dtk::run_pipeline_schedule(traced, schedule, pp_comm);
        const std::uint64_t bytes_sent = pp_comm.total_bytes_transferred() - bytes_before;

        const std::string run = schedule_name + ", " + std::to_string(num_stages) + " stage(s), " +
                                std::to_string(m) + " micro-batch(es), stage " +
                                std::to_string(stage) + ": ";
        each.that(schedule_text(traced.calls()) == schedule_text(schedule),
                  run + "the stage's calls were\n  " + schedule_text(traced.calls()) +
                      "\n  but the schedule is\n  " + schedule_text(schedule));
        for (const std::string& problem : traced.problems()) each.that(false, run + problem);
        std::uint64_t expected_bytes = 0;  // one activation down and one gradient up per mb
        for (int mb = 0; mb < m; ++mb) {
          if (stage + 1 < num_stages) expected_bytes += (rows + mb) * (width + stage + 1);
          if (stage > 0) expected_bytes += (rows + mb) * (width + stage);
        }
        expected_bytes *= sizeof(T);
        each.that(bytes_sent == expected_bytes,
                  run + "sent " + std::to_string(bytes_sent) + " bytes, expected " +
                      std::to_string(expected_bytes) + " (each activation and each gradient once)");
      }
    }
  });
}

// (64 + mb) x (4096 + b) values: at least 1 MB of float, far above MPI's eager limit.
constexpr std::size_t kLargeRows = 64, kLargeWidth = 4096;

}  // namespace

// ----------------------------------- 8.1 ----------------------------------------------------

TEST_CASE("Part 8 | partition_layers: small cases by hand", "[part8]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // Unique optima: the boundaries themselves are checked.
    check_boundaries(check, {1, 2, 3, 4, 5}, 2, {0, 3, 5});  // {1, 2, 3} and {4, 5}: 9
    check_boundaries(check, {1, 2, 3, 4, 5}, 1, {0, 5});
    check_boundaries(check, {1, 2, 3, 4, 5}, 5, {0, 1, 2, 3, 4, 5});  // one layer per stage
    // One heavy layer sets the cost; the rest only has to fit beside it.
    check_partition(check, {1, 1, 10, 1, 1}, 3, 10);
    check_partition(check, {10, 1, 1, 1, 1, 1, 1}, 2, 10);
    check_partition(check, {0, 0, 0, 0}, 3, 0);
    check_partition(check, {7}, 1, 7);
  });
}

TEST_CASE("Part 8 | partition_layers: real models (parameter counts)", "[part8]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // 784-256-256-256-10: fc1 alone outweighs the three other layers together.
    check_partition(check, mlp_784_256_256_256_10(), 2, 784 * 256 + 256);
    // GPT-2 small on 4 stages: the embedding and the head alone, 6 blocks on each middle stage.
    check_partition(check, gpt2_small(), 4, 6 * (12 * 768.0 * 768 + 13 * 768));
    check_partition(check, gpt2_small(), 3, brute_force_optimum(gpt2_small(), 3));
  });
}

TEST_CASE("Part 8 | partition_layers: optimal on random costs (brute force)", "[part8]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    std::mt19937 random(8);  // the same costs on every rank and every run
    report_first_few(check, [&random](dtk::testing::Checks& each) {
      for (int trial = 0; trial < 200; ++trial) {
        const int n = 1 + static_cast<int>(random() % 9);
        const int num_stages = 1 + static_cast<int>(random() % n);
        std::vector<double> costs(n);
        // Integers, so that every sum is exact; zeros and repeats included.
        for (double& c : costs) c = static_cast<double>(random() % 10);
        check_partition(each, costs, num_stages, brute_force_optimum(costs, num_stages));
      }
    });
  });
}

TEST_CASE("Part 8 | partition_layers: bad arguments throw std::invalid_argument", "[part8]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    const std::vector<double> costs = {1, 2, 3};
    expect_invalid_argument(check, "partition_layers({1, 2, 3}, 0)",
                            [&] { dtk::partition_layers(costs, 0); });
    expect_invalid_argument(check, "partition_layers({1, 2, 3}, 4) (more stages than layers)",
                            [&] { dtk::partition_layers(costs, 4); });
    expect_invalid_argument(check, "partition_layers({}, 1)", [] { dtk::partition_layers({}, 1); });
    expect_invalid_argument(check, "partition_layers({1, -2, 3}, 2) (a negative cost)", [] {
      dtk::partition_layers({1, -2, 3}, 2);
    });
  });
}

// ----------------------------------- 8.2 ----------------------------------------------------

TEST_CASE("Part 8 | gpipe_clock_cycles: every (microbatch, stage) at tick microbatch + stage",
          "[part8]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    const std::string two_by_two = "tick 0: (0, 0) | tick 1: (0, 1) (1, 0) | tick 2: (1, 1)";
    check.that(ticks_text(dtk::gpipe_clock_cycles(2, 2)) == two_by_two,
               "gpipe_clock_cycles(2 micro-batches, 2 stages):\n  expected " + two_by_two +
                   "\n  actual   " + ticks_text(dtk::gpipe_clock_cycles(2, 2)));
    // More stages than micro-batches, one of each, and larger grids, against the rule i + j == k.
    for (auto [m, p] : std::vector<std::pair<int, int>>{{1, 1}, {1, 4}, {4, 1}, {2, 5}, {8, 4}}) {
      std::vector<std::vector<std::pair<int, int>>> expected(m + p - 1);
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < p; ++j) expected[i + j].emplace_back(i, j);
      }
      const auto actual = dtk::gpipe_clock_cycles(m, p);
      check.that(ticks_text(actual) == ticks_text(expected),
                 "gpipe_clock_cycles(" + std::to_string(m) + " micro-batches, " +
                     std::to_string(p) + " stages):\n  expected " + ticks_text(expected) +
                     "\n  actual   " + ticks_text(actual));
    }
  });
}

// ----------------------------------- 8.3 ----------------------------------------------------

TEST_CASE("Part 8 | one_f_one_b_schedule: 4 stages, 8 micro-batches, by hand", "[part8]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    const std::vector<std::string> expected = {
        "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7",
        "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7",
        "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7",
        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7",
    };
    for (int s = 0; s < 4; ++s) {
      check_schedule(check, "one_f_one_b_schedule", s, 4, 8, expected[s],
                     dtk::one_f_one_b_schedule(s, 4, 8));
    }
  });
}

TEST_CASE("Part 8 | one_f_one_b_schedule: fewer micro-batches than stages, by hand", "[part8]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // Stage 0 of 4 would warm up with 3 forwards but has only 2 micro-batches.
    const std::vector<std::string> expected = {"F0 F1 B0 B1", "F0 F1 B0 B1", "F0 F1 B0 B1",
                                               "F0 B0 F1 B1"};
    for (int s = 0; s < 4; ++s) {
      check_schedule(check, "one_f_one_b_schedule", s, 4, 2, expected[s],
                     dtk::one_f_one_b_schedule(s, 4, 2));
    }
    check_schedule(check, "one_f_one_b_schedule", 0, 3, 1, "F0 B0",
                   dtk::one_f_one_b_schedule(0, 3, 1));
    check_schedule(check, "one_f_one_b_schedule", 0, 1, 3, "F0 B0 F1 B1 F2 B2",
                   dtk::one_f_one_b_schedule(0, 1, 3));
  });
}

TEST_CASE(
    "Part 8 | gpipe_schedule and one_f_one_b_schedule: every stage, 1-5 stages, 1-9 "
    "micro-batches",
    "[part8]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_schedule(check, "gpipe_schedule", 1, 4, 3, "F0 F1 F2 B0 B1 B2",
                   dtk::gpipe_schedule(1, 4, 3));
    report_first_few(check, [](dtk::testing::Checks& each) {
      for (int p = 1; p <= 5; ++p) {
        for (int m = 1; m <= 9; ++m) {
          for (int s = 0; s < p; ++s) {
            check_schedule(each, "gpipe_schedule", s, p, m, schedule_text(expected_gpipe(m)),
                           dtk::gpipe_schedule(s, p, m));
            check_schedule(each, "one_f_one_b_schedule", s, p, m,
                           schedule_text(expected_1f1b(s, p, m)),
                           dtk::one_f_one_b_schedule(s, p, m));
          }
        }
      }
    });
  });
}

TEST_CASE("Part 8 | schedules: bad arguments throw std::invalid_argument", "[part8]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    for (const auto& [name, schedule] : std::vector<std::pair<std::string, ScheduleMaker>>{
             {"gpipe_schedule", dtk::gpipe_schedule},
             {"one_f_one_b_schedule", dtk::one_f_one_b_schedule}}) {
      expect_invalid_argument(check, name + "(stage 4, 4 stages, 8)", [&] { schedule(4, 4, 8); });
      expect_invalid_argument(check, name + "(stage -1, 4 stages, 8)", [&] { schedule(-1, 4, 8); });
      expect_invalid_argument(check, name + "(0, 0 stages, 8)", [&] { schedule(0, 0, 8); });
      expect_invalid_argument(check, name + "(0, 4, 0 micro-batches)", [&] { schedule(0, 4, 0); });
    }
    expect_invalid_argument(check, "gpipe_clock_cycles(0 micro-batches, 4 stages)",
                            [] { dtk::gpipe_clock_cycles(0, 4); });
    expect_invalid_argument(check, "gpipe_clock_cycles(4 micro-batches, 0 stages)",
                            [] { dtk::gpipe_clock_cycles(4, 0); });
  });
}

// ----------------------------------- 8.4 ----------------------------------------------------

TEST_CASE("Part 8 | get_pipeline_info: every (mp, dp, pp) layout of 4 ranks", "[part8]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int rank = world.Get_rank();
    const std::vector<std::array<int, 3>> layouts = {{1, 1, 4}, {2, 1, 2}, {1, 2, 2},
                                                     {2, 2, 1}, {4, 1, 1}, {1, 4, 1}};
    for (const auto& [mp, dp, pp] : layouts) {
      const std::string layout = "mp_size " + std::to_string(mp) + ", dp_size " +
                                 std::to_string(dp) + ", pp_size " + std::to_string(pp) + ": ";
      dtk::PipelineInfo info = dtk::get_pipeline_info(world, rank, mp, dp, pp);
      const int stage_size = mp * dp, pp_idx = rank / stage_size;
      std::vector<int> pipeline, stage;
      for (int s = 0; s < pp; ++s) pipeline.push_back(s * stage_size + rank % stage_size);
      for (int r = 0; r < stage_size; ++r) stage.push_back(pp_idx * stage_size + r);

      check.equal(layout + "pp_idx", pp_idx, info.pp_idx);
      const std::vector<int> pp_members = members(info.pp_comm, rank);
      check.that(pp_members == pipeline,
                 layout + "pp_comm holds world ranks " + list_text(pp_members) +
                     " (in its rank order), expected " + list_text(pipeline));
      const std::vector<int> stage_members = members(info.stage_comm, rank);
      check.that(stage_members == stage, layout + "stage_comm holds world ranks " +
                                             list_text(stage_members) +
                                             " (in its rank order), expected " + list_text(stage));
    }
  });
}

TEST_CASE(
    "Part 8 | get_pipeline_info: sizes that do not match the ranks throw "
    "std::invalid_argument",
    "[part8]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int rank = world.Get_rank();
    expect_invalid_argument(check, "get_pipeline_info(4 ranks, mp 2, dp 2, pp 2)",
                            [&] { dtk::get_pipeline_info(world, rank, 2, 2, 2); });
    expect_invalid_argument(check, "get_pipeline_info(4 ranks, mp 4, dp 1, pp 0)",
                            [&] { dtk::get_pipeline_info(world, rank, 4, 1, 0); });
  });
}

// ----------------------------------- 8.5 ----------------------------------------------------

// Its tensors say where they come from (tests/harness/tagged_tensors.hpp): piece s is stage s,
// the data is -1 and the loss p.

TEMPLATE_TEST_CASE("Part 8 | run_pipeline_schedule: GPipe and 1F1B, small activations", "[part8]",
                   float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_executor<TestType>(check, kGpipe, "GPipe", 2, 3);
    check_executor<TestType>(check, kOneFOneB, "1F1B", 2, 3);
  });
}

TEMPLATE_TEST_CASE("Part 8 | run_pipeline_schedule: GPipe, activations of 1 MB and more", "[part8]",
                   float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_executor<TestType>(check, kGpipe, "GPipe", kLargeRows, kLargeWidth);
  });
}

// A stage that Sends its activation while its neighbour Sends a gradient back deadlocks here:
// the harness stops the program after DTK_TEST_TIMEOUT seconds (60 by default).
TEMPLATE_TEST_CASE("Part 8 | run_pipeline_schedule: 1F1B, activations of 1 MB and more", "[part8]",
                   float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_executor<TestType>(check, kOneFOneB, "1F1B", kLargeRows, kLargeWidth);
  });
}
