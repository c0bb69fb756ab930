// Part 14 (assignment 4): the GPT in five dimensions at once: its pipeline interleaved (14.1,
// 14.2), its ranks laid out on a grid (14.3), its stage boundary under tensor parallelism (14.4)
// and data parallelism over ranks of unequal shares (14.5). You implement these functions in
// five_dimensional/five_dimensional.cpp.
//
// Conventions of 14.1 and 14.2 (Part 8's, grown by one word). p = num_ranks pipeline ranks, V =
// num_chunks model chunks per rank, m = num_microbatches. The model is cut into p · V consecutive
// chunks, and pipeline rank r holds the model chunks r, r + p, r + 2p, ...: its chunk v (0 .. V -
// 1, the `chunk` of a step below) is the model's chunk v · p + r (Megatron-LM's "virtual pipeline
// stages"). With p = 2 and V = 2, rank 0 holds model chunks 0 and 2, rank 1 chunks 1 and 3.
// A micro-batch's forward visits model chunks 0, 1, ..., pV - 1 in turn, so it goes round the
// ranks V times: rank p - 1's chunk v hands its activation to rank 0's chunk v + 1. Its
// backward goes the other way round.
//
// Every function of this part: a bad argument (what its "Requires" rules out) throws
// std::invalid_argument with a message naming the function and the argument.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "dtk/communicator.hpp"
#include "dtk/not_implemented.hpp"  // what the stubs throw until you write them
#include "dtk/pipeline.hpp"         // PipeOp and PipelineStage, as Part 8 defines them

namespace dtk {

// ---------------------------------------------------------------------------------------------
// 14.1 The interleaved 1F1B schedule
// ---------------------------------------------------------------------------------------------

// One unit of work of one pipeline rank: the forward or backward pass of one micro-batch
// through one of the rank's chunks (0 .. V - 1, this rank's numbering, not the model's).
struct ChunkStep {
  PipeOp op;
  int microbatch;
  int chunk;
};

// Megatron-LM's interleaved 1F1B schedule of pipeline rank `rank`: each of its m · V forwards
// and m · V backwards once, in this order.
//   - The order of the forwards: the micro-batches go in groups of p (0 .. p - 1, then p ..
//     2p - 1, ...); a group goes through chunk 0, then the same p micro-batches through chunk 1,
//     and so on to chunk V - 1, before the next group starts.
//   - The order of the backwards: the same groups, the chunks in reverse (chunk V - 1 first).
//   - The interleaving: w = (p - rank - 1) · 2 + (V - 1) · p warm-up forwards (all m · V of them
//     when w is larger), then one forward and one backward in turn while forwards remain, then
//     the remaining backwards.
// Example, rank 0 of p = 2 with V = 2 and m = 4 (F1.0: the forward of micro-batch 1 through
// chunk 0), w = 4:
//   F0.0 F1.0 F0.1 F1.1 | F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 | B2.1 B3.1 B2.0 B3.0
// With V = 1 it is a 1F1B whose warm-up is longer than Part 8's. Requires num_ranks >= 1,
// 0 <= rank < num_ranks, num_chunks >= 1, and num_microbatches a positive multiple of num_ranks
// (whole groups).
std::vector<ChunkStep> interleaved_schedule(int rank, int num_ranks, int num_chunks,
                                            int num_microbatches);

// ---------------------------------------------------------------------------------------------
// 14.2 Running a chunked schedule
// ---------------------------------------------------------------------------------------------

// Runs `schedule` (this rank's steps, e.g. from interleaved_schedule) on this rank's chunks:
// chunks[v] is its chunk v, i.e. the model's chunk c = v · p + r, with p = pp_comm.Get_size()
// and r = pp_comm.Get_rank(); V = chunks.size(). Every rank of pp_comm calls it with its own
// chunks and schedule. Only the model's chunk 0 is_first() and only its chunk pV - 1 is_last().
// For each step (Part 8.5's rules, chunk by chunk):
//   Forward(mb, v):  input = is_first() ? input_microbatch(mb) : the output of forward(mb) of the
//                    model's chunk c - 1, an (input_shape(mb)) tensor; output = forward(mb, input)
//                    goes to the model's chunk c + 1 unless is_last().
//   Backward(mb, v): grad = is_last() ? loss_grad(mb) : the input gradient backward(mb) of the
//                    model's chunk c + 1 returned, of shape output_shape(mb); what backward(mb,
//                    grad) returns goes to the model's chunk c - 1 unless is_first().
// `schedule` is a valid one (each step of each chunk once, in an order the whole pipeline can
// run). Data moves with pp_comm's Send, Recv, Sendrecv, Isend and Irecv only; every request has
// completed when the function returns. A message's tag may be any number from 0 to 32767 (MPI
// guarantees no more; the tests keep m · p · V below 200). The traps:
//   - the ranks form a ring (rank p - 1 sends to rank 0, and gradients go the other way), and a
//     blocking Send of a large activation waits for its Recv: the run must never deadlock,
//     whatever the activations' size (the tests use 1 MB), for any valid schedule. Part 8.5
//     paired a Send with the next step's Recv in one Sendrecv when both went to the same
//     neighbour; around a ring that no longer covers every case;
//   - two ranks exchange activations and gradients of several micro-batches and chunks, and a
//     valid schedule may take them in another order than the neighbour sent them (one rank
//     running its micro-batches last to first, say): each message must reach the step it
//     belongs to;
//   - a buffer handed to Isend belongs to MPI until its request completes: keep it alive and
//     unchanged until then;
//   - with p = 1 every chunk hands its output to the same rank: each chunk boundary is still a
//     message, to itself, and counts its bytes.
template <class T>
void run_interleaved_schedule(const std::vector<PipelineStage<T>*>& chunks,
                              const std::vector<ChunkStep>& schedule, Communicator& pp_comm);

// ---------------------------------------------------------------------------------------------
// 14.3 The five-dimensional grid
// ---------------------------------------------------------------------------------------------

// gpt_train's ranks form a grid of tp · cp · dp · pp (what torchtitan calls a device mesh):
// tensor parallelism fastest, then context, then data, the pipeline slowest, so that the ranks
// that talk most are neighbours (on a real machine: inside one node):
//   world rank = ((pp_idx · dp + dp_idx) · cp + cp_idx) · tp + tp_idx.
// Expert parallelism lives inside data parallelism, as in Part 12: ep divides dp, each run of ep
// consecutive dp indices is one expert-parallel group, and its ep members split the experts
// between them (Part 12's local_experts), member ep_idx = dp_idx % ep. An expert's matrices are
// split over tp like every other parameter's: ranks of the same tp_idx hold the same slice.
struct GridShape {
  int tp = 1, cp = 1, dp = 1, pp = 1, ep = 1;
};

// One rank's place in the grid: tp_idx, cp_idx, dp_idx, pp_idx and ep_idx, by their axis.
struct GridCoordinates {
  int tp = 0, cp = 0, dp = 0, pp = 0, ep = 0;
};

// The groups a rank communicates in. Each holds every rank of the grid that agrees with it on
// every coordinate but the ones named.
enum class GridGroup {
  Tensor,    // all but tp: the ranks that split its matrices (Part 10's tp_comm)
  Context,   // all but cp: its ring (Part 11's cp_comm)
  Data,      // all but dp: the replicas of its model slice, fed other sequences
  Expert,    // all but dp, within its run of ep consecutive dp indices (Part 12's ep_comm)
  Pipeline,  // all but pp: its counterpart in every stage (Part 8's pp_comm)
  // The gradient sums. A parameter's gradient is summed over every rank that holds the same
  // slice of that parameter, whichever tokens of the batch it saw (the rank itself included).
  DenseGradients,   // of a parameter outside the experts
  ExpertGradients,  // of an expert's parameter (a slice of the same experts)
  Stage,            // all but tp, cp and dp: every rank of its pipeline stage
};

// This rank's coordinates. Requires every size >= 1, ep dividing dp and 0 <= world_rank <
// tp · cp · dp · pp.
GridCoordinates grid_coordinates(const GridShape& grid, int world_rank);

// The world ranks of world_rank's group `group`, in increasing order (the order of a Split keyed
// by world rank); world_rank is among them. Same requirements as grid_coordinates.
std::vector<int> grid_group(const GridShape& grid, int world_rank, GridGroup group);

// ---------------------------------------------------------------------------------------------
// 14.4 The stage boundary under tensor parallelism
// ---------------------------------------------------------------------------------------------

// Between two pipeline stages every rank hands what it holds to its counterpart (the same
// tp_idx, cp_idx and dp_idx) in the other stage, over pp_comm: an activation forward, its
// gradient back. Under context parallelism that is the rank's own positions already; tensor
// parallelism is the question:
//   - with sequence parallelism, the tp ranks of a stage hold different rows (each its share of
//     the positions): each sends its tensor, whole;
//   - without it, every tp rank holds the same (rows, width) tensor, and sending it whole sends
//     it tp times. Instead tp_idx i sends only its share, rows [i · rows / tp, (i + 1) · rows /
//     tp), and the receiving stage's tp ranks put the whole tensor back together over their
//     tp_comm (Megatron-LM's scatter-gather between stages). When tp does not divide rows, each
//     sends the whole tensor and the receiver gathers nothing.
// tp = tp_comm.Get_size() and i = tp_comm.Get_rank(); both stages have the same tp. One call
// sends one message (the tensor or the share, as one contiguous row-major buffer) to `dest` with
// `tag`, and receive_from_stage receives one from `source` with `tag`. When it gathers, every tp
// rank of the receiving stage calls receive_from_stage together (with tp = 1 there is nothing to
// gather). Data moves with the Communicator's Send, Recv and Allgather (Isend and Irecv too,
// completed before the function returns).
template <class T>
void send_to_stage(const xt::xtensor<T, 2>& tensor, bool sequence_parallel, int dest, int tag,
                   Communicator& pp_comm, Communicator& tp_comm);

// Receives what send_to_stage sent from `source`: `shape` is the tensor the sender held (with
// sequence parallelism, its rows; without, the whole tensor every tp rank holds), returned as such
// (a stage knows it: Part 8's input_shape and output_shape).
template <class T>
xt::xtensor<T, 2> receive_from_stage(std::array<std::size_t, 2> shape, bool sequence_parallel,
                                     int source, int tag, Communicator& pp_comm,
                                     Communicator& tp_comm);

// ---------------------------------------------------------------------------------------------
// 14.5 Data parallelism with uneven shares
// ---------------------------------------------------------------------------------------------

// Ranks of unequal speed get shares of the examples in proportion to it: `fractions` (one per
// data-parallel rank, e.g. {0.7, 0.2, 0.1}) say which.

// How many of n examples each share gets: floor(n · f_r) each, then the n - Σ floor(n · f_r)
// examples left over one each to the shares of the largest remainders n · f_r - floor(n · f_r),
// the lower index first among equal remainders (Hamilton's largest-remainder method: the sizes sum
// to n, and none is more than one example away from n · f_r). n · f_r and the remainders are
// computed in double, as written here, and compared exactly. Requires at least one fraction,
// every fraction >= 0 and their sum 1 to within 1e-9 (then, for n below 10^9, the floors never
// add up to more than n).
std::vector<std::size_t> share_sizes(std::size_t n, const std::vector<double>& fractions);

// The examples of share `share` (0 .. fractions.size() - 1): the examples 0 .. n - 1 shuffled by
// seeded_permutation(n, seed) below, share 0 taking the first share_sizes(...)[0] of that order,
// share 1 the next ones, and so on, each in the permutation's order. The shares never overlap and
// together hold every example once. Same requirements as share_sizes, and 0 <= share < the
// number of fractions.
std::vector<std::size_t> partition_examples(std::size_t n, const std::vector<double>& fractions,
                                            std::uint64_t seed, int share);

// Provided: the examples 0 .. n - 1 in a seeded order, the same on every machine (a Fisher-Yates
// shuffle driven by splitmix64 from `seed`).
inline std::vector<std::size_t> seeded_permutation(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::uint64_t state = seed;
  const auto next = [&state] {  // splitmix64
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[next() % i]);
  return order;
}

// The gradient of the whole batch from gradients each data-parallel rank averaged over its own
// examples: `local_mean` is this rank's mean gradient over its `local_examples` examples, and
// every rank of dp_comm returns the mean over all the batch's examples (what one rank holding
// them all would compute). With shares of different sizes that is not the mean of the ranks'
// means. local_mean has the same size on every rank. A rank without examples holds no mean: its
// local_mean's values may be anything (NaN included) and must not change the result. Throws
// std::invalid_argument on every rank when no rank has an example. Data moves with dp_comm's
// Allreduce.
template <class T>
xt::xtensor<T, 1> weighted_gradient_average(const xt::xtensor<T, 1>& local_mean,
                                            std::size_t local_examples, Communicator& dp_comm);

}  // namespace dtk
