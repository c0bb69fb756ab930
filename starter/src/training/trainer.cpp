#include "dtk/training/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <ostream>
#include <stdexcept>
#include <string>

namespace dtk {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Sums each replica's totals over all ranks. The ranks of a replica compute the same
// loss on the same images, so every replica is counted mp_size times: divide that out.
BatchStats over_all_replicas(const BatchStats& mine, Communicator& world, int mp_size) {
  xt::xtensor<double, 1> local = {mine.loss_sum, double(mine.correct), double(mine.count)};
  xt::xtensor<double, 1> total = xt::zeros<double>({3});
  world.Allreduce(local, total, MPI_SUM);
  return BatchStats{total(0) / mp_size, std::int64_t(total(1)) / mp_size,
                    std::int64_t(total(2)) / mp_size};
}

// Every rank must take the same number of steps, or some would wait forever in a collective.
void check_steps(long steps, const Communicator& world) {
  long fewest = steps, most = steps;
  MPI_Allreduce(MPI_IN_PLACE, &fewest, 1, MPI_LONG, MPI_MIN, world.handle());
  MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_LONG, MPI_MAX, world.handle());
  if (fewest != most) {
    throw std::runtime_error(
        "split_train gave the replicas different numbers of images: " + std::to_string(fewest) +
        " to " + std::to_string(most) + " steps per epoch");
  }
  if (most == 0) throw std::runtime_error("split_train gave the ranks no training images");
}

}  // namespace

TrainReport train(MLP& model, const Shard& data, const TrainOptions& options,
                  const Communicator& world_comm, std::ostream& progress) {
  Communicator world = world_comm;
  const bool root = world.Get_rank() == 0;
  const int mp_size = model.parallelism().mp_size;
  const std::size_t local_batch = options.batch_size / model.parallelism().dp_size;
  const long steps_per_epoch = (data.size() + local_batch - 1) / local_batch;
  check_steps(steps_per_epoch, world);
  const long lines = std::max(options.progress_lines, 1);
  const long report_every = std::max(1L, steps_per_epoch / lines);

  TrainReport report;
  Matrix x;
  Labels labels;
  const Clock::time_point start = Clock::now();
  bool done = false;
  for (int epoch = 1; epoch <= options.epochs && !done; ++epoch) {
    report.last_epoch = {};
    BatchStats recent;  // this replica's totals since the last report
    for (long step = 1; step <= steps_per_epoch && !done; ++step) {
      const std::size_t first = (step - 1) * local_batch;
      data.batch(first, std::min(local_batch, data.size() - first), x, labels);
      const float lr = options.lr.at(report.steps);
      recent += model.train_step(x, labels, lr);
      ++report.steps;
      done = report.steps == options.max_steps;

      if (step % report_every != 0 && step != steps_per_epoch && !done) continue;
      const BatchStats total = over_all_replicas(recent, world, mp_size);
      recent = {};
      report.last_epoch += total;
      report.images += total.count;
      if (root && options.progress_lines > 0) {
        progress << progress_line(epoch, options.epochs, step, steps_per_epoch, total, lr,
                                  report.images / seconds_since(start))
                 << std::endl;
      }
    }
  }
  report.seconds = seconds_since(start);
  return report;
}

double evaluate(MLP& model, const Shard& test, const Communicator& world_comm, int batch_size) {
  Communicator world = world_comm;
  const std::size_t local_batch = batch_size;
  BatchStats mine;
  Matrix x;
  Labels labels;
  for (std::size_t first = 0; first < test.size(); first += local_batch) {
    test.batch(first, std::min(local_batch, test.size() - first), x, labels);
    mine += model.forward(x, labels);
  }
  return over_all_replicas(mine, world, model.parallelism().mp_size).accuracy();
}

}  // namespace dtk
