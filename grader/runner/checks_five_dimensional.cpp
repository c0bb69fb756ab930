// Part 14 (assignment 4): the interleaved pipeline. The schedule is judged exactly, rank by rank,
// with its known mistakes named; the executor by driving chunks of the grader's own through it
// on p ranks, on the grader's own schedules (so that a wrong 14.1 costs 14.1 only): every call's
// order, and every activation and gradient each chunk is handed (of a shape that differs at
// every chunk boundary), recorded for the grader to compare with what the reference's chunks
// were handed. No chunk knows what it should be handed.
#include <algorithm>

#include <xtensor/xview.hpp>

#include "check_context.hpp"
#include "keys.hpp"
#include "received_tensors.hpp"

namespace dtk::grade {

namespace {

std::string ranks_text(int p) { return std::to_string(p) + (p == 1 ? " rank" : " ranks"); }

// A chunked schedule as a record of dtype "chunk_step" (the judge prints it "F0.1 B2.0 ...", as
// the public tests do).
std::vector<double> chunk_step_codes(const std::vector<ChunkStep>& steps) {
  std::vector<double> codes;
  for (const ChunkStep& step : steps) {
    const double code = double(step.microbatch) * kChunkStepBase + step.chunk;
    codes.push_back(step.op == PipeOp::Forward ? code : -1 - code);
  }
  return codes;
}

// Megatron-LM's interleaved order with `warm_up` forwards first, the backwards' chunks reversed
// or not: the grader's own schedule, and its known mistakes.
std::vector<ChunkStep> interleaved_order(int p, int v, int m, int warm_up, bool reversed = true) {
  const int total = m * v;
  const auto step = [&](PipeOp op, int k) {
    const int group = k / (p * v), within = k % (p * v), chunk = within / p;
    const bool reverse = op == PipeOp::Backward && reversed;
    return ChunkStep{op, group * p + within % p, reverse ? v - 1 - chunk : chunk};
  };
  warm_up = std::min(warm_up, total);
  std::vector<ChunkStep> steps;
  int forward = 0, backward = 0;
  while (forward < warm_up) steps.push_back(step(PipeOp::Forward, forward++));
  while (forward < total) {
    steps.push_back(step(PipeOp::Forward, forward++));
    steps.push_back(step(PipeOp::Backward, backward++));
  }
  while (backward < total) steps.push_back(step(PipeOp::Backward, backward++));
  return steps;
}

int megatron_warm_up(int r, int p, int v) { return (p - r - 1) * 2 + (v - 1) * p; }

void check_interleaved_schedule(CheckContext& context) {
  const TestCase& test = context.test;
  const int p = test.p, v = static_cast<int>(test.value("v", 1)),
            m = static_cast<int>(test.value("m", p));
  if (v < 1 || m < 1 || m % p != 0) {
    const std::string call = "interleaved_schedule(0, " + std::to_string(p) + ", " +
                             std::to_string(v) + ", " + std::to_string(m) + ")";
    context.out.note(call + ": arguments it must refuse");
    record_refusal(context, call, [&] { interleaved_schedule(0, p, v, m); });
    return;
  }
  context.out.note(std::to_string(m) + " micro-batches on " + ranks_text(p) + " of " +
                   std::to_string(v) + (v == 1 ? " chunk" : " chunks") +
                   " each; Fm.c is the forward of micro-batch m through the rank's chunk c, Bm.c "
                   "its backward");
  for (int r = 0; r < p; ++r) {
    const std::string name = "rank " + std::to_string(r);
    const std::vector<ChunkStep> steps =
        context.call([&] { return interleaved_schedule(r, p, v, m); });
    context.out.tensor(name, "chunk_step", {steps.size()}, chunk_step_codes(steps));
    context.judge([&](Judgement& judgement) {
      const auto mistake = [&](const std::string& what, const std::vector<ChunkStep>& order) {
        judgement.mistake(name, what, "chunk_step", {order.size()}, chunk_step_codes(order));
      };
      const int warm_up = megatron_warm_up(r, p, v);
      mistake("a warm-up one forward too short ((p - rank - 1) * 2 + (V - 1) * p - 1 forwards)",
              interleaved_order(p, v, m, warm_up - 1));
      mistake("Part 8's warm-up of p - rank - 1 forwards", interleaved_order(p, v, m, p - r - 1));
      mistake("the backwards' chunks in the forwards' order (chunk 0 first, not V - 1)",
              interleaved_order(p, v, m, warm_up, /*reversed=*/false));
    });
  }
}

// --- 14.2: the executor -----------------------------------------------------------------------

// The grader's model chunk c of C. The activation entering chunk c of micro-batch mb is (rows +
// mb % 2, width + c): its shape differs at every boundary and between neighbouring micro-batches.
// Forward multiplies by w_c = 1 + c/8, adds c and appends a column of c; backward drops the
// gradient's last column and multiplies by w_c. Chunk 0's micro-batches are drawn from this
// rank's key; the last chunk's loss gradient is its output. It records what it is asked to do
// and what it is handed.
template <class T>
class GraderChunk : public PipelineStage<T> {
 public:
  GraderChunk(Rng rng, int chunk, int chunks, int microbatches, std::size_t rows, std::size_t width)
      : c_(chunk), chunks_(chunks), rows_(rows), width_(width), outputs_(microbatches) {
    if (c_ != 0) return;
    for (int mb = 0; mb < microbatches; ++mb) {
      const auto [r, cols] = shape(mb, 0);
      inputs_.push_back(random_matrix<T>(rng, r, cols));
    }
  }

  bool is_first() const override { return c_ == 0; }
  bool is_last() const override { return c_ == chunks_ - 1; }
  std::array<std::size_t, 2> input_shape(int mb) const override { return shape(mb, c_); }
  std::array<std::size_t, 2> output_shape(int mb) const override { return shape(mb, c_ + 1); }
  xt::xtensor<T, 2> input_microbatch(int mb) const override {
    if (c_ != 0) throw std::logic_error("input_microbatch is the first chunk's only");
    return inputs_.at(mb);
  }
  xt::xtensor<T, 2> forward(int mb, const xt::xtensor<T, 2>& input) override {
    calls.push_back({PipeOp::Forward, mb, 0});
    inputs_received.push_back({mb, input});
    outputs_.at(mb) = apply_chunk(input, c_);
    return outputs_.at(mb);
  }
  xt::xtensor<T, 2> loss_grad(int mb) const override { return outputs_.at(mb); }
  xt::xtensor<T, 2> backward(int mb, const xt::xtensor<T, 2>& output_grad) override {
    calls.push_back({PipeOp::Backward, mb, 0});
    grads_received.push_back({mb, output_grad});
    return input_grad(output_grad, c_);
  }

  std::vector<ChunkStep> calls;  // chunk 0 always: the calls of this chunk alone
  std::vector<std::pair<int, xt::xtensor<T, 2>>> inputs_received, grads_received;

 private:
  static T weight(int c) { return T(1) + T(c) / T(8); }
  std::array<std::size_t, 2> shape(int mb, int c) const {
    return {rows_ + mb % 2, width_ + static_cast<std::size_t>(c)};
  }
  static xt::xtensor<T, 2> apply_chunk(const xt::xtensor<T, 2>& x, int c) {
    xt::xtensor<T, 2> y = xt::xtensor<T, 2>::from_shape({x.shape(0), x.shape(1) + 1});
    xt::view(y, xt::all(), xt::range(0, x.shape(1))) = x * weight(c) + T(c);
    xt::view(y, xt::all(), x.shape(1)) = T(c);
    return y;
  }
  static xt::xtensor<T, 2> input_grad(const xt::xtensor<T, 2>& g, int c) {
    return xt::view(g, xt::all(), xt::range(0, g.shape(1) - 1)) * weight(c);
  }

  int c_, chunks_;
  std::size_t rows_, width_;
  std::vector<xt::xtensor<T, 2>> inputs_, outputs_;
};

// The grader's schedule for rank r: interleaved, or (the case's word "gpipe") every forward,
// chunk after chunk, then every backward, the chunks in reverse; with "reversed" too, the odd
// ranks take each chunk's micro-batches last to first. That is as valid, but messages then
// arrive in another order than the receiver takes them: matching them by their order fails.
std::vector<ChunkStep> grader_schedule(const TestCase& test, int r, int p, int v, int m) {
  if (!test.has_word("gpipe")) return interleaved_order(p, v, m, megatron_warm_up(r, p, v));
  const bool reversed = test.has_word("reversed") && r % 2 == 1;
  std::vector<ChunkStep> steps;
  const auto microbatch = [&](int i) { return reversed ? m - 1 - i : i; };
  for (int chunk = 0; chunk < v; ++chunk)
    for (int i = 0; i < m; ++i) steps.push_back({PipeOp::Forward, microbatch(i), chunk});
  for (int chunk = v - 1; chunk >= 0; --chunk)
    for (int i = 0; i < m; ++i) steps.push_back({PipeOp::Backward, microbatch(i), chunk});
  return steps;
}

template <class T>
void interleaved_case(CheckContext& context) {
  const TestCase& test = context.test;
  const int p = test.p, r = context.rank(), v = static_cast<int>(test.value("v", 2)),
            m = static_cast<int>(test.value("m", p));
  const std::size_t rows = 4, width = static_cast<std::size_t>(test.value("width", 3));
  context.out.note(ranks_text(p) + " of " + std::to_string(v) + (v == 1 ? " chunk" : " chunks") +
                   " (model chunk c on rank " + "c % " + std::to_string(p) + "), " +
                   std::to_string(m) + " micro-batches, " +
                   (!test.has_word("gpipe") ? "interleaved"
                    : test.has_word("reversed")
                        ? "every forward then every backward, the odd ranks taking the "
                          "micro-batches last to first"
                        : "every forward then every backward") +
                   ", " + test.type + "; the activation of micro-batch mb into model chunk c is (" +
                   std::to_string(rows) + " + mb % 2, " + std::to_string(width) +
                   " + c), so a chunk's input_shape and output_shape differ (" +
                   std::to_string(rows * width * sizeof(T)) + " bytes into chunk 0)");
  std::vector<std::unique_ptr<GraderChunk<T>>> chunks;
  std::vector<PipelineStage<T>*> handed;
  for (int c = 0; c < v; ++c) {
    chunks.push_back(std::make_unique<GraderChunk<T>>(context.rng("micro-batches"), c * p + r,
                                                      p * v, m, rows, width));
    handed.push_back(chunks.back().get());
  }
  const std::vector<ChunkStep> schedule = grader_schedule(test, r, p, v, m);
  context.call([&] { run_interleaved_schedule<T>(handed, schedule, context.world); });
  for (int c = 0; c < v; ++c) {
    const std::string chunk =
        "chunk " + std::to_string(c) + " (model chunk " + std::to_string(c * p + r) + ")";
    std::vector<ChunkStep> calls = chunks[c]->calls;
    for (ChunkStep& call : calls) call.chunk = c;
    context.out.part("the order of forward and backward calls");
    context.out.tensor(chunk + "'s calls", "chunk_step", {calls.size()}, chunk_step_codes(calls));
    context.out.part("activations received");
    record_received(context, chunk + ": forward's input", chunks[c]->inputs_received);
    context.out.part("gradients received");
    record_received(context, chunk + ": backward's output_grad", chunks[c]->grads_received);
  }
}

void check_run_interleaved_schedule(CheckContext& context) {
  run_typed(context, interleaved_case<float>, interleaved_case<double>);
}

}  // namespace

DTK_GRADE_CHECK(check_interleaved_schedule, {"interleaved_schedule",
                                             CaseKind::fields,
                                             /*collective=*/false,
                                             /*typed=*/false,
                                             {},
                                             /*reduces=*/false,
                                             /*timed_against=*/"",
                                             /*case_words=*/{"v", "m"}});
DTK_GRADE_CHECK(check_run_interleaved_schedule,
                {"run_interleaved_schedule",
                 CaseKind::fields,
                 /*collective=*/true,
                 /*typed=*/true,
                 {"the order of forward and backward calls", "activations received",
                  "gradients received"},
                 /*reduces=*/false,
                 /*timed_against=*/"",
                 /*case_words=*/{"v", "m", "width", "gpipe", "reversed"}});

}  // namespace dtk::grade
