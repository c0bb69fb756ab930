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

// Helpers you write (argument checks, where a step's input comes from, ...) go in an anonymous
// namespace here, so that they stay private to this file:
// namespace {
// ...
// }  // namespace

// ----------------------------------- 14.1 -------------------------------------------------------

std::vector<ChunkStep> interleaved_schedule(int rank, int num_ranks, int num_chunks,
                                            int num_microbatches) {
  // TODO (Part 14.1): the header's three rules are the whole contract, and its example is a
  // case to check by hand. Traps: the backward order reverses the chunks, not the
  // micro-batches; the warm-up is capped by the number of forwards; check the arguments first
  // (std::invalid_argument naming the argument).
  throw NotImplemented("interleaved_schedule", "five_dimensional/five_dimensional.cpp");
}

// ----------------------------------- 14.2 -------------------------------------------------------

template <class T>
void run_interleaved_schedule(const std::vector<PipelineStage<T>*>& chunks,
                              const std::vector<ChunkStep>& schedule, Communicator& pp_comm) {
  // TODO (Part 14.2): Part 8.5's executor, chunk by chunk. Work out, for the model chunk
  // c = v · p + r, which rank holds the chunk before it and the chunk after it (the ranks are a
  // ring). Around a ring every rank can be inside a blocking Send at once: think about which
  // calls can block, and what makes a message unambiguous when two ranks exchange several kinds
  // at once (Communicator's Isend, Irecv and tags; communicator.hpp says what a Request needs
  // from you).
  throw NotImplemented("run_interleaved_schedule", "five_dimensional/five_dimensional.cpp");
}

// ----------------------------------- 14.3 -------------------------------------------------------

GridCoordinates grid_coordinates(const GridShape& grid, int world_rank) {
  // TODO (Part 14.3): the header's formula for the world rank is the contract. Traps: which axis is
  // fastest (a 16-rank grid of 2s cannot tell tp from pp by its sizes: test with four different
  // ones); ep_idx comes from dp_idx, not from the world rank; check every argument first.
  throw NotImplemented("grid_coordinates", "five_dimensional/five_dimensional.cpp");
}

std::vector<int> grid_group(const GridShape& grid, int world_rank, GridGroup group) {
  // TODO (Part 14.3): each group is defined by the coordinates its members share (the header's
  // list). Think about the gradient groups before you write them: which ranks hold the same slice
  // of a parameter, and which of those saw other tokens of the batch?
  throw NotImplemented("grid_group", "five_dimensional/five_dimensional.cpp");
}

// ----------------------------------- 14.4 -------------------------------------------------------

template <class T>
void send_to_stage(const xt::xtensor<T, 2>& tensor, bool sequence_parallel, int dest, int tag,
                   Communicator& pp_comm, Communicator& tp_comm) {
  // TODO (Part 14.4): decide first whether this rank sends a share or the whole tensor (the
  // header's three cases), then send exactly one message. Trap: the shares must come back
  // together as the tensor, row for row, on the receiving side.
  throw NotImplemented("send_to_stage", "five_dimensional/five_dimensional.cpp");
}

template <class T>
xt::xtensor<T, 2> receive_from_stage(std::array<std::size_t, 2> shape, bool sequence_parallel,
                                     int source, int tag, Communicator& pp_comm,
                                     Communicator& tp_comm) {
  // TODO (Part 14.4): the mirror of send_to_stage, deciding the same way from what it is given.
  // Traps: a receive buffer sized for the whole tensor when a share arrives; the order in which a
  // gather lands the shares.
  throw NotImplemented("receive_from_stage", "five_dimensional/five_dimensional.cpp");
}

// ----------------------------------- 14.5 -------------------------------------------------------

std::vector<std::size_t> share_sizes(std::size_t n, const std::vector<double>& fractions) {
  // TODO (Part 14.5): the header's rule exactly. Traps: the leftover examples can number up to
  // one per share; which share gets one when remainders are equal; check the fractions first.
  throw NotImplemented("share_sizes", "five_dimensional/five_dimensional.cpp");
}

std::vector<std::size_t> partition_examples(std::size_t n, const std::vector<double>& fractions,
                                            std::uint64_t seed, int share) {
  // TODO (Part 14.5): every share must come from the same permutation, or they overlap.
  throw NotImplemented("partition_examples", "five_dimensional/five_dimensional.cpp");
}

template <class T>
xt::xtensor<T, 1> weighted_gradient_average(const xt::xtensor<T, 1>& local_mean,
                                            std::size_t local_examples, Communicator& dp_comm) {
  // TODO (Part 14.5): what must be summed over the ranks so that the result is the mean over
  // every example? Traps: what a rank without examples holds; every rank must throw together, or
  // none.
  throw NotImplemented("weighted_gradient_average", "five_dimensional/five_dimensional.cpp");
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
