// unified_train, assignment 2: a deep MLP as a pipeline of pp_size stages, each stage data
// parallel over dp_size ranks with ZeRO (include/dtk/model/pipeline_trainer.hpp), your Part 7,
// 8 and 9 functions doing all the communication. Rank 0 prints progress, the test accuracy, and
// per rank: the pipeline's bubble beside its theory, the stashed activations beside the
// schedule's bound, and the model states beside your 9.1 model's prediction.
#include <dtk/model/cores.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>

#include <nlohmann/json.hpp>

#include "unified_train.hpp"

namespace dtk::unified_train {

namespace {

std::string model_name(const std::vector<int>& widths) {
  std::string name;
  for (const int w : widths) name += (name.empty() ? "" : "-") + std::to_string(w);
  return name;
}

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
// twice the model with k = K / 2.
double predicted_state_bytes(const PipelineTrainOptions& p, std::size_t stage_parameters) {
  return 2 * zero_memory_per_rank(double(stage_parameters), p.dp_size, p.zero_stage,
                                  optimizer_bytes_per_parameter(p.optimizer) / 2);
}

// The flags of assignment 1 that the pipeline trainer has no use for.
void refuse_tensor_parallel_flags(const Options& o) {
  if (o.parallelism.mp_size > 1 || o.parallelism.megatron) {
    throw UsageError(std::string(o.parallelism.mp_size > 1 ? "--mp_size" : "--megatron-mp") +
                     " with " + o.first_pipeline_flag +
                     ": the pipeline trainer runs pipeline and data parallelism (pp_size x "
                     "dp_size ranks), not tensor parallelism; leave out --mp_size and "
                     "--megatron-mp");
  }
}

void print_header(const Options& o, const Mnist& data, int ranks) {
  const PipelineTrainOptions& p = o.pipeline;
  const TrainOptions& t = p.train;
  const int local = t.batch_size / p.dp_size;
  std::cout << "Training the " << model_name(p.widths) << " MLP on " << ranks
            << (ranks == 1 ? " rank" : " ranks") << ": " << p.pp_size << " pipeline "
            << (p.pp_size == 1 ? "stage" : "stages") << " x " << p.dp_size << " data-parallel "
            << (p.dp_size == 1 ? "replica" : "replicas") << ", " << schedule_name(p.schedule)
            << " with " << p.num_microbatches << " micro-"
            << (p.num_microbatches == 1 ? "batch" : "batches") << ", ZeRO stage " << p.zero_stage
            << "\n"
            << "  data " << o.data_dir << ": " << data.train.count << " training and "
            << data.test.count << " test images, in the order of seed " << p.seed << "\n"
            << "  " << t.epochs << (t.epochs == 1 ? " epoch" : " epochs") << ", global batch "
            << t.batch_size << " (" << local << " per replica), " << optimizer_name(p.optimizer)
            << " lr " << t.lr.initial << " x " << t.lr.decay << " every " << t.lr.every
            << " steps\n"
            << std::flush;
}

// The bound on stashed micro-batches: GPipe stashes all m, 1F1B at most p - s on stage s.
std::size_t stash_bound(const PipelineTrainOptions& p, int stage) {
  const int bound = p.schedule == Schedule::GPipe ? p.num_microbatches : p.pp_size - stage;
  return static_cast<std::size_t>(std::min(bound, p.num_microbatches));
}

void print_pipeline_table(const PipelineTrainOptions& p, const PipelineTrainReport& r) {
  const double theory = double(p.pp_size - 1) / (p.num_microbatches + p.pp_size - 1);
  std::printf(
      "\nPipeline (bubble: idle share of the schedule's time; theory (p - 1) / (m + p - 1) = "
      "%.3f):\n",
      theory);
  std::printf("  %4s %5s %3s %7s %7s %8s %6s %14s\n", "rank", "stage", "dp", "layers", "bubble",
              "stashed", "bound", "activations MB");
  for (const RankMeasurements& m : r.ranks) {
    const std::string layers =
        std::to_string(m.first_layer) + "-" + std::to_string(m.last_layer - 1);
    std::printf("  %4d %5d %3d %7s %7.3f %8zu %6zu %14s\n", m.rank, m.pp_idx, m.dp_idx,
                layers.c_str(), m.bubble_fraction, m.peak_stashed_microbatches,
                stash_bound(p, m.pp_idx), megabytes(m.peak_activation_bytes).c_str());
  }
}

void print_memory_table(const PipelineTrainOptions& p, const PipelineTrainReport& r) {
  std::printf(
      "\nModel states per rank after the last step (MB; fp32: 4 bytes per parameter and per "
      "gradient, %s %g bytes per parameter), beside 2 x zero_memory_per_rank(stage Ψ, %d, %d, "
      "k = %g):\n",
      optimizer_name(p.optimizer), optimizer_bytes_per_parameter(p.optimizer), p.dp_size,
      p.zero_stage, optimizer_bytes_per_parameter(p.optimizer) / 2);
  std::printf("  %4s %5s %10s %10s %10s %10s %10s %10s %10s %12s\n", "rank", "stage", "Ψ", "params",
              "grads", "optimizer", "total", "predicted", "transient", "sent MB/step");
  for (const RankMeasurements& m : r.ranks) {
    std::printf("  %4d %5d %10zu %s %s %s %s %s %s %12s\n", m.rank, m.pp_idx, m.stage_parameters,
                megabytes(m.states.parameters).c_str(), megabytes(m.states.gradients).c_str(),
                megabytes(m.states.optimizer).c_str(), megabytes(m.states.total()).c_str(),
                megabytes(predicted_state_bytes(p, m.stage_parameters)).c_str(),
                megabytes(m.peak_transient_bytes).c_str(),
                megabytes(r.steps ? m.bytes_sent / r.steps : 0).c_str());
  }
  std::fflush(stdout);
}

nlohmann::json report_json(const Options& o, const PipelineTrainReport& r) {
  const PipelineTrainOptions& p = o.pipeline;
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankMeasurements& m : r.ranks) {
    ranks.push_back({{"rank", m.rank},
                     {"pp_idx", m.pp_idx},
                     {"dp_idx", m.dp_idx},
                     {"layers", {m.first_layer, m.last_layer}},
                     {"stage_parameters", m.stage_parameters},
                     {"peak_bytes",
                      {{"parameters", m.states.parameters},
                       {"gradients", m.states.gradients},
                       {"optimizer", m.states.optimizer},
                       {"activations", m.peak_activation_bytes},
                       {"transient", m.peak_transient_bytes}}},
                     {"predicted_model_state_bytes", predicted_state_bytes(p, m.stage_parameters)},
                     {"bytes_sent", m.bytes_sent},
                     {"bytes_sent_per_step", r.steps ? double(m.bytes_sent) / r.steps : 0.0},
                     {"bubble_fraction", m.bubble_fraction},
                     {"peak_stashed_microbatches", m.peak_stashed_microbatches}});
  }
  return {{"model", p.widths},
          {"pp_size", p.pp_size},
          {"dp_size", p.dp_size},
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

void write_file(const std::string& path, const std::string& what,
                const std::function<void(std::ostream&)>& write) {
  std::ofstream out(path);
  if (out) write(out);
  if (!out) throw std::runtime_error("cannot write the " + what + " to " + path);
}

// Collective: refuses an output file rank 0 cannot create before the training, not after it.
void check_writable(const std::string& path, const std::string& flag, const Communicator& world) {
  if (path.empty()) return;
  int ok = 1;
  if (world.Get_rank() == 0) ok = std::ofstream(path) ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, world.handle());
  if (!ok) throw UsageError(flag + " " + path + ": cannot create this file");
}

}  // namespace

void run_pipeline(const Options& o, const Communicator& world) {
  refuse_tensor_parallel_flags(o);
  const PipelineTrainOptions& p = o.pipeline;
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
  const bool root = world.Get_rank() == 0;
  if (root) print_header(o, data, world.Get_size());

  const PipelineTrainReport report = train_pipeline(p, data, world, std::cout);
  if (!root) return;
  std::printf(
      "Trained %ld steps on %lld images in %.2f s (%.1fk images/s), last epoch loss %.4f, "
      "accuracy %.4f\n",
      report.steps, static_cast<long long>(report.images), report.seconds,
      report.images / report.seconds / 1000, report.last_epoch.mean_loss(),
      report.last_epoch.accuracy());
  std::printf("Test accuracy: %.4f (%zu images)\n", report.test_accuracy, data.test.count);
  std::printf("Weights: L2 norm %.9g\n", report.weights_l2);
  print_pipeline_table(p, report);
  print_memory_table(p, report);
  if (!o.report_file.empty()) {
    write_file(o.report_file, "report",
               [&](std::ostream& out) { out << report_json(o, report).dump(2) << "\n"; });
  }
}

}  // namespace dtk::unified_train
