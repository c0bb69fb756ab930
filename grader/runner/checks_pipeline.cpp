// Part 8 (assignment 2): pipeline parallelism. Partitions are judged by what they achieve (any
// optimal partition is right), the clock and 1F1B exactly, GPipe by the rules of its order, the
// grid like get_info, and the executor by driving a test stage of the grader's own through it on
// p ranks: every call's order, and every activation and gradient it is handed (of a shape that
// differs at every stage boundary), recorded for the grader to compare with what the reference's
// stages were handed (the serial step's). No stage knows what it should be handed.
#include <algorithm>
#include <numeric>

#include <xtensor/xview.hpp>

#include "check_context.hpp"
#include "keys.hpp"
#include "received_tensors.hpp"

namespace dtk::grade {

namespace {

// Layer costs: the case's profile fixes their structure, the seed draws the values (whole
// numbers, so that stage sums are exact and the optimal largest stage is one number), so that a
// partition is judged alike at every grading.
//   random          every layer 1 to 99
//   heavy-ends      the same plus 200 on the first and 150 on the last layer (an embedding and a
//                   head)
//   dominant-first  the first layer heavier than all the others together: the largest stage is
//                   that layer whatever the cut, so many cuts tie for the optimum, among them
//                   cuts with an empty stage
//   zero-layers     every third layer 1 to 99, the others 0 (costs may be 0): ties again
std::vector<double> layer_costs(CheckContext& context) {
  Rng rng = context.rng("layer costs");
  const std::string& profile = context.test.costs;
  std::vector<double> costs(context.test.layers);
  for (std::size_t i = 0; i < costs.size(); ++i) {
    const bool zero = profile == "zero-layers" && i % 3 != 2;
    costs[i] = zero ? 0 : rng.uniform_int(1, 99);
  }
  if (profile == "heavy-ends") {
    costs.front() += 200;
    costs.back() += 150;
  } else if (profile == "dominant-first") {
    costs.front() += std::accumulate(costs.begin() + 1, costs.end(), 0.0);
  }
  return costs;
}

std::string stages_text(int p) { return std::to_string(p) + (p == 1 ? " stage" : " stages"); }

std::string listed(const std::vector<double>& values) {
  std::string text;
  for (double v : values) text += (text.empty() ? "" : ", ") + std::to_string(static_cast<long>(v));
  return text;
}

void check_partition_layers(CheckContext& context) {
  const std::vector<double> costs = layer_costs(context);
  const int p = context.test.p, n = static_cast<int>(costs.size());
  context.out.note(std::to_string(n) + " layers of costs {" + listed(costs) + "} into " +
                   stages_text(p));
  const std::vector<int> b = context.call([&] { return partition_layers(costs, p); });
  // Valid: p + 1 boundaries from 0 to n, increasing (every stage holds a layer). The count of
  // empty or backward stages makes the usual mistake plain in the feedback.
  const bool framed = static_cast<int>(b.size()) == p + 1 && b.front() == 0 && b.back() == n;
  int empty = 0, backward = 0;
  for (std::size_t s = 0; framed && s + 1 < b.size(); ++s) {
    empty += b[s] == b[s + 1];
    backward += b[s] > b[s + 1];
  }
  // The largest stage is judged on its own: a partition with empty stages (which never lower
  // the optimum) loses the item above, not this one.
  double largest = -1;
  for (std::size_t s = 0; framed && backward == 0 && s + 1 < b.size(); ++s)
    largest =
        std::max(largest, std::accumulate(costs.begin() + b[s], costs.begin() + b[s + 1], 0.0));
  context.out.part("a valid partition");
  context.out.integer("p + 1 boundaries, the first 0 and the last n (1 = yes)", framed ? 1 : 0);
  context.out.integer("empty stages (b[s] == b[s + 1])", empty);
  context.out.integer("stages that end before they begin (b[s] > b[s + 1])", backward);
  context.out.part("the largest stage as small as possible");
  context.out.real("the largest stage's cost", largest);
}

void check_gpipe_clock_cycles(CheckContext& context) {
  const int m = context.test.m, p = context.test.p;
  context.out.note(std::to_string(m) + " micro-batches on " + stages_text(p));
  const auto ticks = context.call([&] { return gpipe_clock_cycles(m, p); });
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

// A schedule as a record of dtype "step" (the judge prints it "F0 F1 B0 ...", as the public
// tests do): forward(mb) is mb, backward(mb) is -1 - mb.
std::vector<double> step_codes(const std::vector<PipeStep>& steps) {
  std::vector<double> codes;
  for (const PipeStep& step : steps)
    codes.push_back(step.op == PipeOp::Forward ? step.microbatch : -1 - step.microbatch);
  return codes;
}

void record_steps(RecordWriter& out, const std::string& name, const std::vector<PipeStep>& steps) {
  out.tensor(name, "step", {steps.size()}, step_codes(steps));
}

void record_steps_mistake(Judgement& judgement, const std::string& name, const std::string& mistake,
                          const std::vector<PipeStep>& steps) {
  judgement.mistake(name, mistake, "step", {steps.size()}, step_codes(steps));
}

// The schedules the executor is given (the grader's own, so that a wrong 8.3 costs 8.3 only),
// and the known mistakes of 8.3.
std::vector<PipeStep> gpipe_order(int m) {
  std::vector<PipeStep> steps;
  for (int mb = 0; mb < m; ++mb) steps.push_back({PipeOp::Forward, mb});
  for (int mb = 0; mb < m; ++mb) steps.push_back({PipeOp::Backward, mb});
  return steps;
}

// 1F1B with `warm_up` forwards first (the right number is min(p - s - 1, m)).
std::vector<PipeStep> one_f_one_b_order(int m, int warm_up) {
  std::vector<PipeStep> steps;
  int forward = 0, backward = 0;
  while (forward < warm_up) steps.push_back({PipeOp::Forward, forward++});
  while (forward < m) {
    steps.push_back({PipeOp::Forward, forward++});
    steps.push_back({PipeOp::Backward, backward++});
  }
  while (backward < m) steps.push_back({PipeOp::Backward, backward++});
  return steps;
}

std::vector<PipeStep> reference_one_f_one_b(int s, int p, int m) {
  return one_f_one_b_order(m, std::min(p - s - 1, m));
}

void check_one_f_one_b_schedule(CheckContext& context) {
  const int m = context.test.m, p = context.test.p;
  context.out.note(std::to_string(m) + " micro-batches on " + stages_text(p) +
                   "; F3 is the forward of micro-batch 3, B3 its backward");
  for (int s = 0; s < p; ++s) {
    const std::string name = "stage " + std::to_string(s);
    record_steps(context.out, name, context.call([&] { return one_f_one_b_schedule(s, p, m); }));
    context.judge([&](Judgement& judgement) {
      record_steps_mistake(judgement, name,
                           "a warm-up one forward too long (min(p - s, m) forwards instead of "
                           "min(p - s - 1, m))",
                           one_f_one_b_order(m, std::min(p - s, m)));
      record_steps_mistake(judgement, name, "GPipe's order (every forward first)", gpipe_order(m));
    });
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
  context.out.note(std::to_string(m) + " micro-batches on " + stages_text(p) +
                   ": each forward once, then each backward once, in micro-batch order");
  for (int s = 0; s < p; ++s) {
    context.out.integer(
        "stage " + std::to_string(s) + ": a valid GPipe order (1 = yes)",
        gpipe_valid(context.call([&] { return gpipe_schedule(s, p, m); }), m) ? 1 : 0);
  }
}

// The (mp, dp, pp) grid, with Megatron-LM's order: model-parallel fastest, pipeline slowest.
void check_get_pipeline_info(CheckContext& context) {
  const int mp = context.test.mp, dp = context.test.dp, pp = context.test.pp;
  const int rank = context.rank();
  context.out.note(
      "mp=" + std::to_string(mp) + " dp=" + std::to_string(dp) + " pp=" + std::to_string(pp) +
      " on " + std::to_string(mp * dp * pp) +
      " ranks; mp_idx = rank % mp, dp_idx = (rank / mp) % dp, pp_idx = rank / (mp dp)");
  PipelineInfo info =
      context.call([&] { return get_pipeline_info(context.world, rank, mp, dp, pp); });
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

// The grader's stage s of p. The activation entering stage s of micro-batch mb is (rows +
// mb % 2, width + s): its shape differs at every boundary and between neighbouring
// micro-batches, so a buffer sized by the wrong shape (a gradient received into input_shape,
// micro-batch 0's shape reused) fails. Forward multiplies by w_s = 1 + s/8, adds s and appends
// a column of s; backward drops the gradient's last column and multiplies by w_s. The first
// stage's micro-batches are drawn from its key; the last stage's loss gradient is its output.
// It records what it is asked to do and what it is handed.
template <class T>
class GraderStage : public PipelineStage<T> {
 public:
  GraderStage(Rng rng, int stage, int stages, int microbatches, std::size_t rows, std::size_t width)
      : s_(stage), p_(stages), rows_(rows), width_(width), outputs_(microbatches) {
    if (s_ != 0) return;
    for (int mb = 0; mb < microbatches; ++mb) {
      const auto [r, c] = shape(mb, 0);
      inputs_.push_back(random_matrix<T>(rng, r, c));
    }
  }

  bool is_first() const override { return s_ == 0; }
  bool is_last() const override { return s_ == p_ - 1; }
  std::array<std::size_t, 2> input_shape(int mb) const override { return shape(mb, s_); }
  std::array<std::size_t, 2> output_shape(int mb) const override { return shape(mb, s_ + 1); }
  xt::xtensor<T, 2> input_microbatch(int mb) const override {
    if (s_ != 0) throw std::logic_error("input_microbatch is the first stage's only");
    return inputs_.at(mb);
  }
  xt::xtensor<T, 2> forward(int mb, const xt::xtensor<T, 2>& input) override {
    calls.push_back({PipeOp::Forward, mb});
    inputs_received.push_back({mb, input});
    outputs_.at(mb) = apply_stage(input, s_);
    return outputs_.at(mb);
  }
  xt::xtensor<T, 2> loss_grad(int mb) const override { return outputs_.at(mb); }
  xt::xtensor<T, 2> backward(int mb, const xt::xtensor<T, 2>& output_grad) override {
    calls.push_back({PipeOp::Backward, mb});
    grads_received.push_back({mb, output_grad});
    return input_grad(output_grad, s_);
  }

  std::vector<PipeStep> calls;
  std::vector<std::pair<int, xt::xtensor<T, 2>>> inputs_received, grads_received;

 private:
  static T weight(int s) { return T(1) + T(s) / T(8); }
  // The activation entering stage s (leaving stage s - 1).
  std::array<std::size_t, 2> shape(int mb, int s) const {
    return {rows_ + mb % 2, width_ + static_cast<std::size_t>(s)};
  }
  static xt::xtensor<T, 2> apply_stage(const xt::xtensor<T, 2>& x, int s) {
    xt::xtensor<T, 2> y = xt::xtensor<T, 2>::from_shape({x.shape(0), x.shape(1) + 1});
    xt::view(y, xt::all(), xt::range(0, x.shape(1))) = x * weight(s) + T(s);
    xt::view(y, xt::all(), x.shape(1)) = T(s);
    return y;
  }
  static xt::xtensor<T, 2> input_grad(const xt::xtensor<T, 2>& g, int s) {
    return xt::view(g, xt::all(), xt::range(0, g.shape(1) - 1)) * weight(s);
  }

  int s_, p_;
  std::size_t rows_, width_;
  std::vector<xt::xtensor<T, 2>> inputs_, outputs_;
};

template <class T>
void pipeline_case(CheckContext& context) {
  const TestCase& test = context.test;
  const int p = test.p, m = test.m, s = context.rank();
  const std::size_t rows = 4, width = test.width ? test.width : 3;
  context.out.note(stages_text(p) + ", " + std::to_string(m) + " micro-batches, " + test.schedule +
                   ", " + test.type + "; the activation of micro-batch mb into stage s is (" +
                   std::to_string(rows) + " + mb % 2, " + std::to_string(width) +
                   " + s), so stage s's input_shape and output_shape differ (" +
                   std::to_string(rows * width * sizeof(T)) + " bytes into stage 0)");
  GraderStage<T> stage(context.rng("micro-batches"), s, p, m, rows, width);
  const std::vector<PipeStep> schedule =
      test.schedule == "gpipe" ? gpipe_order(m) : reference_one_f_one_b(s, p, m);
  context.call([&] { run_pipeline_schedule<T>(stage, schedule, context.world); });
  context.out.part("the order of forward and backward calls");
  record_steps(context.out, "the stage's calls", stage.calls);
  context.out.part("activations received");
  record_received(context, "forward's input", stage.inputs_received);
  context.out.part("gradients received");
  record_received(context, "backward's output_grad", stage.grads_received);
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
