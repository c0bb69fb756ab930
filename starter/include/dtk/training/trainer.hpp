// The training loop and the test-set evaluation, as unified_train runs them.
#pragma once

#include <cstdint>
#include <iosfwd>

#include "dtk/communicator.hpp"
#include "dtk/data/shard.hpp"
#include "dtk/mlp/mlp.hpp"
#include "dtk/training/progress_line.hpp"
#include "dtk/training/sgd.hpp"

namespace dtk {

// The defaults reach about 0.83 test accuracy on Fashion-MNIST in one epoch, in every layout.
struct TrainOptions {
  int epochs = 1;
  int batch_size = 128;  // global: each step trains on batch_size / dp_size images per replica
  StepDecay lr;
  long max_steps = 0;       // stop after this many steps (0: run every epoch to its end)
  int progress_lines = 10;  // progress lines rank 0 prints per epoch (0: none)
};

struct TrainReport {
  long steps = 0;
  std::int64_t images = 0;  // trained on, over all replicas
  double seconds = 0;
  BatchStats last_epoch;  // loss and accuracy over the last epoch's batches, all replicas
};

// Collective over world (all ranks of the model). Trains `model` on `data`, this rank's shard,
// in steps of batch_size / dp_size images; the last step of an epoch takes what is left.
// Rank 0 writes progress lines (loss and accuracy since the previous line, throughput) to
// `progress`.
TrainReport train(MLP& model, const Shard& data, const TrainOptions& options,
                  const Communicator& world, std::ostream& progress);

// Collective over world: the model's accuracy on the test images of all replicas
// (`test` is this rank's part), in batches of up to batch_size images per replica.
double evaluate(MLP& model, const Shard& test, const Communicator& world, int batch_size);

}  // namespace dtk
