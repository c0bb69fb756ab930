// Warm-ups: watch the Communicator's operations. Part 0 (assignment 1): the collectives and
// Split; assignment 2: point-to-point messages (sendrecv, ring).
//
//   mpirun -n 4 ./mpi_test --test_case allreduce|allgather|reduce_scatter|split|sendrecv|ring
//
// Each case prints what every rank holds before and after the call, in rank order.
#include <dtk/communicator.hpp>
#include <dtk/freed_memory.hpp>
#include <dtk/rank_output.hpp>
#include <dtk/single_machine_mpi.hpp>

#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include <xtensor/xio.hpp>
#include <xtensor/xtensor.hpp>

namespace {

using Values = xt::xtensor<double, 1>;

std::string show(const Values& values) {
  std::ostringstream text;
  text << values;
  return text.str();
}

// Prints a title on rank 0, then every rank's values.
void print_all(dtk::Communicator& world, const std::string& title, const Values& values) {
  if (world.Get_rank() == 0) std::cout << title << "\n";
  dtk::print_in_rank_order(world, show(values));
}

void print_bytes(dtk::Communicator& comm) {
  const std::string bytes = std::to_string(comm.total_bytes_transferred()) + " bytes sent (est.)";
  dtk::print_in_rank_order(comm, bytes);
}

// Every rank r holds [r, r + 10, r + 20]; afterwards each holds the element-wise sum.
void allreduce(dtk::Communicator& world) {
  const double r = world.Get_rank();
  Values mine = {r, r + 10, r + 20};
  Values sum = xt::zeros<double>({3});
  print_all(world, "Allreduce(MPI_SUM). Before:", mine);
  world.Allreduce(mine, sum, MPI_SUM);
  print_all(world, "After: every rank holds the element-wise sum", sum);
  print_bytes(world);
}

// Every rank r holds [10r, 10r + 1]; afterwards each holds all blocks, rank 0's first.
void allgather(dtk::Communicator& world) {
  const double r = world.Get_rank();
  Values mine = {10 * r, 10 * r + 1};
  Values all = xt::zeros<double>({2 * world.Get_size()});
  print_all(world, "Allgather. Before:", mine);
  world.Allgather(mine, all);
  print_all(world, "After: every rank holds every block, in rank order", all);
  print_bytes(world);
}

// Every rank holds p blocks of 2 values, block b = [b + 100r, b + 100r]; rank b receives the sum
// over ranks of block b.
void reduce_scatter(dtk::Communicator& world) {
  const int p = world.Get_size();
  const double r = world.Get_rank();
  Values mine = xt::zeros<double>({2 * p});
  for (int i = 0; i < 2 * p; ++i) mine(i) = i / 2 + 100 * r;
  Values block = xt::zeros<double>({2});
  print_all(world, "Reduce_scatter(MPI_SUM), blocks of 2. Before:", mine);
  world.Reduce_scatter(mine, block, MPI_SUM);
  print_all(world, "After: rank b holds the sum over ranks of block b", block);
  print_bytes(world);
}

// Splits the world into two groups (even and odd ranks) and sums the ranks within each group.
void split(dtk::Communicator& world) {
  const int r = world.Get_rank();
  dtk::Communicator group = world.Split(/*color=*/r % 2, /*key=*/r);
  Values mine = {static_cast<double>(r)};
  Values sum = xt::zeros<double>({1});
  print_all(world,
            "Split(color = rank % 2, key = rank), then Allreduce in each group. Before:", mine);
  group.Allreduce(mine, sum, MPI_SUM);
  const std::string where = "color " + std::to_string(r % 2) + ", rank " +
                            std::to_string(group.Get_rank()) + " of " +
                            std::to_string(group.Get_size()) + " in its group, group sum ";
  if (r == 0) std::cout << "After: each rank holds the sum of its own group only\n";
  dtk::print_in_rank_order(world, where + show(sum));
}

// Ranks swap values in pairs (0 with 1, 2 with 3, ...) with one Sendrecv each; with an odd
// number of ranks the last one sends to itself.
void sendrecv(dtk::Communicator& world) {
  const int r = world.Get_rank();
  const int partner = (r ^ 1) < world.Get_size() ? (r ^ 1) : r;
  Values mine = {10.0 * r, 10.0 * r + 1};
  Values theirs = xt::zeros<double>({2});
  print_all(world, "Sendrecv with the partner rank ^ 1. Before:", mine);
  world.Sendrecv(mine, partner, theirs, partner);
  print_all(world, "After: every rank holds its partner's values", theirs);
  print_bytes(world);
}

// A token travels once around the ring 0 -> 1 -> ... -> p-1 -> 0, with Send and Recv. Each
// rank appends its own rank to it, so the token records its path. Rank 0 sends first and
// receives last; every other rank must receive before it can send.
void ring(dtk::Communicator& world) {
  const int p = world.Get_size();
  const int r = world.Get_rank();
  const int next = (r + 1) % p, previous = (r + p - 1) % p;
  if (r == 0) std::cout << "A token passed around the ring with Send and Recv\n";
  std::string view;
  if (p == 1) {
    view = "alone: no ring to pass the token around (run with 2 ranks or more)";
  } else if (r == 0) {
    const Values token = {0};
    world.Send(token, next);
    Values back = xt::zeros<double>({static_cast<std::size_t>(p)});
    world.Recv(back, previous);
    view = "sent " + show(token) + " to rank 1, got " + show(back) + " back from rank " +
           std::to_string(previous);
  } else {
    Values received = xt::zeros<double>({static_cast<std::size_t>(r)});  // one entry per hop
    world.Recv(received, previous);
    Values token = xt::zeros<double>({received.size() + 1});
    std::copy(received.begin(), received.end(), token.begin());
    token(r) = r;
    world.Send(token, next);
    view = "got " + show(received) + " from rank " + std::to_string(previous) + ", sent " +
           show(token) + " to rank " + std::to_string(next);
  }
  dtk::print_in_rank_order(world, view);
  print_bytes(world);
}

const std::map<std::string, std::function<void(dtk::Communicator&)>> kCases = {
    {"allreduce", allreduce}, {"allgather", allgather}, {"reduce_scatter", reduce_scatter},
    {"split", split},         {"sendrecv", sendrecv},   {"ring", ring},
};

constexpr const char* kUsage =
    "usage: mpirun -n N mpi_test --test_case "
    "allreduce|allgather|reduce_scatter|split|sendrecv|ring\n"
    "Shows what every rank holds before and after one Communicator operation.\n";

}  // namespace

int main(int argc, char** argv) {
  dtk::keep_freed_memory();
  dtk::use_single_machine_mpi();
  MPI_Init(&argc, &argv);
  dtk::Communicator world;
  const bool root = world.Get_rank() == 0;

  std::string test_case;
  int status = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      if (root) std::cout << kUsage;
      MPI_Finalize();
      return 0;
    } else if (arg == "--test_case" && i + 1 < argc) {
      test_case = argv[++i];
    } else {
      if (root) std::cerr << "mpi_test: unexpected argument '" << arg << "'\n" << kUsage;
      status = 2;
    }
  }
  if (status == 0 && kCases.count(test_case) == 0) {
    if (root) {
      std::cerr << "mpi_test: unknown --test_case '" << test_case
                << "' (choose allreduce, allgather, reduce_scatter, split, sendrecv or ring)\n";
    }
    status = 2;
  }
  if (status == 0) kCases.at(test_case)(world);
  MPI_Finalize();
  return status;
}
