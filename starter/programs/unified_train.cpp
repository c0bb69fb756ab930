// unified_train: trains an MLP on Fashion-MNIST (or any MNIST-format directory) on many ranks,
// with your functions doing all the communication.
//
//   assignment 1  mpirun -n 8 ./unified_train --mp_size 2 --dp_size 4 [--megatron-mp]
//                 the 784-256-10 MLP, tensor parallel inside each replica, data parallel
//                 across replicas (Parts 1, 2, 3 and 6)
//   assignment 2  mpirun -n 6 ./unified_train --pp_size 3 --dp_size 2 --hidden 256,256
//                   --microbatches 4 --schedule 1f1b [--optimizer adam --zero 2]
//                 a deeper MLP as a pipeline of stages, data parallel with ZeRO inside each
//                 stage (Parts 7, 8 and 9)
// --help lists every flag. This file reads the command line and hands it to the trainer of the
// assignment its flags belong to (unified_train.hpp).
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "unified_train.hpp"

namespace dtk::unified_train {

namespace {

std::string help_text() {
  const TrainOptions defaults;
  const PipelineTrainOptions pipeline;
  std::ostringstream text;
  text << "usage: mpirun -n N unified_train [options]\n"
       << "Trains an MLP on Fashion-MNIST and reports the test accuracy, the communication and\n"
       << "the memory of every rank.\n\n"
       << "Layout (N = mp_size x dp_size x pp_size ranks):\n"
       << "  --mp_size M          tensor parallel: ranks per replica (default 1; assignment 1)\n"
       << "  --megatron-mp        Megatron model parallelism: fc2 split by input rows (default:\n"
       << "                       naive, both layers split by output columns)\n"
       << "  --dp_size D          data-parallel replicas (default 1)\n"
       << "  --pp_size P          pipeline stages (default 1; assignment 2)\n"
       << "  --microbatches K     micro-batches per replica and step (default "
       << pipeline.num_microbatches << ")\n"
       << "  --schedule S         gpipe or 1f1b (default 1f1b)\n"
       << "  --hidden W1,W2,...   hidden widths: 256,256 is the 784-256-256-10 MLP (default 256)\n"
       << "  --optimizer O        sgd or adam (default sgd)\n"
       << "  --zero Z             ZeRO stage 0, 1, 2 or 3 of the data-parallel ranks (default 0)\n"
       << "Training:\n"
       << "  --epochs E           passes over the training set (default " << defaults.epochs
       << ")\n"
       << "  --data DIR           MNIST-format directory (default " << kFashionMnistDir << ")\n"
       << "  --batch_size B       global batch: B / D images per replica and step (default "
       << defaults.batch_size << ")\n"
       << "  --lr LR              initial learning rate (default " << defaults.lr.initial
       << " with sgd, " << kAdamLearningRate << " with adam)\n"
       << "  --lr_decay F         multiply the learning rate by F... (default " << defaults.lr.decay
       << ")\n"
       << "  --lr_decay_every S   ...every S steps (default " << defaults.lr.every << ")\n"
       << "  --max_steps N        stop after N steps (default: train every epoch to its end)\n"
       << "  --seed S             the weights and the order of the images (default "
       << pipeline.seed << "; assignment 2)\n"
       << "Output (assignment 2):\n"
       << "  --report FILE.json   loss, accuracy, weights_l2, and each rank's memory, bytes sent\n"
       << "                       and bubble fraction\n"
       << "  --trace FILE.json    a Chrome trace of the run: open it in https://ui.perfetto.dev\n"
       << "                       or chrome://tracing\n"
       << "  --timeline FILE.svg  the last step drawn: one row per rank, F and B boxes\n"
       << "  --help               show this help\n";
  return text.str();
}

// "256,256" -> the widths 784, 256, 256, 10.
std::vector<int> parse_hidden(const std::string& flag, const std::string& text) {
  std::vector<int> widths = {MlpDims{}.in_dim};
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    widths.push_back(static_cast<int>(parse_positive(flag + " (each width)", item)));
  }
  if (widths.size() == 1 || text.back() == ',') {
    throw UsageError(flag + " expects hidden widths separated by commas, e.g. 256,256; got '" +
                     text + "'");
  }
  widths.push_back(MlpDims{}.out_dim);
  return widths;
}

Options parse(int argc, char** argv) {
  Options o;
  TrainOptions& t = o.train;
  PipelineTrainOptions& p = o.pipeline;
  using Setter = std::function<void(const std::string&, const std::string&)>;
  const std::map<std::string, Setter> with_value = {
      {"--mp_size", [&](auto& f, auto& v) { o.parallelism.mp_size = parse_positive(f, v); }},
      {"--dp_size", [&](auto& f, auto& v) { o.parallelism.dp_size = parse_positive(f, v); }},
      {"--epochs", [&](auto& f, auto& v) { t.epochs = parse_positive(f, v); }},
      {"--data", [&](auto&, auto& v) { o.data_dir = v; }},
      {"--batch_size", [&](auto& f, auto& v) { t.batch_size = parse_positive(f, v); }},
      {"--lr", [&](auto& f, auto& v) { o.lr = static_cast<float>(parse_positive_number(f, v)); }},
      {"--lr_decay",
       [&](auto& f, auto& v) { t.lr.decay = static_cast<float>(parse_positive_number(f, v)); }},
      {"--lr_decay_every", [&](auto& f, auto& v) { t.lr.every = parse_positive(f, v); }},
      {"--max_steps", [&](auto& f, auto& v) { t.max_steps = parse_positive(f, v); }},
  };
  // Assignment 2's flags: any of them selects the pipeline trainer.
  const std::map<std::string, Setter> pipeline_flags = {
      {"--pp_size", [&](auto& f, auto& v) { p.pp_size = parse_positive(f, v); }},
      {"--microbatches", [&](auto& f, auto& v) { p.num_microbatches = parse_positive(f, v); }},
      {"--schedule",
       [&](auto& f, auto& v) {
         p.schedule = parse_choice<Schedule>(
             f, v, {{"gpipe", Schedule::GPipe}, {"1f1b", Schedule::OneFOneB}});
       }},
      {"--hidden", [&](auto& f, auto& v) { p.widths = parse_hidden(f, v); }},
      {"--optimizer",
       [&](auto& f, auto& v) {
         p.optimizer = parse_choice<OptimizerKind>(
             f, v, {{"sgd", OptimizerKind::Sgd}, {"adam", OptimizerKind::Adam}});
       }},
      {"--zero",
       [&](auto& f, auto& v) { p.zero_stage = static_cast<int>(parse_integer(f, v, 0)); }},
      {"--seed",
       [&](auto& f, auto& v) { p.seed = static_cast<std::uint32_t>(parse_integer(f, v, 0)); }},
      {"--report", [&](auto&, auto& v) { o.report_file = v; }},
      {"--trace", [&](auto&, auto& v) { o.trace_file = v; }},
      {"--timeline", [&](auto&, auto& v) { o.timeline_file = v; }},
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool pipeline_flag = pipeline_flags.count(arg) != 0;
    if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else if (arg == "--megatron-mp") {
      o.parallelism.megatron = true;
    } else if (!pipeline_flag && with_value.count(arg) == 0) {
      throw UsageError("unknown option '" + arg + "' (see --help)");
    } else if (i + 1 == argc) {
      throw UsageError(arg + " needs a value (see --help)");
    } else {
      (pipeline_flag ? pipeline_flags : with_value).at(arg)(arg, argv[++i]);
      if (pipeline_flag && o.first_pipeline_flag.empty()) o.first_pipeline_flag = arg;
    }
  }
  if (o.lr) t.lr.initial = *o.lr;
  return o;
}

// The trainer the flags ask for, among those this build holds: a student bundle has its own
// assignment's only.
void run(const Options& o, const Communicator& world) {
  const bool wants_pipeline = !o.first_pipeline_flag.empty();
#if DTK_WITH_REPLICAS_TRAINER
  if (!wants_pipeline) return run_replicas(o, world);
#endif
#if DTK_WITH_PIPELINE_TRAINER
  return run_pipeline(o, world);
#else
  throw UsageError(o.first_pipeline_flag +
                   " belongs to assignment 2 (pipelines and ZeRO), whose files this build "
                   "does not hold");
#endif
}

}  // namespace

Mnist load_data(const std::string& dir, const Communicator& world, int classes) {
  try {
    return dtk::load_mnist_on_rank0(world, dir, classes);
  } catch (const dtk::DataError& e) {
    if (dir != dtk::kFashionMnistDir) throw;
    throw dtk::DataError(std::string(e.what()) +
                         " (install Debian's dataset-fashion-mnist, or pass --data DIR)");
  }
}

void print_result(long steps, std::int64_t images, double seconds, const BatchStats& last_epoch,
                  double test_accuracy, std::size_t test_images) {
  std::printf(
      "Trained %ld steps on %lld images in %.2f s (%.1fk images/s), last epoch loss %.4f, "
      "accuracy %.4f\n",
      steps, static_cast<long long>(images), seconds, images / seconds / 1000,
      last_epoch.mean_loss(), last_epoch.accuracy());
  std::printf("Test accuracy: %.4f (%zu images)\n", test_accuracy, test_images);
  std::fflush(stdout);
}

}  // namespace dtk::unified_train

int main(int argc, char** argv) {
  using namespace dtk::unified_train;
  return run_mpi_program(argc, argv, "unified_train", [&](const dtk::Communicator& world) {
    const Options options = parse(argc, argv);
    if (!options.help) return run(options, world);
    if (world.Get_rank() == 0) std::cout << help_text();
  });
}
