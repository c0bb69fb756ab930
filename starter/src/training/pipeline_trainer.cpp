#include "dtk/training/pipeline_trainer.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "dtk/data/shard.hpp"
#include "dtk/mlp/mlp_stage.hpp"
#include "dtk/pipeline.hpp"
#include "dtk/training/rank_count.hpp"

namespace dtk {

namespace {

std::string text(long long n) { return std::to_string(n); }

// A stage that times each forward and backward of the stage it wraps: the busy time of the
// bubble fraction, and the F<mb> and B<mb> boxes of a timeline (when there is a recorder).
class TimedStage : public PipelineStage<float> {
 public:
  TimedStage(MlpStage& inner, TimelineRecorder* recorder) : inner_(inner), recorder_(recorder) {}

  bool is_first() const override { return inner_.is_first(); }
  bool is_last() const override { return inner_.is_last(); }
  std::array<std::size_t, 2> input_shape(int mb) const override { return inner_.input_shape(mb); }
  std::array<std::size_t, 2> output_shape(int mb) const override { return inner_.output_shape(mb); }
  Matrix input_microbatch(int mb) const override { return inner_.input_microbatch(mb); }
  Matrix loss_grad(int mb) const override { return inner_.loss_grad(mb); }
  Matrix forward(int mb, const Matrix& input) override {
    return timed(true, mb, [&] { return inner_.forward(mb, input); });
  }
  Matrix backward(int mb, const Matrix& output_grad) override {
    return timed(false, mb, [&] { return inner_.backward(mb, output_grad); });
  }

  double busy_seconds() const { return busy_; }

 private:
  template <class Work>
  Matrix timed(bool forward, int mb, Work work) {
    const double begin = MPI_Wtime();
    Matrix result = work();
    const double end = MPI_Wtime();
    busy_ += end - begin;
    if (recorder_) {
      recorder_->add(forward ? WorkKind::Forward : WorkKind::Backward, mb,
                     (forward ? "F" : "B") + std::to_string(mb), begin, end);
    }
    return result;
  }

  MlpStage& inner_;
  TimelineRecorder* recorder_;
  double busy_ = 0;
};

// Everything about this rank's place in the run that the steps need.
struct RankSetup {
  PipelineInfo info;
  int pp_idx = 0, dp_idx = 0, mp_idx = 0;
  std::vector<int> bounds;  // partition_layers' stage boundaries
  std::vector<PipeStep> schedule;
};

void check_pipeline_info(const PipelineInfo& info, int rank, const PipelineTrainOptions& o) {
  const int stage_size = o.mp_size * o.dp_size, expected_stage = rank / stage_size;
  const std::string got = "get_pipeline_info(world, " + text(rank) + ", " + text(o.mp_size) + ", " +
                          text(o.dp_size) + ", " + text(o.pp_size) + ") returned ";
  if (info.pp_idx != expected_stage || info.pp_comm.Get_size() != o.pp_size ||
      info.pp_comm.Get_rank() != expected_stage) {
    throw std::runtime_error(got + "pp_idx " + text(info.pp_idx) + " and a pp_comm of " +
                             text(info.pp_comm.Get_size()) + " ranks in which it is rank " +
                             text(info.pp_comm.Get_rank()) + "; expected stage " +
                             text(expected_stage) + " of " + text(o.pp_size));
  }
  if (info.stage_comm.Get_size() != stage_size || info.stage_comm.Get_rank() != rank % stage_size) {
    throw std::runtime_error(got + "a stage_comm of " + text(info.stage_comm.Get_size()) +
                             " ranks in which it is rank " + text(info.stage_comm.Get_rank()) +
                             "; expected rank " + text(rank % stage_size) + " of " +
                             text(stage_size));
  }
}

std::vector<double> layer_parameter_counts(const std::vector<int>& widths) {
  std::vector<double> counts;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    counts.push_back(double(widths[l]) * widths[l + 1] + widths[l + 1]);
  }
  return counts;
}

void check_bounds(const std::vector<int>& bounds, int num_layers, int pp_size) {
  bool ok = bounds.size() == static_cast<std::size_t>(pp_size) + 1 && bounds.front() == 0 &&
            bounds.back() == num_layers;
  for (std::size_t s = 0; ok && s + 1 < bounds.size(); ++s) ok = bounds[s] < bounds[s + 1];
  if (ok) return;
  std::string listed;
  for (const int b : bounds) listed += (listed.empty() ? "" : ", ") + text(b);
  throw std::runtime_error("partition_layers(" + text(num_layers) + " layer costs, " +
                           text(pp_size) + ") returned {" + listed + "}: expected " +
                           text(pp_size + 1) + " increasing boundaries from 0 to " +
                           text(num_layers));
}

// The costs partition_layers balances: each layer's parameter count, or each pair's when the
// stages are tensor parallel (a stage holds whole pairs).
std::vector<double> partition_costs(const PipelineTrainOptions& o) {
  std::vector<double> costs = layer_parameter_counts(o.widths);
  if (o.mp_size == 1) return costs;
  std::vector<double> pairs;
  for (std::size_t l = 0; l + 1 < costs.size(); l += 2) pairs.push_back(costs[l] + costs[l + 1]);
  return pairs;
}

RankSetup set_up_rank(const PipelineTrainOptions& o, const Communicator& world) {
  const int rank = world.Get_rank();
  RankSetup setup{get_pipeline_info(world, rank, o.mp_size, o.dp_size, o.pp_size), 0, 0, 0, {}, {}};
  check_pipeline_info(setup.info, rank, o);
  setup.pp_idx = setup.info.pp_idx;
  setup.mp_idx = rank % o.mp_size;
  setup.dp_idx = (rank / o.mp_size) % o.dp_size;
  const std::vector<double> costs = partition_costs(o);
  setup.bounds = partition_layers(costs, o.pp_size);
  check_bounds(setup.bounds, static_cast<int>(costs.size()), o.pp_size);
  const int layers_per_unit = o.mp_size == 1 ? 1 : 2;
  for (int& bound : setup.bounds) bound *= layers_per_unit;
  setup.schedule = o.schedule == Schedule::GPipe
                       ? gpipe_schedule(setup.pp_idx, o.pp_size, o.num_microbatches)
                       : one_f_one_b_schedule(setup.pp_idx, o.pp_size, o.num_microbatches);
  return setup;
}

// The training images in the order the run visits them: shuffled by the seed, the same on every
// rank and in every layout.
std::vector<std::size_t> image_order(std::size_t count, std::uint32_t seed) {
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937 generator(seed);
  std::shuffle(order.begin(), order.end(), generator);
  return order;
}

// The median of `values` (0 for none): a step the machine's other work slowed down moves it
// less than the mean.
double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto middle = values.begin() + values.size() / 2;
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// Sums `mine` over world: only the last stage computes the loss, and every replica's last
// stage has its own part of the batch, so nothing is counted twice.
BatchStats sum_over_world(const BatchStats& mine, const Communicator& world) {
  double values[3] = {mine.loss_sum, double(mine.correct), double(mine.count)};
  MPI_Allreduce(MPI_IN_PLACE, values, 3, MPI_DOUBLE, MPI_SUM, world.handle());
  return BatchStats{values[0], std::int64_t(values[1]), std::int64_t(values[2])};
}

double sum_over_world(double mine, const Communicator& world) {
  MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_DOUBLE, MPI_SUM, world.handle());
  return mine;
}

// The forward passes of every micro-batch: the schedule of an evaluation.
std::vector<PipeStep> forwards_only(int num_microbatches) {
  std::vector<PipeStep> steps;
  for (int mb = 0; mb < num_microbatches; ++mb) steps.push_back({PipeOp::Forward, mb});
  return steps;
}

// The test images of this rank's replica go through the pipeline forward only, in batches of
// up to 1000 per replica; returns the accuracy over all replicas.
double evaluate(const PipelineTrainOptions& o, const ImageSet& test, MlpStageLayers& layers,
                const RankSetup& setup, const Communicator& world) {
  const Shard shard = contiguous_part(test, setup.dp_idx, o.dp_size);
  constexpr std::size_t kBatch = 1000;
  BatchStats mine;
  Matrix x;
  Labels labels;
  Communicator pp_comm = setup.info.pp_comm;
  for (std::size_t first = 0; first < shard.size(); first += kBatch) {
    const std::size_t count = std::min(kBatch, shard.size() - first);
    shard.batch(first, count, x, labels);
    const int microbatches = static_cast<int>(std::min<std::size_t>(o.num_microbatches, count));
    MlpStage stage(layers, PipelineBatch{count, microbatches, count, &x, &labels});
    run_pipeline_schedule<float>(stage, forwards_only(microbatches), pp_comm);
    if (setup.mp_idx == 0) mine += stage.stats();
  }
  return sum_over_world(mine, world).accuracy();
}

// This rank's part of the sum of squares of the model's weights: every replica holds the same
// weights, so the first one counts, and of a bias every rank of a model-parallel group holds
// whole, one copy. Collective over the data-parallel group (ZeRO-3 gathers each layer).
double weights_square_sum(MlpStageLayers& layers, const RankSetup& setup) {
  double sum = 0;
  const auto add = [&sum](const Matrix& values) {
    for (const float v : values) sum += double(v) * v;
  };
  for (std::size_t j = 0; j < layers.layers().size(); ++j) {
    layers.with_weights(j, [&](const DenseLayer& layer) {
      if (setup.dp_idx != 0) return;
      add(layer.weight);
      if (layers.owns_bias(j)) add(layer.bias);
    });
  }
  return sum;
}

// Every rank's measurements, on world rank 0.
std::vector<RankMeasurements> gather_measurements(const RankMeasurements& mine,
                                                  const Communicator& world) {
  static_assert(std::is_trivially_copyable_v<RankMeasurements>);
  std::vector<RankMeasurements> all(world.Get_rank() == 0 ? world.Get_size() : 0);
  MPI_Gather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, 0, world.handle());
  return all;
}

// Where tensor parallelism cannot split the model as asked: "" or why not.
std::string tensor_parallel_problem(const PipelineTrainOptions& o, const std::string& model) {
  const int num_layers = static_cast<int>(o.widths.size()) - 1, mp = o.mp_size;
  if (!o.tensor_parallel) {
    return "--mp_size splits layers with assignment 1's functions (get_info, Parts 3 and 6), "
           "which this build does not hold";
  }
  if (num_layers % 2 != 0) {
    return "tensor parallelism splits the layers in pairs (fc1 and fc2 of assignment 1), but " +
           model + " has " + text(num_layers) +
           " layers: give an odd number of hidden widths, e.g. --hidden 256 or 256,256,256";
  }
  if (o.pp_size > num_layers / 2) {
    return "--pp_size " + text(o.pp_size) + " with --mp_size " + text(mp) +
           ": every stage holds whole pairs of layers, and " + model + " has " +
           text(num_layers / 2) + (num_layers == 2 ? " pair" : " pairs");
  }
  for (int l = 0; l < num_layers; l += 2) {
    if (o.widths[l + 1] % mp != 0) {
      return "--mp_size " + text(mp) +
             " must divide the width each pair of layers splits: " + text(o.widths[l + 1]) +
             " (layer " + text(l) + "'s output)";
    }
    if (!o.megatron && o.widths[l + 2] % mp != 0) {
      return "naive model parallelism splits layer " + text(l + 1) + "'s " + text(o.widths[l + 2]) +
             " outputs too: --mp_size must divide it; Megatron "
             "(--megatron-mp) need not";
    }
  }
  return "";
}

}  // namespace

std::string model_name(const std::vector<int>& widths) {
  std::string out;
  for (const int w : widths) out += (out.empty() ? "" : "-") + std::to_string(w);
  return out;
}

std::string pipeline_options_problem(const PipelineTrainOptions& o, int ranks,
                                     std::size_t train_images) {
  const int num_layers = static_cast<int>(o.widths.size()) - 1;
  const std::string model = "the " + model_name(o.widths) + " MLP";
  if (o.mp_size > 1) {
    const std::string problem = tensor_parallel_problem(o, model);
    if (!problem.empty()) return problem;
  }
  if (o.pp_size > num_layers) {
    return "--pp_size " + text(o.pp_size) + " needs a stage per pipeline rank, but " + model +
           " has " + text(num_layers) + (num_layers == 1 ? " layer" : " layers") +
           ": give more hidden widths, e.g. --hidden " + std::string(o.pp_size > 2 ? "256," : "") +
           "256" + (o.pp_size > 2 ? std::string(",256") : "");
  }
  if (o.zero_stage < 0 || o.zero_stage > 3) {
    return "--zero " + text(o.zero_stage) + " is not a ZeRO stage: 0, 1, 2 or 3";
  }
  if (o.train.batch_size % o.dp_size != 0) {
    return "--batch_size " + text(o.train.batch_size) + " must be a multiple of --dp_size " +
           text(o.dp_size);
  }
  const int per_replica = o.train.batch_size / o.dp_size;
  if (o.num_microbatches > per_replica) {
    return "--microbatches " + text(o.num_microbatches) + " cannot cut " + text(per_replica) +
           " images per replica (--batch_size " + text(o.train.batch_size) + " / --dp_size " +
           text(o.dp_size) + "): at most one micro-batch per image";
  }
  if (static_cast<std::size_t>(o.train.batch_size) > train_images) {
    return "--batch_size " + text(o.train.batch_size) + " is larger than the training set (" +
           text(train_images) + " images)";
  }
  return rank_count_problem("--mp_size " + text(o.mp_size) + " x --dp_size " + text(o.dp_size) +
                                " x --pp_size " + text(o.pp_size),
                            o.mp_size * o.dp_size * o.pp_size, ranks);
}

PipelineTrainReport train_pipeline(const PipelineTrainOptions& o, const Mnist& data,
                                   const Communicator& world_comm, std::ostream& progress) {
  Communicator world = world_comm;
  const bool root = world.Get_rank() == 0;
  RankSetup setup = set_up_rank(o, world);
  const int first = setup.bounds[setup.pp_idx], last = setup.bounds[setup.pp_idx + 1];
  // The ranks holding this rank's weights: the whole stage, or with tensor parallelism the
  // ranks of the stage with its slices.
  Communicator dp_comm = setup.info.stage_comm;
  std::unique_ptr<MlpStageLayers> layers_made;
  if (o.mp_size == 1) {
    layers_made = std::make_unique<MlpStageLayers>(o.widths, first, last, o.seed);
  } else {
    const Parallelism parallelism{o.mp_size, o.dp_size, o.megatron};
    StageSplit split =
        o.tensor_parallel(setup.info.stage_comm, parallelism, o.widths, first, last, o.seed);
    dp_comm = split.dp_comm;
    layers_made = std::make_unique<MlpStageLayers>(o.widths, first, last, std::move(split));
  }
  MlpStageLayers& layers = *layers_made;
  ShardedOptimizer optimizer(layers, o.zero_stage, o.optimizer, dp_comm);

  const std::size_t global_batch = o.train.batch_size, local = global_batch / o.dp_size;
  const long steps_per_epoch = static_cast<long>(data.train.count / global_batch);
  const long lines = std::max(o.train.progress_lines, 1);
  const long report_every = std::max(1L, steps_per_epoch / lines);
  const Shard ordered(data.train, image_order(data.train.count, o.seed));

  RankMeasurements measured;
  measured.rank = world.Get_rank();
  measured.pp_idx = setup.pp_idx;
  measured.dp_idx = setup.dp_idx;
  measured.mp_idx = setup.mp_idx;
  measured.first_layer = layers.first_layer();
  measured.last_layer = layers.last_layer();
  measured.stage_parameters = optimizer.parameter_count();

  PipelineTrainReport report;
  std::vector<double> bubbles;  // each step's
  Matrix x;
  Labels labels;
  world.Barrier();
  const double start = MPI_Wtime();
  std::unique_ptr<TimelineRecorder> recorder;
  if (o.record_timeline) recorder = std::make_unique<TimelineRecorder>(world.Get_rank(), start);
  bool done = false;
  for (int epoch = 1; epoch <= o.train.epochs && !done; ++epoch) {
    report.last_epoch = {};
    BatchStats recent;  // this rank's (last stage) totals since the last progress line
    for (long step = 1; step <= steps_per_epoch && !done; ++step) {
      // This replica's contiguous part of the step's global batch.
      const std::size_t first = (step - 1) * global_batch + setup.dp_idx * local;
      ordered.batch(first, local, x, labels);
      const float lr = o.train.lr.at(report.steps);
      ++report.steps;
      if (recorder) recorder->set_step(static_cast<int>(report.steps));

      optimizer.start_step();
      MlpStage stage(layers, PipelineBatch{local, o.num_microbatches, global_batch, &x, &labels});
      TimedStage timed(stage, recorder.get());
      const double begin = MPI_Wtime();
      run_pipeline_schedule<float>(timed, setup.schedule, setup.info.pp_comm);
      const double elapsed = MPI_Wtime() - begin;
      optimizer.step(lr);

      // Step 1 also pays for first touches of memory: leave it out when there are others.
      if (report.steps > 1 || o.train.max_steps == 1) {
        bubbles.push_back(elapsed > 0 ? 1 - timed.busy_seconds() / elapsed : 0);
      }
      measured.peak_stashed_microbatches =
          std::max(measured.peak_stashed_microbatches, stage.peak_stashed_microbatches());
      measured.peak_activation_bytes =
          std::max(measured.peak_activation_bytes, stage.peak_stashed_bytes());
      if (setup.mp_idx == 0) recent += stage.stats();  // the group's ranks compute the same loss
      done = report.steps == o.train.max_steps;

      if (step % report_every != 0 && step != steps_per_epoch && !done) continue;
      const BatchStats total = sum_over_world(recent, world);
      recent = {};
      report.last_epoch += total;
      report.images += total.count;
      if (root && o.train.progress_lines > 0) {
        progress << progress_line(epoch, o.train.epochs, step, steps_per_epoch, total, lr,
                                  report.images / (MPI_Wtime() - start))
                 << std::endl;
      }
    }
  }
  report.seconds = MPI_Wtime() - start;
  if (recorder) recorder->set_recording(false);  // the steps only, not what follows

  measured.states = optimizer.state_bytes();
  measured.peak_transient_bytes = optimizer.peak_transient_bytes();
  measured.bubble_fraction = median(bubbles);
  measured.pipeline_bytes = setup.info.pp_comm.total_bytes_transferred();
  measured.data_parallel_bytes = dp_comm.total_bytes_transferred();
  measured.tensor_parallel_bytes = layers.model_parallel_bytes();

  report.weights_l2 = std::sqrt(sum_over_world(weights_square_sum(layers, setup), world));
  report.test_accuracy = evaluate(o, data.test, layers, setup, world);
  report.ranks = gather_measurements(measured, world);
  if (recorder) report.timeline = gather_timeline(recorder->events(), world);
  return report;
}

}  // namespace dtk
