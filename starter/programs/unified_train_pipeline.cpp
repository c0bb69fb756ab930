// unified_train, assignment 2: a deep MLP as a pipeline of pp_size stages, each stage data
// parallel over dp_size ranks with ZeRO (include/dtk/training/pipeline_trainer.hpp), your Part 7,
// 8 and 9 functions doing all the communication. Rank 0 prints progress, the test accuracy, and
// per rank: the pipeline's bubble beside its theory, the stashed activations beside the
// schedule's bound, and the model states beside your 9.1 model's prediction.
#include <dtk/training/cores.hpp>
#if DTK_WITH_REPLICAS_TRAINER
#include <dtk/mlp/tensor_parallel_split.hpp>
#endif

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "unified_train.hpp"

namespace dtk::unified_train {

namespace {

const char* schedule_name(Schedule schedule) {
  return schedule == Schedule::GPipe ? "GPipe" : "1F1B";
}

const char* optimizer_name(OptimizerKind kind) {
  return kind == OptimizerKind::Adam ? "Adam" : "SGD";
}

// Adam keeps m and v, 8 bytes per parameter in fp32; SGD keeps nothing.
double optimizer_bytes_per_parameter(OptimizerKind kind) {
  return kind == OptimizerKind::Adam ? 8 : 0;
}

// Your 9.1 model (mixed precision: 2-byte parameters and gradients, k bytes of optimizer states)
// for this fp32 run: 4-byte parameters and gradients and K bytes of states per parameter are
// twice the model with k = K / 2. None while 9.1 is still a stub: a pipeline trains before it.
std::optional<double> predicted_state_bytes(const PipelineTrainOptions& p,
                                            std::size_t stage_parameters) {
  try {
    return 2 * zero_memory_per_rank(double(stage_parameters), p.dp_size, p.zero_stage,
                                    optimizer_bytes_per_parameter(p.optimizer) / 2);
  } catch (const NotImplemented&) {
    return std::nullopt;
  }
}

// The prediction as a table column ("9.1 todo" without it) and in the report (null).
std::string predicted_text(const PipelineTrainOptions& p, std::size_t stage_parameters) {
  const std::optional<double> bytes = predicted_state_bytes(p, stage_parameters);
  return bytes ? mebibytes(static_cast<std::uint64_t>(*bytes)) : "  9.1 todo";
}

nlohmann::json predicted_json(const PipelineTrainOptions& p, std::size_t stage_parameters) {
  const std::optional<double> bytes = predicted_state_bytes(p, stage_parameters);
  return bytes ? nlohmann::json(*bytes) : nlohmann::json(nullptr);
}

void print_header(const Options& o, const PipelineTrainOptions& p, const Mnist& data, int ranks) {
  const TrainOptions& t = p.train;
  const int local = t.batch_size / p.dp_size;
  std::cout << "Training the " << model_name(p.widths) << " MLP on " << ranks
            << (ranks == 1 ? " rank" : " ranks") << ": " << p.pp_size << " pipeline "
            << (p.pp_size == 1 ? "stage" : "stages") << " x " << p.dp_size << " data-parallel "
            << (p.dp_size == 1 ? "replica" : "replicas");
  if (p.mp_size > 1) {
    std::cout << " x " << p.mp_size << " tensor-parallel ranks ("
              << (p.megatron ? "Megatron" : "naive") << ")";
  }
  std::cout << ", " << schedule_name(p.schedule) << " with " << p.num_microbatches << " micro-"
            << (p.num_microbatches == 1 ? "batch" : "batches") << ", ZeRO stage " << p.zero_stage
            << "\n"
            << "  data " << o.data_dir << ": " << data.train.count << " training and "
            << data.test.count << " test images, in the order of seed " << p.seed << "\n"
            << "  " << t.epochs << (t.epochs == 1 ? " epoch" : " epochs") << ", global batch "
            << t.batch_size << " (" << local << " per replica), " << optimizer_name(p.optimizer)
            << " lr " << t.lr.initial << " x " << t.lr.decay << " every " << t.lr.every
            << " steps\n"
            << std::flush;
  print_blas_note();
}

// The bound on stashed micro-batches: GPipe stashes all m, 1F1B at most p - s on stage s.
std::size_t stash_bound(const PipelineTrainOptions& p, int stage) {
  const int bound = p.schedule == Schedule::GPipe ? p.num_microbatches : p.pp_size - stage;
  return static_cast<std::size_t>(std::min(bound, p.num_microbatches));
}

// A column of MiB per step.
std::string per_step(std::uint64_t bytes, long steps) {
  return mebibytes(steps ? bytes / steps : 0);
}

void print_pipeline_table(const PipelineTrainOptions& p, const PipelineTrainReport& r) {
  const double theory = double(p.pp_size - 1) / (p.num_microbatches + p.pp_size - 1);
  std::printf(
      "\nPer rank: the bubble (idle share of the schedule's time; theory (p - 1) / (m + p - 1) "
      "= %.3f), the micro-batches stashed at once (%s bound), and the MiB sent per step:\n",
      theory, p.schedule == Schedule::GPipe ? "GPipe's: m" : "1F1B's: min(p - s, m)");
  std::printf("  %4s %5s %3s %3s %7s %7s %8s %6s %15s %10s %10s %10s\n", "rank", "stage", "dp",
              "mp", "layers", "bubble", "stashed", "bound", "activations MiB", "pipeline",
              "data par.", "tensor par.");
  for (const RankMeasurements& m : r.ranks) {
    const std::string layers =
        std::to_string(m.first_layer) + "-" + std::to_string(m.last_layer - 1);
    std::printf("  %4d %5d %3d %3d %7s %7.3f %8zu %6zu %15s %s %s %s\n", m.rank, m.pp_idx, m.dp_idx,
                m.mp_idx, layers.c_str(), m.bubble_fraction, m.peak_stashed_microbatches,
                stash_bound(p, m.pp_idx), mebibytes(m.peak_activation_bytes).c_str(),
                per_step(m.pipeline_bytes, r.steps).c_str(),
                per_step(m.data_parallel_bytes, r.steps).c_str(),
                per_step(m.tensor_parallel_bytes, r.steps).c_str());
  }
}

void print_memory_table(const PipelineTrainOptions& p, const PipelineTrainReport& r) {
  const double k = optimizer_bytes_per_parameter(p.optimizer);
  std::printf(
      "\nModel states per rank after the last step, MiB (fp32: 4 bytes per parameter and per "
      "gradient, %s keeps %g per parameter),\nbeside your 9.1 for this fp32 run: 2 x "
      "zero_memory_per_rank(Ψ, %d, %d, k = %g), Ψ the parameters the rank's data-parallel "
      "group shards:\n",
      optimizer_name(p.optimizer), k, p.dp_size, p.zero_stage, k / 2);
  // "Ψ" is one column wide but two bytes long: printf pads it one short.
  std::printf("  %4s %5s %11s %10s %10s %10s %10s %10s %10s\n", "rank", "stage", "Ψ", "params",
              "grads", "optimizer", "total", "predicted", "transient");
  for (const RankMeasurements& m : r.ranks) {
    std::printf("  %4d %5d %10zu %s %s %s %s %s %s\n", m.rank, m.pp_idx, m.stage_parameters,
                mebibytes(m.states.parameters).c_str(), mebibytes(m.states.gradients).c_str(),
                mebibytes(m.states.optimizer).c_str(), mebibytes(m.states.total()).c_str(),
                predicted_text(p, m.stage_parameters).c_str(),
                mebibytes(m.peak_transient_bytes).c_str());
  }
  std::fflush(stdout);
}

nlohmann::json report_json(const PipelineTrainOptions& p, const PipelineTrainReport& r) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankMeasurements& m : r.ranks) {
    ranks.push_back({{"rank", m.rank},
                     {"pp_idx", m.pp_idx},
                     {"dp_idx", m.dp_idx},
                     {"mp_idx", m.mp_idx},
                     {"layers", {m.first_layer, m.last_layer}},
                     {"stage_parameters", m.stage_parameters},
                     {"peak_bytes",
                      {{"parameters", m.states.parameters},
                       {"gradients", m.states.gradients},
                       {"optimizer", m.states.optimizer},
                       {"activations", m.peak_activation_bytes},
                       {"transient", m.peak_transient_bytes}}},
                     {"predicted_model_state_bytes", predicted_json(p, m.stage_parameters)},
                     {"bytes_sent", m.bytes_sent()},
                     {"bytes_sent_per_step", r.steps ? double(m.bytes_sent()) / r.steps : 0.0},
                     {"bytes_by_group",
                      {{"pipeline", m.pipeline_bytes},
                       {"data_parallel", m.data_parallel_bytes},
                       {"tensor_parallel", m.tensor_parallel_bytes}}},
                     {"bubble_fraction", m.bubble_fraction},
                     {"peak_stashed_microbatches", m.peak_stashed_microbatches}});
  }
  return {{"model", p.widths},
          {"pp_size", p.pp_size},
          {"dp_size", p.dp_size},
          {"mp_size", p.mp_size},
          {"megatron", p.megatron},
          {"microbatches", p.num_microbatches},
          {"schedule", p.schedule == Schedule::GPipe ? "gpipe" : "1f1b"},
          {"optimizer", p.optimizer == OptimizerKind::Adam ? "adam" : "sgd"},
          {"zero", p.zero_stage},
          {"seed", p.seed},
          {"steps", r.steps},
          {"final_loss", r.last_epoch.mean_loss()},
          {"test_accuracy", r.test_accuracy},
          {"weights_l2", r.weights_l2},
          {"seconds", r.seconds},
          {"ranks", ranks}};
}

// "rank 2 · stage 1 · dp 0" (and "· mp 1" with tensor parallelism): a row of the trace and the
// timeline.
std::vector<std::string> rank_labels(const PipelineTrainOptions& p, const PipelineTrainReport& r) {
  std::vector<std::string> labels;
  for (const RankMeasurements& m : r.ranks) {
    labels.push_back("rank " + std::to_string(m.rank) + " · stage " + std::to_string(m.pp_idx) +
                     " · dp " + std::to_string(m.dp_idx) +
                     (p.mp_size > 1 ? " · mp " + std::to_string(m.mp_idx) : ""));
  }
  return labels;
}

TimelineStyle timeline_style(const PipelineTrainOptions& p, const PipelineTrainReport& r) {
  const std::string title = std::string(schedule_name(p.schedule)) + ", " +
                            std::to_string(p.pp_size) + " stages, " +
                            std::to_string(p.num_microbatches) + " micro-batches: step " +
                            std::to_string(r.steps) + " of " + model_name(p.widths) + " MLP";
  return {title, rank_labels(p, r), p.num_microbatches};
}

// The trainer's options: assignment 2's flags, and the layout and training flags both trainers
// share. Adam starts from its own learning rate unless --lr says otherwise.
PipelineTrainOptions pipeline_options(const Options& o) {
  PipelineTrainOptions p = o.pipeline;
  p.mp_size = o.parallelism.mp_size;
  p.dp_size = o.parallelism.dp_size;
  p.megatron = o.parallelism.megatron;
  p.train = o.train;
  if (p.optimizer == OptimizerKind::Adam && !o.lr) p.train.lr.initial = kAdamLearningRate;
#if DTK_WITH_REPLICAS_TRAINER
  p.tensor_parallel = split_stage_layers;  // assignment 1's functions are in this build
#endif
  p.record_timeline = !o.trace_file.empty() || !o.timeline_file.empty();
  return p;
}

}  // namespace

void run_pipeline(const Options& o, const Communicator& world) {
  const PipelineTrainOptions p = pipeline_options(o);
  share_cores(world);
  const Mnist data = load_data(o.data_dir, world, p.widths.back());
  if (data.train.pixels != static_cast<std::size_t>(p.widths.front())) {
    throw DataError(o.data_dir + ": images have " + std::to_string(data.train.pixels) +
                    " pixels, the " + model_name(p.widths) + " MLP needs " +
                    std::to_string(p.widths.front()));
  }
  const std::string problem = pipeline_options_problem(p, world.Get_size(), data.train.count);
  if (!problem.empty()) throw UsageError(problem);
  check_writable(o.report_file, "--report", world);
  check_writable(o.trace_file, "--trace", world);
  check_writable(o.timeline_file, "--timeline", world);
  const bool root = world.Get_rank() == 0;
  if (root) print_header(o, p, data, world.Get_size());

  const PipelineTrainReport report = train_pipeline(p, data, world, std::cout);
  if (!root) return;
  print_result(report.steps, report.images, report.seconds, report.last_epoch, report.test_accuracy,
               data.test.count);
  std::printf("Weights: L2 norm %.9g\n", report.weights_l2);
  print_pipeline_table(p, report);
  print_memory_table(p, report);
  if (!o.report_file.empty()) {
    write_file(o.report_file, "report",
               [&](std::ostream& out) { out << report_json(p, report).dump(2) << "\n"; });
  }
  if (!o.trace_file.empty()) {
    write_file(o.trace_file, "trace", [&](std::ostream& out) {
      write_chrome_trace(out, report.timeline, rank_labels(p, report));
    });
    std::printf(
        "\nTrace of %ld steps: %s (open it in https://ui.perfetto.dev or "
        "chrome://tracing)\n",
        report.steps, o.trace_file.c_str());
  }
  if (!o.timeline_file.empty()) {
    write_file(o.timeline_file, "timeline", [&](std::ostream& out) {
      write_timeline_svg(out, report.timeline, static_cast<int>(report.steps),
                         timeline_style(p, report));
    });
    std::printf("Timeline of step %ld: %s\n", report.steps, o.timeline_file.c_str());
  }
}

}  // namespace dtk::unified_train
