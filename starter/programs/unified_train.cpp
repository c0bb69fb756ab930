// End-to-end training: the 784-256-10 MLP on Fashion-MNIST (or any MNIST-format directory),
// model parallel inside each replica of mp_size ranks and data parallel across dp_size replicas,
// with your Part 1, 2, 3 and 6 functions doing all the communication.
//
//   mpirun -n 8 ./unified_train --mp_size 2 --dp_size 4 [--megatron-mp] [--epochs E]
//
// Rank 0 prints progress, the test accuracy, how many bytes each layer sent over its
// data-parallel and model-parallel communicators, and each layer's peak memory.
#include <dtk/dtk.hpp>
#include <dtk/model/cores.hpp>
#include <dtk/model/mlp.hpp>
#include <dtk/model/mnist.hpp>
#include <dtk/model/trainer.hpp>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

namespace {

struct Options {
  dtk::Parallelism parallelism;
  std::string data_dir = dtk::kFashionMnistDir;
  dtk::TrainOptions train;
  bool help = false;
};

std::string help_text() {
  const dtk::TrainOptions defaults;
  std::ostringstream text;
  text << "usage: mpirun -n N unified_train --mp_size M --dp_size D [options]    (N = M * D)\n"
       << "Trains the 784-256-10 MLP on D replicas of M ranks: model parallel inside a replica,\n"
       << "data parallel across them. Reports test accuracy, communication and peak memory.\n\n"
       << "  --mp_size M          ranks per replica (its model-parallel group; default 1)\n"
       << "  --dp_size D          replicas (default 1)\n"
       << "  --megatron-mp        Megatron model parallelism: fc2 split by input rows (default:\n"
       << "                       naive, both layers split by output columns)\n"
       << "  --epochs E           passes over the training set (default " << defaults.epochs
       << ")\n"
       << "  --data DIR           MNIST-format directory (default " << dtk::kFashionMnistDir
       << ")\n"
       << "  --batch_size B       global batch: B / D images per replica and step (default "
       << defaults.batch_size << ")\n"
       << "  --lr LR              initial learning rate (default " << defaults.lr.initial << ")\n"
       << "  --lr_decay F         multiply the learning rate by F... (default " << defaults.lr.decay
       << ")\n"
       << "  --lr_decay_every S   ...every S steps (default " << defaults.lr.every << ")\n"
       << "  --max_steps N        stop after N steps (default: train every epoch to its end)\n"
       << "  --help               show this help\n";
  return text.str();
}

// A command line that cannot run: the message says why, main prints it and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

long parse_positive(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  long value = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value <= 0) {
    throw UsageError(flag + " expects a positive integer, got '" + text + "'");
  }
  return value;
}

float parse_positive_float(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  float value = 0;
  try {
    value = std::stof(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(value > 0)) {
    throw UsageError(flag + " expects a positive number, got '" + text + "'");
  }
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  dtk::TrainOptions& t = o.train;
  using Setter = std::function<void(const std::string&, const std::string&)>;
  const std::map<std::string, Setter> with_value = {
      {"--mp_size", [&](auto& f, auto& v) { o.parallelism.mp_size = parse_positive(f, v); }},
      {"--dp_size", [&](auto& f, auto& v) { o.parallelism.dp_size = parse_positive(f, v); }},
      {"--epochs", [&](auto& f, auto& v) { t.epochs = parse_positive(f, v); }},
      {"--data", [&](auto&, auto& v) { o.data_dir = v; }},
      {"--batch_size", [&](auto& f, auto& v) { t.batch_size = parse_positive(f, v); }},
      {"--lr", [&](auto& f, auto& v) { t.lr.initial = parse_positive_float(f, v); }},
      {"--lr_decay", [&](auto& f, auto& v) { t.lr.decay = parse_positive_float(f, v); }},
      {"--lr_decay_every", [&](auto& f, auto& v) { t.lr.every = parse_positive(f, v); }},
      {"--max_steps", [&](auto& f, auto& v) { t.max_steps = parse_positive(f, v); }},
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else if (arg == "--megatron-mp") {
      o.parallelism.megatron = true;
    } else if (with_value.count(arg) == 0) {
      throw UsageError("unknown option '" + arg + "' (see --help)");
    } else if (i + 1 == argc) {
      throw UsageError(arg + " needs a value (see --help)");
    } else {
      with_value.at(arg)(arg, argv[++i]);
    }
  }
  return o;
}

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
  if (p.mp_size * p.dp_size != ranks) {
    throw UsageError("--mp_size " + std::to_string(p.mp_size) + " x --dp_size " +
                     std::to_string(p.dp_size) + " = " + std::to_string(p.mp_size * p.dp_size) +
                     " ranks, but mpirun started " + std::to_string(ranks) +
                     ": run it with  mpirun -n " + std::to_string(p.mp_size * p.dp_size));
  }
}

std::string megabytes(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%10.2f", bytes / double(1 << 20));
  return text;
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
  std::printf("\nCommunication during training (MB sent by rank 0, estimated):\n");
  print_row("layer", "DP", "MP");
  for (const LayerUsage& l : layers)
    print_row(l.name, megabytes(l.dp_bytes), megabytes(l.mp_bytes));
  std::printf("\nPeak memory per pass (MB of tensors on rank 0):\n");
  print_row("layer", "forward", "backward");
  for (const LayerUsage& l : layers) {
    print_row(l.name, megabytes(l.forward_bytes), megabytes(l.backward_bytes));
  }
  std::fflush(stdout);
}

dtk::Mnist load_data(const std::string& dir, const dtk::Communicator& world, int classes) {
  try {
    return dtk::load_mnist_on_rank0(world, dir, classes);
  } catch (const dtk::DataError& e) {
    if (dir != dtk::kFashionMnistDir) throw;
    throw dtk::DataError(std::string(e.what()) +
                         " (install Debian's dataset-fashion-mnist, or pass --data DIR)");
  }
}

// Everything after the command line was accepted. Collective over world.
void run(const Options& o, const dtk::Communicator& world) {
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
  std::printf(
      "Trained %ld steps on %lld images in %.2f s (%.1fk images/s), last epoch loss "
      "%.4f, accuracy %.4f\n",
      report.steps, static_cast<long long>(report.images), report.seconds,
      report.images / report.seconds / 1000, report.last_epoch.mean_loss(),
      report.last_epoch.accuracy());
  std::printf("Test accuracy: %.4f (%zu images)\n", accuracy, data.test.count);
  std::fflush(stdout);
  print_breakdown(layers);
  std::cout << std::flush;
}

}  // namespace

int main(int argc, char** argv) {
  // Open MPI's "cm" transport probes for Omni-Path and libfabric network cards at start-up,
  // about 0.2 s per run on a machine without them. Ranks on one machine talk through shared
  // memory, so skip it (unless the user chose the transport: then OMPI_MCA_pml is set).
  setenv("OMPI_MCA_pml", "^cm", /*overwrite=*/0);
  int threads = 0;  // the data loader has threads of its own, which never call MPI
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &threads);
  int status = 0;
  {
    dtk::Communicator world;
    const bool root = world.Get_rank() == 0;
    // Every rank sees the same command line and data, so every rank fails the same way;
    // rank 0 alone says why.
    try {
      const Options options = parse(argc, argv);
      if (options.help) {
        if (root) std::cout << help_text();
      } else {
        check_layout(options, world.Get_size());
        run(options, world);
      }
    } catch (const UsageError& e) {
      if (root) std::cerr << "unified_train: " << e.what() << "\n";
      status = 2;
    } catch (const dtk::DataError& e) {
      if (root) std::cerr << "unified_train: " << e.what() << "\n";
      status = 2;
    } catch (const std::exception& e) {
      if (root) std::cerr << "unified_train: " << e.what() << "\n";
      status = 1;
    }
  }
  MPI_Finalize();
  return status;
}
