// Part 15 (assignment 4): communication hidden behind computation. Data parallelism sums every
// gradient over the replicas; instead of one reduction after the backward, the gradients go in
// buckets (15.1) whose reductions start while the backward is still computing the earlier
// layers, and advance between them (15.2); ring attention's blocks travel while the previous one
// is computed on (15.3). You implement these in overlap/overlap.cpp.
//
// Why a bucket and not a parameter: every message costs a fixed latency, so many small
// reductions are slow; one reduction of everything cannot start before the backward ends. A
// bucket of a few MB is both large enough and early enough (PyTorch's DDP: 25 MB, its first
// bucket 1 MB so that the first reduction starts sooner).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "dtk/communicator.hpp"
#include "dtk/not_implemented.hpp"  // what the stubs throw until you write them

namespace dtk {

// ---------------------------------------------------------------------------------------------
// 15.1 Buckets
// ---------------------------------------------------------------------------------------------

// The buckets of a model whose parameter i's gradient takes parameter_bytes[i] bytes, the
// parameters numbered in the model's order (the forward's: the embedding first). The backward
// makes their gradients in the opposite order, the last parameter's first, so buckets are filled
// in that order too: PyTorch DDP's rule. Take the parameters from the last to the first; put
// each into the bucket being filled; when that bucket's bytes reach its cap (>= cap), close it
// and start the next one. The cap is first_bucket_cap_bytes for the first bucket and
// bucket_cap_bytes for every other. The last bucket holds what is left, however little; a
// parameter larger than the cap still goes into the bucket being filled (which it then closes).
// Returns the buckets in the order they fill, each listing its parameters in the order they went
// in. Every parameter is in exactly one bucket. Requires both caps > 0 and every parameter's
// bytes > 0 (throws std::invalid_argument naming the argument); no parameters, no buckets.
std::vector<std::vector<int>> assign_buckets(const std::vector<std::size_t>& parameter_bytes,
                                             std::size_t bucket_cap_bytes,
                                             std::size_t first_bucket_cap_bytes);

// ---------------------------------------------------------------------------------------------
// 15.2 Reducing the buckets during the backward
// ---------------------------------------------------------------------------------------------

// One step's gradient reduction over the data-parallel ranks of dp_comm, bucket by bucket, while
// the backward runs. Every rank makes one for the step, with the same buckets and sizes; the
// trainer then calls, on every rank in the same order:
//   gradient_ready(i, g)  as the backward makes parameter i's gradient (each parameter once);
//   progress()            between two layers of the backward, and whenever else it likes;
//   finish()              once, after the last gradient_ready.
// The contract:
//   - buckets[b] lists the parameters of bucket b (15.1's result or any other: every parameter
//     in exactly one bucket); sizes[i] is parameter i's number of elements.
//   - A bucket is full once all its parameters are ready. Its reduction starts at once, inside
//     the gradient_ready that fills it, and reductions start in the order buckets fill.
//   - gradient_ready and progress never wait: no Wait, no blocking call. They post messages
//     (Isend, Irecv) and test the requests in flight (Request::Test). progress() advances every
//     reduction in flight as far as it can without waiting: it tests each one's requests, and a
//     reduction whose messages have all arrived does what comes next and posts its next
//     messages in the same call. A reduction that sits still while its messages have arrived
//     wastes the layers still to come.
//   - finish() completes what is left (it may wait) and returns every parameter's gradient
//     summed over the ranks of dp_comm: result[i], of sizes[i] elements, to within rounding
//     (1e-12 relative, in double) of the plain sum. Every request has completed when it returns.
//   - A bucket's messages carry its index b as their tag. Data moves with dp_comm's Isend and
//     Irecv only; reduce each bucket of n elements with a ring, as Part 7's ring allreduce does:
//     2(p - 1) steps, no message longer than ceil(n / p) elements (how the chunks are cut is
//     yours).
// The traps:
//   - Open MPI moves a message only while some MPI call runs on both ranks: a request nobody
//     tests between layers makes no progress until finish(), and nothing was hidden;
//   - a buffer handed to Isend or Irecv belongs to MPI until its request completes: keep it
//     alive, where it is, and unchanged (a std::vector that grows moves its elements);
//   - several buckets are in flight at once, each at its own step: their messages must not mix;
//   - g is the backward's: copy what you need before gradient_ready returns;
//   - Isend and Irecv take whole containers (no pointer form): a chunk goes out of a buffer of
//     its own;
//   - buckets smaller than the number of ranks (some ring chunks are empty: send an empty
//     message or none, as long as both ends agree), one rank (nothing to send), a bucket of one
//     parameter.
class GradientBuckets {
 public:
  GradientBuckets(std::vector<std::vector<int>> buckets, std::vector<std::size_t> sizes,
                  Communicator& dp_comm);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  void gradient_ready(int parameter, const xt::xtensor<double, 1>& gradient);
  void progress();
  std::vector<xt::xtensor<double, 1>> finish();

  // What a step's reduction keeps between calls: yours to define, in overlap/overlap.cpp.
  struct State;

 private:
  std::unique_ptr<State> state_;
};

// ---------------------------------------------------------------------------------------------
// 15.3 Ring attention, pipelined
// ---------------------------------------------------------------------------------------------

// Part 11's ring waits for a block of keys and values, computes on it, and only then sends it on:
// every rank computes, then every rank talks, in turns. Pipelined, the hop that brings the next
// block is posted before the current block is computed on and waited for only afterwards, so
// that the transfer runs under the computation (ring attention as Megatron's context parallelism
// and ring-flash-attention run it). You write the ring alone: what is computed on each block is
// handed to you as `attend`, so that the same ring serves 11.3's forward.

// One rank's keys and values as they travel around the ring (Part 11's conventions).
template <class T>
struct KeyValueBlock {
  xt::xtensor<T, 2> k;         // (batch · S, heads · d)
  xt::xtensor<T, 2> v;         // (batch · S, heads · d)
  std::vector<int> positions;  // the S absolute positions of its keys
};

// Every rank of cp_comm (p ranks, this one r) calls it together, each with its own block, the
// blocks of the same shapes on every rank. It calls attend p times: on the block of rank r (mine)
// first, then on those of ranks r - 1, r - 2, ..., r - p + 1 (mod p), in that order, each exactly
// as its owner holds it, and returns after the last one.
// The contract:
//   - hop h (h = 1 .. p - 1) brings the block of rank r - h from the left neighbour (r - 1) and
//     passes the block of rank r - h + 1 on to the right neighbour (r + 1). Its messages (k, v
//     and the positions: as many messages as you like) carry tag h. Data moves with cp_comm's
//     Isend and Irecv only;
//   - pipelined: every message of hop h, sent and received, is posted before attend starts on
//     the block hop h - 1 brought (hop 1's: before attend(mine)); none of hop h's requests is
//     tested or waited for before that attend has returned;
//   - every request has completed when it returns.
// The traps:
//   - a buffer belongs to MPI until its request completes: the block going out to the right must
//     stay where it is, unchanged, while the next one comes in from the left (how many blocks
//     must be alive at once?);
//   - attend's argument is valid during the call only;
//   - blocks are 1 MB and more, so no message completes unless its receive is posted: the order
//     in which each rank posts and waits must not make two neighbours wait for each other;
//   - p = 1: attend(mine), and no message.
template <class T>
void pipelined_ring(const KeyValueBlock<T>& mine, Communicator& cp_comm,
                    const std::function<void(const KeyValueBlock<T>&)>& attend);

}  // namespace dtk
