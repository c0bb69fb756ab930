// unified_train's command line and its two trainers:
//   unified_train_replicas.cpp  assignment 1: the 784-256-10 MLP, tensor parallel (naive or
//                               Megatron) inside each replica, data parallel across them
//   unified_train_pipeline.cpp  assignment 2: a deep MLP as a pipeline of stages, data parallel
//                               with ZeRO inside each stage
// A student bundle holds the trainer of its own assignment (CMake adds the files it can build).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <dtk/data/mnist.hpp>
#include <dtk/data_parallel_preprocess.hpp>
#include <dtk/func_impl.hpp>
#include <dtk/training/pipeline_trainer.hpp>
#include <dtk/training/trainer.hpp>
#include <dtk/zero.hpp>

#include "command_line.hpp"

namespace dtk::unified_train {

// Adam's default learning rate (SGD's is TrainOptions' own).
constexpr float kAdamLearningRate = 1e-3f;

struct Options {
  Parallelism parallelism;  // --mp_size, --dp_size, --megatron-mp
  std::string data_dir = kFashionMnistDir;
  TrainOptions train;
  // Assignment 2's own flags; run_pipeline completes them with the shared ones above.
  PipelineTrainOptions pipeline;
  std::optional<float> lr;          // --lr as given (each trainer has its own default)
  std::string report_file;          // --report FILE.json
  std::string trace_file;           // --trace FILE.json
  std::string timeline_file;        // --timeline FILE.svg
  std::string first_pipeline_flag;  // the first of assignment 2's flags given ("" if none)
  bool help = false;
};

using namespace command_line;  // UsageError, parse_*, mebibytes, write_file, check_writable

// Collective: the data set (load_mnist_on_rank0), with a hint where Fashion-MNIST comes from.
Mnist load_data(const std::string& dir, const Communicator& world, int classes);

// "Trained 468 steps on 59904 images in ... s" and "Test accuracy: ..." (rank 0, both trainers).
void print_result(long steps, std::int64_t images, double seconds, const BatchStats& last_epoch,
                  double test_accuracy, std::size_t test_images);

// Collective over world; each throws UsageError for flags its model cannot use.
void run_replicas(const Options& options, const Communicator& world);
void run_pipeline(const Options& options, const Communicator& world);

}  // namespace dtk::unified_train
