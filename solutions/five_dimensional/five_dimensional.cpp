// Part 14: the GPT in five dimensions at once: the interleaved pipeline, the grid, the boundary,
// uneven data parallelism.
// Declared, with the exact contract of every function, in include/dtk/five_dimensional.hpp.
// Data moves with the Communicator's Send, Recv, Sendrecv, Isend, Irecv, Allgather and Allreduce
// only.
#include <dtk/five_dimensional.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dtk {

namespace {

void require(bool ok, const std::string& function, const std::string& what) {
  if (!ok) throw std::invalid_argument(function + ": " + what);
}

// ----------------------------------- 14.2's messages --------------------------------------------

// A message's tag names the step it is for: the micro-batch, the model chunk that receives it and
// whether it is an activation or a gradient. Two ranks exchange both kinds, of many micro-batches
// and chunks, and MPI matches a receive to the first message of its source and tag: a tag of its
// own per step makes the order in which they arrive irrelevant.
int message_tag(PipeOp op, int microbatch, int receiving_chunk, int model_chunks) {
  return (microbatch * model_chunks + receiving_chunk) * 2 + (op == PipeOp::Backward ? 1 : 0);
}

// A result on its way to another rank: the Isend's buffer lives here, untouched, until its request
// has completed (held by pointer, so that it never moves; the request, destroyed first, waits).
template <class T>
struct Outgoing {
  xt::xtensor<T, 2> buffer;
  Request request;
};

std::string shape_text(const std::array<std::size_t, 2>& shape) {
  return "(" + std::to_string(shape[0]) + ", " + std::to_string(shape[1]) + ")";
}

}  // namespace

// ----------------------------------- 14.1 -------------------------------------------------------

std::vector<ChunkStep> interleaved_schedule(int rank, int num_ranks, int num_chunks,
                                            int num_microbatches) {
  const std::string function = "interleaved_schedule";
  require(num_ranks >= 1, function, "num_ranks must be >= 1, got " + std::to_string(num_ranks));
  require(0 <= rank && rank < num_ranks, function,
          "rank must be in 0 .. num_ranks - 1 = " + std::to_string(num_ranks - 1) + ", got " +
              std::to_string(rank));
  require(num_chunks >= 1, function, "num_chunks must be >= 1, got " + std::to_string(num_chunks));
  require(num_microbatches >= 1 && num_microbatches % num_ranks == 0, function,
          "num_microbatches must be a positive multiple of num_ranks (" +
              std::to_string(num_ranks) + "), got " + std::to_string(num_microbatches));
  const int p = num_ranks, group_steps = num_ranks * num_chunks;
  const int total = num_microbatches * num_chunks;
  // The k-th forward or backward: group k / (pV), and inside it p micro-batches per chunk.
  const auto step = [&](PipeOp op, int k) {
    const int group = k / group_steps, within = k % group_steps;
    const int chunk = within / p;
    return ChunkStep{op, group * p + within % p,
                     op == PipeOp::Forward ? chunk : num_chunks - 1 - chunk};
  };
  const int warm_up = std::min((p - rank - 1) * 2 + (num_chunks - 1) * p, total);
  std::vector<ChunkStep> steps;
  int forward = 0, backward = 0;
  while (forward < warm_up) steps.push_back(step(PipeOp::Forward, forward++));
  while (forward < total) {
    steps.push_back(step(PipeOp::Forward, forward++));
    steps.push_back(step(PipeOp::Backward, backward++));
  }
  while (backward < total) steps.push_back(step(PipeOp::Backward, backward++));
  return steps;
}

// ----------------------------------- 14.2 -------------------------------------------------------

template <class T>
void run_interleaved_schedule(const std::vector<PipelineStage<T>*>& chunks,
                              const std::vector<ChunkStep>& schedule, Communicator& pp_comm) {
  const std::string function = "run_interleaved_schedule";
  const int p = pp_comm.Get_size(), r = pp_comm.Get_rank();
  const int local_chunks = static_cast<int>(chunks.size());
  const int model_chunks = p * local_chunks;
  const int next = (r + 1) % p, previous = (r + p - 1) % p;
  // Sends never block (Isend), and this rank receives each input in its schedule's order: it
  // only ever waits for a step that some rank's schedule runs before the one that needs it, so a
  // valid schedule cannot deadlock. A blocking Recv also drives this rank's sends in flight.
  std::vector<std::unique_ptr<Outgoing<T>>> outgoing;
  for (const ChunkStep& step : schedule) {
    require(0 <= step.chunk && step.chunk < local_chunks, function,
            "a step names chunk " + std::to_string(step.chunk) + ", but this rank holds " +
                std::to_string(local_chunks));
    PipelineStage<T>& chunk = *chunks[step.chunk];
    const int c = step.chunk * p + r, mb = step.microbatch;
    const bool forward = step.op == PipeOp::Forward;

    xt::xtensor<T, 2> input;
    if (forward && chunk.is_first()) {
      input = chunk.input_microbatch(mb);
    } else if (!forward && chunk.is_last()) {
      input = chunk.loss_grad(mb);
    } else {
      input =
          xt::xtensor<T, 2>::from_shape(forward ? chunk.input_shape(mb) : chunk.output_shape(mb));
      pp_comm.Recv(input, forward ? previous : next, message_tag(step.op, mb, c, model_chunks));
    }

    xt::xtensor<T, 2> result = forward ? chunk.forward(mb, input) : chunk.backward(mb, input);
    if (forward ? chunk.is_last() : chunk.is_first()) continue;
    const std::array<std::size_t, 2> expected =
        forward ? chunk.output_shape(mb) : chunk.input_shape(mb);
    require(result.shape(0) == expected[0] && result.shape(1) == expected[1], function,
            std::string(forward ? "forward(" : "backward(") + std::to_string(mb) + ") of chunk " +
                std::to_string(step.chunk) + " returned a " +
                shape_text({result.shape(0), result.shape(1)}) + " tensor, but its " +
                (forward ? "output_shape" : "input_shape") + " is " + shape_text(expected));
    auto sending = std::make_unique<Outgoing<T>>(Outgoing<T>{std::move(result), Request()});
    sending->request =
        pp_comm.Isend(sending->buffer, forward ? next : previous,
                      message_tag(step.op, mb, forward ? c + 1 : c - 1, model_chunks));
    outgoing.push_back(std::move(sending));
    // Buffers whose message has left are freed at once: a long schedule keeps only those in
    // flight.
    outgoing.erase(std::remove_if(outgoing.begin(), outgoing.end(),
                                  [](const auto& o) { return o->request.Test(); }),
                   outgoing.end());
  }
  for (const auto& sending : outgoing) sending->request.Wait();
}

// ----------------------------------- 14.3 -------------------------------------------------------

namespace {

int grid_size(const GridShape& grid) { return grid.tp * grid.cp * grid.dp * grid.pp; }

void check_grid(const GridShape& grid, int world_rank, const std::string& function) {
  for (const auto& [size, name] :
       {std::pair{grid.tp, "tp"}, std::pair{grid.cp, "cp"}, std::pair{grid.dp, "dp"},
        std::pair{grid.pp, "pp"}, std::pair{grid.ep, "ep"}}) {
    require(size >= 1, function, std::string(name) + " must be >= 1, got " + std::to_string(size));
  }
  require(grid.dp % grid.ep == 0, function,
          "ep (" + std::to_string(grid.ep) + ") must divide dp (" + std::to_string(grid.dp) + ")");
  require(0 <= world_rank && world_rank < grid_size(grid), function,
          "world_rank must be in 0 .. tp * cp * dp * pp - 1 = " +
              std::to_string(grid_size(grid) - 1) + ", got " + std::to_string(world_rank));
}

}  // namespace

GridCoordinates grid_coordinates(const GridShape& grid, int world_rank) {
  check_grid(grid, world_rank, "grid_coordinates");
  GridCoordinates at;
  at.tp = world_rank % grid.tp;
  at.cp = world_rank / grid.tp % grid.cp;
  at.dp = world_rank / (grid.tp * grid.cp) % grid.dp;
  at.pp = world_rank / (grid.tp * grid.cp * grid.dp);
  at.ep = at.dp % grid.ep;
  return at;
}

std::vector<int> grid_group(const GridShape& grid, int world_rank, GridGroup group) {
  check_grid(grid, world_rank, "grid_group");
  const GridCoordinates me = grid_coordinates(grid, world_rank);
  // Whether another rank agrees with this one on every coordinate the group keeps.
  const auto same = [&](const GridCoordinates& other) {
    const bool tp = other.tp == me.tp, cp = other.cp == me.cp, dp = other.dp == me.dp,
               pp = other.pp == me.pp;
    const bool expert_run = other.dp / grid.ep == me.dp / grid.ep;
    switch (group) {
      case GridGroup::Tensor:
        return cp && dp && pp;
      case GridGroup::Context:
        return tp && dp && pp;
      case GridGroup::Data:
        return tp && cp && pp;
      case GridGroup::Expert:
        return tp && cp && pp && expert_run;
      case GridGroup::Pipeline:
        return tp && cp && dp;
      case GridGroup::DenseGradients:
        return tp && pp;
      case GridGroup::ExpertGradients:
        return tp && pp && other.ep == me.ep;
      case GridGroup::Stage:
        return pp;
    }
    throw std::invalid_argument("grid_group: group " + std::to_string(int(group)) +
                                " is not a GridGroup");
  };
  std::vector<int> members;
  for (int rank = 0; rank < grid_size(grid); ++rank) {
    if (same(grid_coordinates(grid, rank))) members.push_back(rank);
  }
  return members;
}

// ----------------------------------- 14.4 -------------------------------------------------------

namespace {

// Whether the tp ranks split the tensor between them (they hold it alike, and tp divides it).
bool sends_shares(std::size_t rows, bool sequence_parallel, const Communicator& tp_comm) {
  return !sequence_parallel && rows % tp_comm.Get_size() == 0;
}

}  // namespace

template <class T>
void send_to_stage(const xt::xtensor<T, 2>& tensor, bool sequence_parallel, int dest, int tag,
                   Communicator& pp_comm, Communicator& tp_comm) {
  if (!sends_shares(tensor.shape(0), sequence_parallel, tp_comm)) {
    pp_comm.Send(tensor.data(), tensor.size(), dest, tag);
    return;
  }
  // Rows are contiguous in a row-major tensor: the share is one slice of its buffer.
  const std::size_t share = tensor.size() / tp_comm.Get_size();
  pp_comm.Send(tensor.data() + tp_comm.Get_rank() * share, share, dest, tag);
}

template <class T>
xt::xtensor<T, 2> receive_from_stage(std::array<std::size_t, 2> shape, bool sequence_parallel,
                                     int source, int tag, Communicator& pp_comm,
                                     Communicator& tp_comm) {
  xt::xtensor<T, 2> tensor = xt::xtensor<T, 2>::from_shape(shape);
  if (!sends_shares(shape[0], sequence_parallel, tp_comm)) {
    pp_comm.Recv(tensor.data(), tensor.size(), source, tag);
    return tensor;
  }
  std::vector<T> share(tensor.size() / tp_comm.Get_size());
  pp_comm.Recv(share, source, tag);
  // Allgather lands the shares in tp rank order: the rows in order.
  std::vector<T> whole(tensor.size());
  tp_comm.Allgather(share, whole);
  std::copy(whole.begin(), whole.end(), tensor.begin());
  return tensor;
}

// ----------------------------------- 14.5 -------------------------------------------------------

namespace {

void check_fractions(const std::vector<double>& fractions, const std::string& function) {
  require(!fractions.empty(), function, "fractions must not be empty");
  double sum = 0;
  for (double f : fractions) {
    require(f >= 0, function, "every fraction must be >= 0, got " + std::to_string(f));
    sum += f;
  }
  require(std::abs(sum - 1) <= 1e-9, function,
          "the fractions must sum to 1, they sum to " + std::to_string(sum));
}

}  // namespace

std::vector<std::size_t> share_sizes(std::size_t n, const std::vector<double>& fractions) {
  check_fractions(fractions, "share_sizes");
  std::vector<std::size_t> sizes;
  std::vector<double> remainders;
  std::size_t given = 0;
  for (double f : fractions) {
    const double exact = static_cast<double>(n) * f;
    sizes.push_back(static_cast<std::size_t>(std::floor(exact)));
    remainders.push_back(exact - std::floor(exact));
    given += sizes.back();
  }
  // The shares in order of their remainders, the largest first; stable: the lower index first.
  std::vector<std::size_t> order(fractions.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return remainders[a] > remainders[b]; });
  for (std::size_t i = 0; given < n; ++i, ++given) ++sizes[order[i % order.size()]];
  return sizes;
}

std::vector<std::size_t> partition_examples(std::size_t n, const std::vector<double>& fractions,
                                            std::uint64_t seed, int share) {
  check_fractions(fractions, "partition_examples");
  require(0 <= share && share < static_cast<int>(fractions.size()), "partition_examples",
          "share must be in 0 .. " + std::to_string(fractions.size() - 1) + ", got " +
              std::to_string(share));
  const std::vector<std::size_t> sizes = share_sizes(n, fractions);
  const std::vector<std::size_t> order = seeded_permutation(n, seed);
  const auto begin =
      order.begin() + std::accumulate(sizes.begin(), sizes.begin() + share, std::size_t{0});
  return {begin, begin + sizes[share]};
}

template <class T>
xt::xtensor<T, 1> weighted_gradient_average(const xt::xtensor<T, 1>& local_mean,
                                            std::size_t local_examples, Communicator& dp_comm) {
  // One Allreduce of this rank's gradient sum with its count of examples appended. A rank
  // without examples adds zeros (never 0 times its mean: 0 · NaN is NaN).
  std::vector<T> sum_and_count(local_mean.size() + 1, T(0));
  if (local_examples > 0) {
    for (std::size_t i = 0; i < local_mean.size(); ++i)
      sum_and_count[i] = local_mean(i) * static_cast<T>(local_examples);
  }
  sum_and_count.back() = static_cast<T>(local_examples);
  std::vector<T> total(sum_and_count.size());
  dp_comm.Allreduce(sum_and_count, total);
  require(total.back() > 0, "weighted_gradient_average", "no rank has an example");
  xt::xtensor<T, 1> mean = xt::xtensor<T, 1>::from_shape({local_mean.size()});
  for (std::size_t i = 0; i < local_mean.size(); ++i) mean(i) = total[i] / total.back();
  return mean;
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests link against exactly these.
// -------------------------------------------------------------------------------------------
template void run_interleaved_schedule<float>(const std::vector<PipelineStage<float>*>&,
                                              const std::vector<ChunkStep>&, Communicator&);
template void run_interleaved_schedule<double>(const std::vector<PipelineStage<double>*>&,
                                               const std::vector<ChunkStep>&, Communicator&);
template void send_to_stage<float>(const xt::xtensor<float, 2>&, bool, int, int, Communicator&,
                                   Communicator&);
template void send_to_stage<double>(const xt::xtensor<double, 2>&, bool, int, int, Communicator&,
                                    Communicator&);
template xt::xtensor<float, 2> receive_from_stage<float>(std::array<std::size_t, 2>, bool, int, int,
                                                         Communicator&, Communicator&);
template xt::xtensor<float, 1> weighted_gradient_average<float>(const xt::xtensor<float, 1>&,
                                                                std::size_t, Communicator&);
template xt::xtensor<double, 1> weighted_gradient_average<double>(const xt::xtensor<double, 1>&,
                                                                  std::size_t, Communicator&);
template xt::xtensor<double, 2> receive_from_stage<double>(std::array<std::size_t, 2>, bool, int,
                                                           int, Communicator&, Communicator&);

}  // namespace dtk
