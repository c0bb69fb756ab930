// Part 8: pipeline parallelism.
// Declared, with the exact contract of every function, in include/dtk/pipeline.hpp.
// In run_pipeline_schedule only pp_comm.Send, pp_comm.Recv and pp_comm.Sendrecv may move data.
#include <dtk/pipeline.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dtk {

namespace {

void require(bool ok, const std::string& function, const std::string& what) {
  if (!ok) throw std::invalid_argument(function + ": " + what);
}

void require_at_least_one(int value, const std::string& function, const std::string& name) {
  require(value >= 1, function, name + " must be >= 1, got " + std::to_string(value));
}

void require_schedule_arguments(int stage, int num_stages, int num_microbatches,
                                const std::string& function) {
  require_at_least_one(num_stages, function, "num_stages");
  require_at_least_one(num_microbatches, function, "num_microbatches");
  require(0 <= stage && stage < num_stages, function,
          "stage must be in 0 .. num_stages - 1 = " + std::to_string(num_stages - 1) + ", got " +
              std::to_string(stage));
}

using Shape = std::array<std::size_t, 2>;

std::string shape_text(const Shape& shape) {
  return "(" + std::to_string(shape[0]) + ", " + std::to_string(shape[1]) + ")";
}

std::string step_text(const PipeStep& step) {
  return (step.op == PipeOp::Forward ? "forward(" : "backward(") + std::to_string(step.microbatch) +
         ")";
}

// Which neighbour (a rank of pp_comm) sends a step its input: a forward's activation comes
// from the previous stage, a backward's gradient from the next one. None when the stage makes
// the input itself: the first stage's data, the last stage's loss gradient.
template <class T>
std::optional<int> input_source(const PipelineStage<T>& stage, const PipeStep& step, int pp_idx) {
  if (step.op == PipeOp::Forward) {
    return stage.is_first() ? std::nullopt : std::optional<int>(pp_idx - 1);
  }
  return stage.is_last() ? std::nullopt : std::optional<int>(pp_idx + 1);
}

// Which neighbour a step's result goes to: activations flow down the pipeline, gradients up.
template <class T>
std::optional<int> result_destination(const PipelineStage<T>& stage, const PipeStep& step,
                                      int pp_idx) {
  if (step.op == PipeOp::Forward) {
    return stage.is_last() ? std::nullopt : std::optional<int>(pp_idx + 1);
  }
  return stage.is_first() ? std::nullopt : std::optional<int>(pp_idx - 1);
}

// A forward takes an activation of the stage's input shape and makes one of its output shape;
// a backward takes a gradient of the output shape and makes one of the input shape.
template <class T>
Shape input_shape_of(const PipelineStage<T>& stage, const PipeStep& step) {
  return step.op == PipeOp::Forward ? stage.input_shape(step.microbatch)
                                    : stage.output_shape(step.microbatch);
}

template <class T>
Shape result_shape_of(const PipelineStage<T>& stage, const PipeStep& step) {
  return step.op == PipeOp::Forward ? stage.output_shape(step.microbatch)
                                    : stage.input_shape(step.microbatch);
}

// A step's input when it does not come from a neighbour.
template <class T>
xt::xtensor<T, 2> local_input(const PipelineStage<T>& stage, const PipeStep& step) {
  return step.op == PipeOp::Forward ? stage.input_microbatch(step.microbatch)
                                    : stage.loss_grad(step.microbatch);
}

template <class T>
xt::xtensor<T, 2> run_step(PipelineStage<T>& stage, const PipeStep& step,
                           const xt::xtensor<T, 2>& input) {
  return step.op == PipeOp::Forward ? stage.forward(step.microbatch, input)
                                    : stage.backward(step.microbatch, input);
}

// A result of the wrong shape would surface on the neighbour as a Recv of the wrong size;
// stopping here names the step that made it.
template <class T>
void require_result_shape(const PipelineStage<T>& stage, const PipeStep& step,
                          const xt::xtensor<T, 2>& result) {
  const Shape expected = result_shape_of(stage, step);
  const Shape actual = {result.shape(0), result.shape(1)};
  require(actual == expected, "run_pipeline_schedule",
          step_text(step) + " returned a " + shape_text(actual) + " tensor, but the stage's " +
              (step.op == PipeOp::Forward ? "output_shape(" : "input_shape(") +
              std::to_string(step.microbatch) + ") is " + shape_text(expected));
}

}  // namespace

// ----------------------------------- 8.1 --------------------------------------------------------

std::vector<int> partition_layers(const std::vector<double>& layer_costs, int num_stages) {
  const int n = static_cast<int>(layer_costs.size());
  require(1 <= num_stages && num_stages <= n, "partition_layers",
          "num_stages must be between 1 and the number of layers (" + std::to_string(n) +
              "), got " + std::to_string(num_stages));
  for (int i = 0; i < n; ++i) {
    require(std::isfinite(layer_costs[i]) && layer_costs[i] >= 0, "partition_layers",
            "layer_costs[" + std::to_string(i) + "] is " + std::to_string(layer_costs[i]) +
                "; every cost must be finite and >= 0");
  }

  // best[k][i]: the smallest largest-stage cost that splits layers [0, i) into k stages;
  // last_start[k][i]: where the last of those k stages starts. A stage's cost is summed left to
  // right, exactly as anyone checking the answer sums it, so comparisons are exact for doubles.
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(num_stages + 1, std::vector<double>(n + 1, kInfinity));
  std::vector<std::vector<int>> last_start(num_stages + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= num_stages; ++k) {
    // The last stage is [j, i); the k - 1 stages before it need at least k - 1 layers.
    for (int j = k - 1; j < n; ++j) {
      if (best[k - 1][j] == kInfinity) continue;
      double stage_cost = 0;
      for (int i = j + 1; i <= n; ++i) {
        stage_cost += layer_costs[i - 1];
        const double largest = std::max(best[k - 1][j], stage_cost);
        if (largest < best[k][i]) {
          best[k][i] = largest;
          last_start[k][i] = j;
        }
      }
    }
  }

  std::vector<int> boundaries(num_stages + 1);
  boundaries[num_stages] = n;
  for (int k = num_stages; k >= 1; --k) boundaries[k - 1] = last_start[k][boundaries[k]];
  return boundaries;
}

// ----------------------------------- 8.2 --------------------------------------------------------

std::vector<std::vector<std::pair<int, int>>> gpipe_clock_cycles(int num_microbatches,
                                                                 int num_stages) {
  require_at_least_one(num_microbatches, "gpipe_clock_cycles", "num_microbatches");
  require_at_least_one(num_stages, "gpipe_clock_cycles", "num_stages");
  std::vector<std::vector<std::pair<int, int>>> ticks(num_microbatches + num_stages - 1);
  for (int k = 0; k < static_cast<int>(ticks.size()); ++k) {
    // Micro-batch i runs on stage k - i, which must be one of the stages 0 .. num_stages - 1.
    const int first = std::max(0, k - num_stages + 1);
    const int last = std::min(k, num_microbatches - 1);
    for (int i = first; i <= last; ++i) ticks[k].emplace_back(i, k - i);
  }
  return ticks;
}

// ----------------------------------- 8.3 --------------------------------------------------------

std::vector<PipeStep> gpipe_schedule(int stage, int num_stages, int num_microbatches) {
  require_schedule_arguments(stage, num_stages, num_microbatches, "gpipe_schedule");
  std::vector<PipeStep> steps;
  for (int mb = 0; mb < num_microbatches; ++mb) steps.push_back({PipeOp::Forward, mb});
  for (int mb = 0; mb < num_microbatches; ++mb) steps.push_back({PipeOp::Backward, mb});
  return steps;
}

std::vector<PipeStep> one_f_one_b_schedule(int stage, int num_stages, int num_microbatches) {
  require_schedule_arguments(stage, num_stages, num_microbatches, "one_f_one_b_schedule");
  // Stage s must wait num_stages - s - 1 forwards before the first gradient comes back from
  // the last stage: it fills that time with forwards of later micro-batches.
  const int warm_up = std::min(num_stages - stage - 1, num_microbatches);
  std::vector<PipeStep> steps;
  int forwards = 0, backwards = 0;  // how many of each are scheduled so far
  while (forwards < warm_up) steps.push_back({PipeOp::Forward, forwards++});
  while (forwards < num_microbatches) {
    steps.push_back({PipeOp::Forward, forwards++});
    steps.push_back({PipeOp::Backward, backwards++});
  }
  while (backwards < num_microbatches) steps.push_back({PipeOp::Backward, backwards++});
  return steps;
}

// ----------------------------------- 8.4 --------------------------------------------------------

PipelineInfo get_pipeline_info(const Communicator& comm, int rank, int mp_size, int dp_size,
                               int pp_size) {
  require_at_least_one(mp_size, "get_pipeline_info", "mp_size");
  require_at_least_one(dp_size, "get_pipeline_info", "dp_size");
  require_at_least_one(pp_size, "get_pipeline_info", "pp_size");
  require(mp_size * dp_size * pp_size == comm.Get_size(), "get_pipeline_info",
          "mp_size * dp_size * pp_size = " + std::to_string(mp_size * dp_size * pp_size) +
              " must equal the number of ranks, " + std::to_string(comm.Get_size()));
  // One stage is a whole mp_size x dp_size grid of consecutive ranks.
  const int stage_size = mp_size * dp_size;
  const int pp_idx = rank / stage_size;
  // rank % stage_size is this rank's place (mp_idx, dp_idx) inside its stage: the same place in
  // every stage makes one pipeline.
  Communicator pp_comm = comm.Split(/*color=*/rank % stage_size, /*key=*/pp_idx);
  Communicator stage_comm = comm.Split(/*color=*/pp_idx, /*key=*/rank);
  return PipelineInfo{pp_idx, pp_comm, stage_comm};
}

// ----------------------------------- 8.5 --------------------------------------------------------

template <class T>
void run_pipeline_schedule(PipelineStage<T>& stage, const std::vector<PipeStep>& schedule,
                           Communicator& pp_comm) {
  const int pp_idx = pp_comm.Get_rank();
  // Each direction between two neighbours carries one kind of message, in schedule order
  // (activations down the pipeline, gradients up), so messages match by their order alone and
  // need no tag.
  //
  // The input of the next step, when it arrived in the same Sendrecv that sent this step's
  // result.
  std::optional<xt::xtensor<T, 2>> received_early;
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    const PipeStep& step = schedule[i];
    xt::xtensor<T, 2> input;
    if (received_early) {
      input = std::move(*received_early);
      received_early.reset();
    } else if (const auto source = input_source(stage, step, pp_idx)) {
      input = xt::xtensor<T, 2>::from_shape(input_shape_of(stage, step));
      pp_comm.Recv(input, *source);
    } else {
      input = local_input(stage, step);
    }

    const xt::xtensor<T, 2> result = run_step(stage, step, input);
    const auto destination = result_destination(stage, step, pp_idx);
    if (!destination) continue;
    require_result_shape(stage, step, result);
    // If the next step's input comes from the neighbour this result goes to, that neighbour
    // may be sending to us right now (1F1B's steady state: our activation goes down while its
    // gradient comes up). Two blocking Sends towards each other wait forever once messages
    // pass MPI's eager limit; one Sendrecv on each side lets both messages through.
    const bool next_input_from_destination =
        i + 1 < schedule.size() && input_source(stage, schedule[i + 1], pp_idx) == destination;
    if (next_input_from_destination) {
      received_early = xt::xtensor<T, 2>::from_shape(input_shape_of(stage, schedule[i + 1]));
      pp_comm.Sendrecv(result, *destination, *received_early, *destination);
    } else {
      pp_comm.Send(result, *destination);
    }
  }
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests link against exactly these.
// -------------------------------------------------------------------------------------------
template void run_pipeline_schedule<float>(PipelineStage<float>&, const std::vector<PipeStep>&,
                                           Communicator&);
template void run_pipeline_schedule<double>(PipelineStage<double>&, const std::vector<PipeStep>&,
                                            Communicator&);

}  // namespace dtk
