// unified_train, assignment 1: the 784-256-10 MLP, model parallel inside each replica of mp_size
// ranks (naive or Megatron) and data parallel across dp_size replicas, with the Part 1, 2, 3 and
// 6 functions doing all the communication. Rank 0 prints progress, the test accuracy, how many
// bytes each layer sent over its data-parallel and model-parallel communicators, and each
// layer's peak memory.
#include <dtk/mlp/mlp.hpp>
#include <dtk/training/cores.hpp>
#include <dtk/training/rank_count.hpp>

#include <cstdio>
#include <iostream>

#include "unified_train.hpp"

namespace dtk::unified_train {

namespace {

// The flags must suit the model, then the number of ranks mpirun started.
void check_layout(const Options& o, int ranks) {
  const dtk::Parallelism& p = o.parallelism;
  const dtk::MlpDims dims;
  if (p.megatron && dims.hidden_dim % p.mp_size != 0) {
    throw UsageError("Megatron splits the " + std::to_string(dims.hidden_dim) +
                     " hidden units across the model-parallel group: --mp_size must divide " +
                     std::to_string(dims.hidden_dim));
  }
  if (!p.megatron && (dims.hidden_dim % p.mp_size != 0 || dims.out_dim % p.mp_size != 0)) {
    throw UsageError("naive model parallelism splits fc1's " + std::to_string(dims.hidden_dim) +
                     " and fc2's " + std::to_string(dims.out_dim) +
                     " outputs: --mp_size must divide both (1 or 2); Megatron (--megatron-mp) "
                     "allows any divisor of " +
                     std::to_string(dims.hidden_dim));
  }
  if (o.train.batch_size % p.dp_size != 0) {
    throw UsageError("--batch_size " + std::to_string(o.train.batch_size) +
                     " must be a multiple of --dp_size " + std::to_string(p.dp_size));
  }
  const std::string problem = dtk::rank_count_problem(
      "--mp_size " + std::to_string(p.mp_size) + " x --dp_size " + std::to_string(p.dp_size),
      p.mp_size * p.dp_size, ranks);
  if (!problem.empty()) throw UsageError(problem);
}

void print_header(const Options& o, const dtk::Mnist& data) {
  const dtk::Parallelism& p = o.parallelism;
  const dtk::TrainOptions& t = o.train;
  const int ranks = p.mp_size * p.dp_size;
  std::cout << "Training the 784-256-10 MLP on " << ranks << (ranks == 1 ? " rank" : " ranks")
            << ": mp_size " << p.mp_size << " x dp_size " << p.dp_size << ", "
            << (p.megatron ? "Megatron" : "naive") << " model parallelism\n"
            << "  data " << o.data_dir << ": " << data.train.count << " training and "
            << data.test.count << " test images\n"
            << "  " << t.epochs << (t.epochs == 1 ? " epoch" : " epochs") << ", global batch "
            << t.batch_size << " (" << t.batch_size / p.dp_size << " per replica), lr "
            << t.lr.initial << " x " << t.lr.decay << " every " << t.lr.every << " steps\n"
            << std::flush;
  print_blas_note();
}

// What rank 0's layers counted during training (evaluation would add to it).
struct LayerUsage {
  std::string name;
  std::uint64_t dp_bytes, mp_bytes, forward_bytes, backward_bytes;
};

LayerUsage layer_usage(const std::string& name, const dtk::FCLayer& layer) {
  return {name, layer.info().dp_comm.total_bytes_transferred(),
          layer.info().mp_comm.total_bytes_transferred(), layer.forward_memory().peak_bytes(),
          layer.backward_memory().peak_bytes()};
}

// One row of a breakdown table: a label and two right-aligned columns.
void print_row(const std::string& label, const std::string& first, const std::string& second) {
  std::printf("  %-5s %10s %10s\n", label.c_str(), first.c_str(), second.c_str());
}

void print_breakdown(const LayerUsage (&layers)[2]) {
  std::printf("\nCommunication during training (MiB sent by rank 0, estimated):\n");
  print_row("layer", "DP", "MP");
  for (const LayerUsage& l : layers)
    print_row(l.name, mebibytes(l.dp_bytes), mebibytes(l.mp_bytes));
  std::printf("\nPeak memory per pass (MiB of tensors on rank 0):\n");
  print_row("layer", "forward", "backward");
  for (const LayerUsage& l : layers) {
    print_row(l.name, mebibytes(l.forward_bytes), mebibytes(l.backward_bytes));
  }
  std::fflush(stdout);
}

}  // namespace

void run_replicas(const Options& o, const Communicator& world) {
  check_layout(o, world.Get_size());
  const bool root = world.Get_rank() == 0;
  const dtk::MlpDims dims;
  dtk::share_cores(world);

  const dtk::Mnist data = load_data(o.data_dir, world, dims.out_dim);
  if (data.train.pixels != static_cast<std::size_t>(dims.in_dim)) {
    throw dtk::DataError(o.data_dir + ": images have " + std::to_string(data.train.pixels) +
                         " pixels, the 784-256-10 MLP needs 28 x 28 = 784");
  }
  if (root) print_header(o, data);

  dtk::MLP model(world, o.parallelism);
  const dtk::Shard train_data = dtk::training_shard(data.train, o.parallelism, world.Get_rank());
  const dtk::Shard test_data = dtk::test_shard(data.test, o.parallelism, world.Get_rank());

  const dtk::TrainReport report = dtk::train(model, train_data, o.train, world, std::cout);
  const LayerUsage layers[2] = {layer_usage("fc1", model.fc1()), layer_usage("fc2", model.fc2())};
  const double accuracy = dtk::evaluate(model, test_data, world, 1000);

  if (!root) return;
  print_result(report.steps, report.images, report.seconds, report.last_epoch, accuracy,
               data.test.count);
  print_breakdown(layers);
  std::cout << std::flush;
}

}  // namespace dtk::unified_train
