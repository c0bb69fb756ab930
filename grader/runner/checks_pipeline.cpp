// Part 8 (assignment 2): pipeline parallelism. Partitions are judged by what they achieve (any
// optimal partition is right), the clock and 1F1B exactly, GPipe by the rules of its order, the
// grid like get_info, and the executor by driving a test stage of the grader's own through it on
// p ranks: every call's order, and every activation and gradient it is handed, against the
// serial step.
#include <algorithm>
#include <numeric>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

// Layer costs drawn from the seed: whole numbers 1 to 99, so that stage sums are exact and the
// optimal largest stage is one number. A heavy first and last layer (an embedding and a head)
// in every other case.
std::vector<double> layer_costs(CheckContext& context) {
  Rng rng = context.rng("layer costs");
  std::vector<double> costs(context.test.layers);
  for (double& cost : costs) cost = rng.uniform_int(1, 99);
  if (context.test.layers > 2 && context.test.layers % 2 == 0) {
    costs.front() += 200;
    costs.back() += 150;
  }
  return costs;
}

std::string listed(const std::vector<double>& values) {
  std::string text;
  for (double v : values) text += (text.empty() ? "" : ", ") + std::to_string(static_cast<long>(v));
  return text;
}

void check_partition_layers(CheckContext& context) {
  const std::vector<double> costs = layer_costs(context);
  const int p = context.test.p, n = static_cast<int>(costs.size());
  context.out.note(std::to_string(n) + " layers of costs {" + listed(costs) + "} into " +
                   std::to_string(p) + " stages");
  const std::vector<int> b = partition_layers(costs, p);
  bool valid = static_cast<int>(b.size()) == p + 1 && b.front() == 0 && b.back() == n;
  for (std::size_t s = 0; valid && s + 1 < b.size(); ++s) valid = b[s] < b[s + 1];
  double largest = 0;
  for (std::size_t s = 0; valid && s + 1 < b.size(); ++s)
    largest =
        std::max(largest, std::accumulate(costs.begin() + b[s], costs.begin() + b[s + 1], 0.0));
  context.out.part("a valid partition");
  context.out.integer("p + 1 boundaries from 0 to n, every stage at least one layer (1 = yes)",
                      valid ? 1 : 0);
  context.out.part("the largest stage as small as possible");
  context.out.real("the largest stage's cost", valid ? largest : -1);
}

void check_gpipe_clock_cycles(CheckContext& context) {
  const int m = context.test.m, p = context.test.p;
  context.out.note(std::to_string(m) + " micro-batches on " + std::to_string(p) + " stages");
  const auto ticks = gpipe_clock_cycles(m, p);
  context.out.integer("ticks", static_cast<long long>(ticks.size()));
  for (std::size_t k = 0; k < ticks.size(); ++k) {
    xt::xtensor<std::int32_t, 2> pairs({ticks[k].size(), 2});
    for (std::size_t i = 0; i < ticks[k].size(); ++i) {
      pairs(i, 0) = ticks[k][i].first;
      pairs(i, 1) = ticks[k][i].second;
    }
    record_tensor(context.out, "tick " + std::to_string(k) + ": (microbatch, stage) rows", pairs);
  }
}

// Steps as two rows: the ops (0 = forward, 1 = backward), then their micro-batches.
xt::xtensor<std::int32_t, 2> as_rows(const std::vector<std::array<int, 2>>& steps) {
  xt::xtensor<std::int32_t, 2> rows({2, steps.size()});
  for (std::size_t i = 0; i < steps.size(); ++i) {
    rows(0, i) = steps[i][0];
    rows(1, i) = steps[i][1];
  }
  return rows;
}

std::vector<std::array<int, 2>> as_pairs(const std::vector<PipeStep>& steps) {
  std::vector<std::array<int, 2>> pairs;
  for (const PipeStep& step : steps)
    pairs.push_back({step.op == PipeOp::Forward ? 0 : 1, step.microbatch});
  return pairs;
}

const char* const kStepRows =
    "row 0: the ops (0 = forward, 1 = backward), row 1: their micro-batches";

void check_one_f_one_b_schedule(CheckContext& context) {
  const int m = context.test.m, p = context.test.p;
  context.out.note(std::to_string(m) + " micro-batches on " + std::to_string(p) + " stages; " +
                   kStepRows);
  for (int s = 0; s < p; ++s) {
    record_tensor(context.out, "stage " + std::to_string(s),
                  as_rows(as_pairs(one_f_one_b_schedule(s, p, m))));
  }
}

// GPipe's rules: every forward and every backward exactly once, all forwards before any
// backward, the backwards in micro-batch order.
bool gpipe_valid(const std::vector<PipeStep>& steps, int m) {
  if (static_cast<int>(steps.size()) != 2 * m) return false;
  std::vector<bool> forwarded(m, false);
  for (int i = 0; i < m; ++i) {
    const PipeStep& step = steps[i];
    if (step.op != PipeOp::Forward || step.microbatch < 0 || step.microbatch >= m ||
        forwarded[step.microbatch]) {
      return false;
    }
    forwarded[step.microbatch] = true;
  }
  for (int i = 0; i < m; ++i) {
    if (steps[m + i].op != PipeOp::Backward || steps[m + i].microbatch != i) return false;
  }
  return true;
}

void check_gpipe_schedule(CheckContext& context) {
  const int m = context.test.m, p = context.test.p;
  context.out.note(std::to_string(m) + " micro-batches on " + std::to_string(p) +
                   " stages: each forward once, then each backward once, in micro-batch order");
  for (int s = 0; s < p; ++s) {
    context.out.integer("stage " + std::to_string(s) + ": a valid GPipe order (1 = yes)",
                        gpipe_valid(gpipe_schedule(s, p, m), m) ? 1 : 0);
  }
}

// The (mp, dp, pp) grid, with Megatron-LM's order: model-parallel fastest, pipeline slowest.
void check_get_pipeline_info(CheckContext& context) {
  const int mp = context.test.mp, dp = context.test.dp, pp = context.test.pp;
  const int rank = context.world.Get_rank();
  context.out.note(
      "mp=" + std::to_string(mp) + " dp=" + std::to_string(dp) + " pp=" + std::to_string(pp) +
      " on " + std::to_string(mp * dp * pp) +
      " ranks; mp_idx = rank % mp, dp_idx = (rank / mp) % dp, pp_idx = rank / (mp dp)");
  PipelineInfo info = get_pipeline_info(context.world, rank, mp, dp, pp);
  // Members as world ranks, in the communicator's order, gathered with the grader's own MPI.
  auto members = [&](const Communicator& comm) {
    const int size = comm.Get_size();
    xt::xtensor<std::int32_t, 1> ranks =
        xt::xtensor<std::int32_t, 1>::from_shape({std::size_t(size)});
    MPI_Allgather(&rank, 1, MPI_INT, ranks.data(), 1, MPI_INT, comm.handle());
    return ranks;
  };
  context.out.part("pp_idx");
  context.out.integer("pp_idx", info.pp_idx);
  context.out.part("pp_comm: members and order");
  record_tensor(context.out, "pp_comm: world ranks in communicator order", members(info.pp_comm));
  context.out.part("stage_comm: members and order");
  record_tensor(context.out, "stage_comm: world ranks in communicator order",
                members(info.stage_comm));
}

// --- 8.5: the executor ------------------------------------------------------------------------

// The schedules the executor is given: the grader's own, so that a wrong 8.3 costs 8.3 only.
std::vector<PipeStep> reference_gpipe(int m) {
  std::vector<PipeStep> steps;
  for (int mb = 0; mb < m; ++mb) steps.push_back({PipeOp::Forward, mb});
  for (int mb = 0; mb < m; ++mb) steps.push_back({PipeOp::Backward, mb});
  return steps;
}

std::vector<PipeStep> reference_one_f_one_b(int s, int p, int m) {
  std::vector<PipeStep> steps;
  const int warmup = std::min(p - s - 1, m);
  int forward = 0, backward = 0;
  while (forward < warmup) steps.push_back({PipeOp::Forward, forward++});
  while (forward < m) {
    steps.push_back({PipeOp::Forward, forward++});
    steps.push_back({PipeOp::Backward, backward++});
  }
  while (backward < m) steps.push_back({PipeOp::Backward, backward++});
  return steps;
}

// The grader's stage s of p: activations are (rows, width), value-tagged so that a misplaced
// tensor names its origin: forward multiplies by w_s = 1 + s/8 and adds s; backward multiplies
// the gradient by w_s. Inputs of micro-batch b: 1000 b + (i % 97). The last stage's loss
// gradient is its output. It records what it is asked to do and what it is handed, and checks
// every tensor against the serial step.
template <class T>
class GraderStage : public PipelineStage<T> {
 public:
  GraderStage(int stage, int stages, int microbatches, std::size_t rows, std::size_t width)
      : s_(stage), p_(stages), rows_(rows), width_(width), outputs_(microbatches) {}

  bool is_first() const override { return s_ == 0; }
  bool is_last() const override { return s_ == p_ - 1; }
  std::array<std::size_t, 2> input_shape(int) const override { return {rows_, width_}; }
  std::array<std::size_t, 2> output_shape(int) const override { return {rows_, width_}; }
  xt::xtensor<T, 2> input_microbatch(int mb) const override { return serial_input(mb, 0); }
  xt::xtensor<T, 2> forward(int mb, const xt::xtensor<T, 2>& input) override {
    calls.push_back({0, mb});
    wrong_inputs += !same(input, serial_input(mb, s_));
    outputs_.at(mb) = apply(input);
    return outputs_.at(mb);
  }
  xt::xtensor<T, 2> loss_grad(int mb) const override { return outputs_.at(mb); }
  xt::xtensor<T, 2> backward(int mb, const xt::xtensor<T, 2>& output_grad) override {
    calls.push_back({1, mb});
    wrong_grads += !same(output_grad, serial_grad(mb, s_));
    return output_grad * weight(s_);
  }

  std::vector<std::array<int, 2>> calls;  // (op, microbatch), op 0 = forward, 1 = backward
  int wrong_inputs = 0, wrong_grads = 0;

 private:
  static T weight(int s) { return T(1) + T(s) / T(8); }
  xt::xtensor<T, 2> apply_stage(const xt::xtensor<T, 2>& x, int s) const {
    return x * weight(s) + T(s);
  }
  xt::xtensor<T, 2> apply(const xt::xtensor<T, 2>& x) const { return apply_stage(x, s_); }
  // What stage `s` must be given in forward(mb): the micro-batch through stages 0 .. s - 1.
  xt::xtensor<T, 2> serial_input(int mb, int s) const {
    xt::xtensor<T, 2> x({rows_, width_});
    for (std::size_t i = 0; i < x.size(); ++i)
      x.data()[i] = T(1000 * mb + static_cast<int>(i % 97));
    for (int k = 0; k < s; ++k) x = apply_stage(x, k);
    return x;
  }
  // What stage `s` must be given in backward(mb): the last output through the weights of
  // stages p - 1 .. s + 1.
  xt::xtensor<T, 2> serial_grad(int mb, int s) const {
    xt::xtensor<T, 2> g = serial_input(mb, p_);
    for (int k = p_ - 1; k > s; --k) g = g * weight(k);
    return g;
  }
  static bool same(const xt::xtensor<T, 2>& a, const xt::xtensor<T, 2>& b) {
    return a.shape() == b.shape() && std::equal(a.begin(), a.end(), b.begin());
  }

  int s_, p_;
  std::size_t rows_, width_;
  std::vector<xt::xtensor<T, 2>> outputs_;
};

template <class T>
void pipeline_case(CheckContext& context) {
  const TestCase& test = context.test;
  const int p = test.p, m = test.m, s = context.world.Get_rank();
  const std::size_t rows = 4, width = test.width ? test.width : 3;
  context.out.note(std::to_string(p) + " stages, " + std::to_string(m) + " micro-batches, " +
                   test.schedule + ", activations (" + std::to_string(rows) + ", " +
                   std::to_string(width) + ") of " + test.type + " (" +
                   std::to_string(rows * width * sizeof(T)) + " bytes)");
  GraderStage<T> stage(s, p, m, rows, width);
  const std::vector<PipeStep> schedule =
      test.schedule == "gpipe" ? reference_gpipe(m) : reference_one_f_one_b(s, p, m);
  moved_through(context, context.world, [&] {
    run_pipeline_schedule<T>(stage, schedule, context.world);
    return 0;
  });
  context.out.part("the order of forward and backward calls");
  record_tensor(context.out, std::string("the stage's calls (") + kStepRows + ")",
                as_rows(stage.calls));
  context.out.part("activations received");
  context.out.integer("forward calls given another input than the serial step's",
                      stage.wrong_inputs);
  context.out.part("gradients received");
  context.out.integer("backward calls given another gradient than the serial step's",
                      stage.wrong_grads);
}

void check_run_pipeline_schedule(CheckContext& context) {
  run_typed(context, pipeline_case<float>, pipeline_case<double>);
}

}  // namespace

DTK_GRADE_CHECK(check_partition_layers,
                {"partition_layers",
                 CaseKind::pipeline,
                 /*collective=*/false,
                 /*typed=*/false,
                 {"a valid partition", "the largest stage as small as possible"}});
DTK_GRADE_CHECK(
    check_gpipe_clock_cycles,
    {"gpipe_clock_cycles", CaseKind::pipeline, /*collective=*/false, /*typed=*/false, {}});
DTK_GRADE_CHECK(check_gpipe_schedule,
                {"gpipe_schedule", CaseKind::pipeline, /*collective=*/false, /*typed=*/false, {}});
DTK_GRADE_CHECK(
    check_one_f_one_b_schedule,
    {"one_f_one_b_schedule", CaseKind::pipeline, /*collective=*/false, /*typed=*/false, {}});
DTK_GRADE_CHECK(check_get_pipeline_info,
                {"get_pipeline_info",
                 CaseKind::layout,
                 /*collective=*/true,
                 /*typed=*/false,
                 {"pp_idx", "pp_comm: members and order", "stage_comm: members and order"}});
DTK_GRADE_CHECK(check_run_pipeline_schedule, {"run_pipeline_schedule",
                                              CaseKind::pipeline,
                                              /*collective=*/true,
                                              /*typed=*/true,
                                              {"the order of forward and backward calls",
                                               "activations received", "gradients received"}});

}  // namespace dtk::grade
