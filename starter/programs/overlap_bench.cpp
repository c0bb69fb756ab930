// overlap_bench: how much communication Part 15 hides, measured on your own 15.2 and 15.3.
//
//   mpirun -n 2 ./overlap_bench [--what buckets|ring|both] [--layers L] [--width N]
//       [--bucket_mb X] [--block_rows K] [--block_cols D] [--steps S]
//
// Buckets: a backward of L layers, each making the gradient of an N x N weight (a product of
// two N x N matrices through BLAS) and of an N bias, timed four ways:
//   compute    the backward alone, nothing sent
//   after      the backward, then MPI's Allreduce of every gradient at once (the anchor: no
//              overlap, MPI's own algorithm)
//   one ring   the backward, then your GradientBuckets with a single bucket, all in finish()
//   buckets    your GradientBuckets with buckets of X MB (assign_buckets, the first bucket as
//              large as the others), progress() after every layer
// Ring: every rank holds a block of K rows of keys and values (D columns) and attends its K
// queries to each block in turn (two products through BLAS), timed three ways:
//   compute    p attends on this rank's own block, nothing sent
//   blocking   Part 11's order: attend, then Sendrecv the block on, p - 1 times
//   pipelined  your pipelined_ring
// Each row is the median over S steps of the slowest rank's time; exposed = time - compute,
// the communication nothing hid. Results are checked (the sums against MPI's, each attended
// block against its owner's), and a wrong one fails the run (exit status 1).
//
// Ranks should not outnumber cores: beyond that the timings are the scheduler's.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xreducer.hpp>

#include <dtk/overlap.hpp>

#include "command_line.hpp"
#include "statistics.hpp"

namespace {

using namespace dtk::command_line;
using dtk::statistics::median;
using Matrix = xt::xtensor<double, 2>;

struct Options {
  bool buckets = true, ring = true;
  long layers = 12, width = 256;
  double bucket_mb = 1;
  long block_rows = 512, block_cols = 256;
  long steps = 20;
  bool help = false;
};

constexpr const char* kUsage =
    "usage: mpirun -n P overlap_bench [options]\n"
    "  --what W             buckets, ring or both (default both)\n"
    "  --layers L           buckets: layers of the backward (default 12)\n"
    "  --width N            buckets: each layer's weight is N x N doubles (default 256)\n"
    "  --bucket_mb X        buckets: the bucket cap, in MB (default 1)\n"
    "  --block_rows K       ring: rows of each rank's block (default 512)\n"
    "  --block_cols D       ring: columns of the keys and values (default 256: 1 MB blocks)\n"
    "  --steps S            timed steps per row, after one untimed (default 20)\n";

Options parse(int argc, char** argv) {
  Options o;
  const std::map<std::string, FlagSetter> with_value = {
      {"--what",
       [&](auto& f, auto& v) {
         const int what = parse_choice<int>(f, v, {{"buckets", 1}, {"ring", 2}, {"both", 3}});
         o.buckets = what & 1;
         o.ring = what & 2;
       }},
      {"--layers", [&](auto& f, auto& v) { o.layers = parse_positive(f, v); }},
      {"--width", [&](auto& f, auto& v) { o.width = parse_positive(f, v); }},
      {"--bucket_mb", [&](auto& f, auto& v) { o.bucket_mb = parse_positive_number(f, v); }},
      {"--block_rows", [&](auto& f, auto& v) { o.block_rows = parse_positive(f, v); }},
      {"--block_cols", [&](auto& f, auto& v) { o.block_cols = parse_positive(f, v); }},
      {"--steps", [&](auto& f, auto& v) { o.steps = parse_positive(f, v); }},
  };
  parse_flags(argc, argv, with_value, o.help);
  return o;
}

// A matrix of values that depend on the rank and the seed only.
Matrix values(std::size_t rows, std::size_t cols, int rank, int seed) {
  Matrix m({rows, cols});
  for (std::size_t i = 0; i < m.size(); ++i)
    m.flat(i) =
        double((i * 7919 + std::size_t(rank) * 104729 + std::size_t(seed) * 13) % 1000) / 1000.0 -
        0.5;
  return m;
}

// One timed way of doing a step: `run` does it, `seconds` collects the slowest rank's times.
struct Way {
  std::string name;
  std::function<void()> run;
  std::vector<double> seconds;
};

// Every way once untimed, then `steps` rounds of every way in turn (so that a noisy moment
// falls on all of them alike); the median of each.
void time_ways(std::vector<Way>& ways, long steps, const dtk::Communicator& world) {
  for (Way& way : ways) way.run();
  for (long step = 0; step < steps; ++step) {
    for (Way& way : ways) {
      MPI_Barrier(world.handle());
      const double begin = MPI_Wtime();
      way.run();
      double mine = MPI_Wtime() - begin, slowest = 0;
      MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, world.handle());
      way.seconds.push_back(slowest);
    }
  }
}

std::string fixed(double value, int decimals) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(decimals) << value;
  return text.str();
}

// The ways' medians; exposed: time - the first way's (compute alone); the last column: time
// against the second way's (the anchor).
void print_table(const std::string& title, const std::vector<Way>& ways,
                 const dtk::Communicator& world) {
  if (world.Get_rank() != 0) return;
  const double compute = median(ways.front().seconds), anchor = median(ways.at(1).seconds);
  std::cout << "\n" << title << "\n";
  std::printf("  %-10s %10s %13s %11s\n", "", "time (ms)", "exposed (ms)",
              ("/ " + ways[1].name).c_str());
  for (const Way& way : ways) {
    const double t = median(way.seconds);
    std::printf("  %-10s %10.2f %13.2f %11.2f\n", way.name.c_str(), 1e3 * t,
                1e3 * std::max(0.0, t - compute), t / anchor);
  }
}

// ------------------------------------------ buckets -------------------------------------------

long bench_buckets(const Options& o, dtk::Communicator& world) {
  const int r = world.Get_rank();
  const auto n = static_cast<std::size_t>(o.width);
  const std::size_t parameters = 2 * static_cast<std::size_t>(o.layers);
  std::vector<std::size_t> sizes;  // parameter 2l: layer l's weight, 2l + 1: its bias
  for (long l = 0; l < o.layers; ++l) sizes.insert(sizes.end(), {n * n, n});
  std::vector<std::size_t> bytes;
  for (std::size_t size : sizes) bytes.push_back(size * sizeof(double));
  const auto cap = static_cast<std::size_t>(o.bucket_mb * (1 << 20));
  const std::vector<std::vector<int>> buckets = dtk::assign_buckets(bytes, cap, cap);
  std::vector<int> everything(parameters);
  for (std::size_t i = 0; i < parameters; ++i) everything[i] = static_cast<int>(parameters - 1 - i);

  const Matrix input = values(n, n, r, 1), output_grad = values(n, n, r, 2);
  std::vector<xt::xtensor<double, 1>> gradients(parameters);
  // The backward, the last layer first; after each layer, `layer_done`.
  const auto backward = [&](const std::function<void(int layer)>& layer_done) {
    for (int l = static_cast<int>(o.layers) - 1; l >= 0; --l) {
      gradients[2 * l] = xt::flatten(xt::linalg::dot(xt::transpose(input), output_grad));
      gradients[2 * l + 1] = xt::sum(output_grad, {0}) * double(l + 1);
      layer_done(l);
    }
  };
  std::vector<xt::xtensor<double, 1>> sums;
  const auto reduce_with = [&](const std::vector<std::vector<int>>& assignment, bool overlap) {
    dtk::GradientBuckets reducer(assignment, sizes, world);
    backward([&](int l) {
      if (!overlap) return;
      reducer.gradient_ready(2 * l + 1, gradients[2 * l + 1]);
      reducer.gradient_ready(2 * l, gradients[2 * l]);
      reducer.progress();
    });
    if (!overlap) {
      for (int i : assignment.front()) reducer.gradient_ready(i, gradients[i]);
    }
    sums = reducer.finish();
  };
  std::vector<double> mpi_sums;  // every parameter's, one after the other
  std::vector<Way> ways = {
      {"compute", [&] { backward([](int) {}); }, {}},
      {"after",
       [&] {
         backward([](int) {});
         mpi_sums.clear();
         for (const auto& g : gradients) mpi_sums.insert(mpi_sums.end(), g.begin(), g.end());
         MPI_Allreduce(MPI_IN_PLACE, mpi_sums.data(), static_cast<int>(mpi_sums.size()), MPI_DOUBLE,
                       MPI_SUM, world.handle());
       },
       {}},
      {"one ring", [&] { reduce_with({everything}, false); }, {}},
      {"buckets", [&] { reduce_with(buckets, true); }, {}},
  };
  time_ways(ways, o.steps, world);

  long wrong = 0;
  for (std::size_t i = 0, at = 0; i < parameters; at += sizes[i++]) {
    if (sums.size() != parameters || sums[i].size() != sizes[i]) {
      ++wrong;
      continue;
    }
    for (std::size_t j = 0; j < sizes[i]; ++j) {
      const double expected = mpi_sums[at + j];
      wrong += std::abs(sums[i](j) - expected) > 1e-12 * (1 + std::abs(expected));
    }
  }
  long total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, world.handle());
  double megabytes = 0;
  for (std::size_t b : bytes) megabytes += double(b) / (1 << 20);
  print_table("Gradient buckets: " + std::to_string(o.layers) + " layers, " + fixed(megabytes, 1) +
                  " MB of gradients in " + std::to_string(buckets.size()) +
                  (buckets.size() == 1 ? " bucket of " : " buckets of ") + fixed(o.bucket_mb, 2) +
                  " MB, " + std::to_string(world.Get_size()) + " ranks",
              ways, world);
  if (r == 0 && total > 0) std::cout << "  WRONG: " << total << " summed elements differ\n";
  return total;
}

// ------------------------------------------- ring ---------------------------------------------

long bench_ring(const Options& o, dtk::Communicator& world) {
  const int p = world.Get_size(), r = world.Get_rank();
  const auto rows = static_cast<std::size_t>(o.block_rows);
  const auto cols = static_cast<std::size_t>(o.block_cols);
  const Matrix queries = values(rows, cols, r, 3);
  dtk::KeyValueBlock<double> mine{values(rows, cols, r, 4), values(rows, cols, r, 5), {}};
  for (std::size_t i = 0; i < rows; ++i) mine.positions.push_back(r * int(rows) + int(i));

  long wrong = 0;
  int calls = 0;
  Matrix out;
  // What a ring step computes on a block: scores = Q·Kᵀ, then scores·V (no softmax: the cost of
  // attention's two products, which is what hides the transfer).
  const std::function<void(const dtk::KeyValueBlock<double>&)> attend =
      [&](const dtk::KeyValueBlock<double>& block) {
        const int owner = (r - calls++ % p + p) % p;
        wrong += block.positions.empty() || block.positions.front() != owner * int(rows);
        out = xt::linalg::dot(xt::linalg::dot(queries, xt::transpose(block.k)), block.v);
      };
  std::vector<Way> ways = {
      {"compute",
       [&] {
         for (int h = 0; h < p; ++h) {
           out = xt::linalg::dot(xt::linalg::dot(queries, xt::transpose(mine.k)), mine.v);
         }
       },
       {}},
      {"blocking",
       [&] {
         dtk::KeyValueBlock<double> current = mine, next = mine;
         for (int h = 0; h < p; ++h) {
           attend(current);
           if (h == p - 1) break;
           world.Sendrecv(current.k, (r + 1) % p, next.k, (r - 1 + p) % p);
           world.Sendrecv(current.v, (r + 1) % p, next.v, (r - 1 + p) % p);
           world.Sendrecv(current.positions, (r + 1) % p, next.positions, (r - 1 + p) % p);
           std::swap(current, next);
         }
       },
       {}},
      {"pipelined", [&] { dtk::pipelined_ring<double>(mine, world, attend); }, {}},
  };
  time_ways(ways, o.steps, world);
  long total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, world.handle());
  print_table("Ring: blocks of " + std::to_string(rows) + " x " + std::to_string(cols) +
                  " keys and values, " + std::to_string(p) + " ranks",
              ways, world);
  if (r == 0 && total > 0) std::cout << "  WRONG: " << total << " blocks not the ring's\n";
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  return run_mpi_program(argc, argv, "overlap_bench", [&](const dtk::Communicator& world_handle) {
    const Options o = parse(argc, argv);
    if (o.help) {
      if (world_handle.Get_rank() == 0) std::cout << kUsage;
      return;
    }
    dtk::Communicator world = world_handle;
    long wrong = 0;
    if (o.buckets) wrong += bench_buckets(o, world);
    if (o.ring) wrong += bench_ring(o, world);
    if (wrong > 0) throw std::runtime_error("some results were wrong (above)");
  });
}
