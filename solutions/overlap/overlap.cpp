// Part 15: communication hidden behind computation: gradient buckets, reduced during the
// backward, and ring attention's ring, pipelined. Declared, with the exact contract of every
// function, in include/dtk/overlap.hpp. Data moves with the Communicator's Isend and Irecv only.
#include <dtk/overlap.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dtk {

namespace {

void require(bool ok, const std::string& function, const std::string& what) {
  if (!ok) throw std::invalid_argument(function + ": " + what);
}

// ------------------------------ 15.2's ring, one step at a time ---------------------------------

// One bucket's ring allreduce over p ranks, driven from outside: start() posts its first step,
// advance() moves it on as far as its messages allow without waiting, complete() waits for the
// rest. The bucket's elements are cut into p chunks; steps 0 .. p - 2 reduce-scatter them (each
// rank ends with one chunk summed), steps p - 1 .. 2p - 3 all-gather the sums. At every step a
// rank sends one chunk to its right neighbour and receives one from its left.
class RingReduction {
 public:
  RingReduction(std::vector<double> data, int tag, Communicator& comm)
      : data_(std::move(data)), tag_(tag), comm_(comm) {}

  void start() {
    if (steps() > 0) post_step();
  }

  // Tests the step in flight; while it has arrived, applies it and posts the next one.
  void advance() {
    while (step_ < steps() && step_arrived(/*wait=*/false)) next_step();
  }

  void complete() {
    while (step_ < steps()) {
      step_arrived(/*wait=*/true);
      next_step();
    }
  }

  const std::vector<double>& data() const { return data_; }

 private:
  int p() const { return comm_.Get_size(); }
  int steps() const { return 2 * (p() - 1); }
  std::size_t chunk_begin(int chunk) const { return data_.size() * chunk / p(); }
  std::size_t chunk_size(int chunk) const { return chunk_begin(chunk + 1) - chunk_begin(chunk); }
  int chunk_mod(int chunk) const { return ((chunk % p()) + p()) % p(); }

  // The chunks step `step_` sends and receives: reduce-scatter, then all-gather, around the ring.
  int sent_chunk() const {
    const int r = comm_.Get_rank();
    return step_ < p() - 1 ? chunk_mod(r - step_) : chunk_mod(r + 1 - (step_ - (p() - 1)));
  }
  int received_chunk() const { return chunk_mod(sent_chunk() - 1); }

  void post_step() {
    const int r = comm_.Get_rank();
    const int chunk = received_chunk();
    incoming_.assign(chunk_size(chunk), 0.0);
    receiving_ = comm_.Irecv(incoming_, (r - 1 + p()) % p(), tag_);
    const int out = sent_chunk();
    outgoing_.assign(data_.begin() + chunk_begin(out), data_.begin() + chunk_begin(out + 1));
    sending_ = comm_.Isend(outgoing_, (r + 1) % p(), tag_);
  }

  // Whether both messages of the step in flight have completed: each one not yet complete tested
  // (a request is complete only once a Test or a Wait has said so), or waited for.
  bool step_arrived(bool wait) {
    bool arrived = true;
    for (Request* request : {&receiving_, &sending_}) {
      if (request->complete()) continue;
      if (wait) {
        request->Wait();
      } else if (!request->Test()) {
        arrived = false;
      }
    }
    return arrived;
  }

  // The step in flight has arrived: its chunk summed in (reduce-scatter) or copied (all-gather).
  void next_step() {
    const std::size_t begin = chunk_begin(received_chunk());
    for (std::size_t i = 0; i < incoming_.size(); ++i) {
      data_[begin + i] = step_ < p() - 1 ? data_[begin + i] + incoming_[i] : incoming_[i];
    }
    if (++step_ < steps()) post_step();
  }

  std::vector<double> data_;
  // The step's messages: MPI's until their requests complete (only then reassigned).
  std::vector<double> incoming_, outgoing_;
  int tag_;
  Communicator& comm_;
  int step_ = 0;
  Request receiving_, sending_;
};

}  // namespace

// ----------------------------------- 15.1 -------------------------------------------------------

std::vector<std::vector<int>> assign_buckets(const std::vector<std::size_t>& parameter_bytes,
                                             std::size_t bucket_cap_bytes,
                                             std::size_t first_bucket_cap_bytes) {
  require(bucket_cap_bytes > 0, "assign_buckets", "bucket_cap_bytes must be > 0");
  require(first_bucket_cap_bytes > 0, "assign_buckets", "first_bucket_cap_bytes must be > 0");
  for (std::size_t bytes : parameter_bytes) {
    require(bytes > 0, "assign_buckets", "every parameter_bytes must be > 0");
  }
  std::vector<std::vector<int>> buckets;
  std::vector<int> filling;
  std::size_t filled_bytes = 0;
  for (int i = static_cast<int>(parameter_bytes.size()) - 1; i >= 0; --i) {
    filling.push_back(i);
    filled_bytes += parameter_bytes[i];
    if (filled_bytes >= (buckets.empty() ? first_bucket_cap_bytes : bucket_cap_bytes)) {
      buckets.push_back(std::move(filling));
      filling.clear();
      filled_bytes = 0;
    }
  }
  if (!filling.empty()) buckets.push_back(std::move(filling));
  return buckets;
}

// ----------------------------------- 15.2 -------------------------------------------------------

struct GradientBuckets::State {
  std::vector<std::vector<int>> buckets;
  std::vector<std::size_t> sizes;
  Communicator comm;                // a copy shares dp_comm's MPI communicator and byte counter
  std::vector<int> bucket_of;       // by parameter
  std::vector<std::size_t> offset;  // by parameter: where it starts in its bucket
  std::vector<std::vector<double>> filling;  // by bucket, until it is full
  std::vector<std::size_t> missing;          // by bucket: parameters not ready yet
  // The reductions started, in the order their buckets filled (unique_ptr: a reduction's buffers
  // are in flight and must not move when the vector grows).
  std::vector<std::unique_ptr<RingReduction>> reductions;
  std::vector<int> reduced_bucket;  // by reduction
};

GradientBuckets::GradientBuckets(std::vector<std::vector<int>> buckets,
                                 std::vector<std::size_t> sizes, Communicator& dp_comm)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.buckets = std::move(buckets);
  s.sizes = std::move(sizes);
  s.comm = dp_comm;
  s.bucket_of.assign(s.sizes.size(), -1);
  s.offset.assign(s.sizes.size(), 0);
  for (std::size_t b = 0; b < s.buckets.size(); ++b) {
    std::size_t bytes = 0;
    for (int i : s.buckets[b]) {
      require(i >= 0 && i < static_cast<int>(s.sizes.size()) && s.bucket_of[i] == -1,
              "GradientBuckets", "every parameter must be in exactly one bucket");
      s.bucket_of[i] = static_cast<int>(b);
      s.offset[i] = bytes;
      bytes += s.sizes[i];
    }
    s.filling.emplace_back(bytes);
    s.missing.push_back(s.buckets[b].size());
  }
}

GradientBuckets::~GradientBuckets() = default;

void GradientBuckets::gradient_ready(int parameter, const xt::xtensor<double, 1>& gradient) {
  State& s = *state_;
  require(parameter >= 0 && parameter < static_cast<int>(s.sizes.size()), "gradient_ready",
          "no parameter " + std::to_string(parameter));
  require(gradient.size() == s.sizes[parameter], "gradient_ready",
          "parameter " + std::to_string(parameter) + "'s gradient has " +
              std::to_string(gradient.size()) + " elements, not " +
              std::to_string(s.sizes[parameter]));
  const int b = s.bucket_of[parameter];
  std::copy(gradient.begin(), gradient.end(), s.filling[b].begin() + s.offset[parameter]);
  if (--s.missing[b] > 0) return;
  // Full: its reduction starts now, with the bucket's elements moved into it.
  s.reductions.push_back(std::make_unique<RingReduction>(std::move(s.filling[b]), b, s.comm));
  s.reduced_bucket.push_back(b);
  s.reductions.back()->start();
}

void GradientBuckets::progress() {
  for (auto& reduction : state_->reductions) reduction->advance();
}

std::vector<xt::xtensor<double, 1>> GradientBuckets::finish() {
  State& s = *state_;
  require(s.reductions.size() == s.buckets.size(), "finish",
          "called before every parameter's gradient was ready");
  std::vector<xt::xtensor<double, 1>> sums(s.sizes.size());
  for (std::size_t k = 0; k < s.reductions.size(); ++k) {
    s.reductions[k]->complete();
    const std::vector<double>& data = s.reductions[k]->data();
    for (int i : s.buckets[s.reduced_bucket[k]]) {
      sums[i] = xt::xtensor<double, 1>::from_shape({s.sizes[i]});
      std::copy_n(data.begin() + s.offset[i], s.sizes[i], sums[i].begin());
    }
  }
  return sums;
}

// ----------------------------------- 15.3 -------------------------------------------------------

template <class T>
void pipelined_ring(const KeyValueBlock<T>& mine, Communicator& cp_comm,
                    const std::function<void(const KeyValueBlock<T>&)>& attend) {
  const int p = cp_comm.Get_size();
  const int r = cp_comm.Get_rank();
  const int left = (r - 1 + p) % p, right = (r + 1) % p;
  // Two blocks alive at once: `current`, attended and going out to the right, and `next`, coming
  // in from the left. They swap once both of a hop's transfers have completed.
  KeyValueBlock<T> current = mine, next = mine;
  for (int hop = 1; hop <= p; ++hop) {
    std::vector<Request> transfers;
    if (hop < p) {
      transfers.push_back(cp_comm.Irecv(next.k, left, hop));
      transfers.push_back(cp_comm.Irecv(next.v, left, hop));
      transfers.push_back(cp_comm.Irecv(next.positions, left, hop));
      transfers.push_back(cp_comm.Isend(current.k, right, hop));
      transfers.push_back(cp_comm.Isend(current.v, right, hop));
      transfers.push_back(cp_comm.Isend(current.positions, right, hop));
    }
    attend(current);
    for (Request& transfer : transfers) transfer.Wait();
    std::swap(current, next);
  }
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests link against exactly these.
// -------------------------------------------------------------------------------------------
template void pipelined_ring<float>(const KeyValueBlock<float>&, Communicator&,
                                    const std::function<void(const KeyValueBlock<float>&)>&);
template void pipelined_ring<double>(const KeyValueBlock<double>&, Communicator&,
                                     const std::function<void(const KeyValueBlock<double>&)>&);

}  // namespace dtk
