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

// Helpers you write go in an anonymous namespace here, so that they stay private to this file:
// namespace {
// ...
// }  // namespace

// ----------------------------------- 15.1 -------------------------------------------------------

std::vector<std::vector<int>> assign_buckets(const std::vector<std::size_t>& parameter_bytes,
                                             std::size_t bucket_cap_bytes,
                                             std::size_t first_bucket_cap_bytes) {
  // TODO (Part 15.1): the header's rule, exactly. Traps: which end of the model the backward
  // starts from; which cap applies to which bucket; the bucket left open at the end.
  throw NotImplemented("assign_buckets", "overlap/overlap.cpp");
}

// ----------------------------------- 15.2 -------------------------------------------------------

// What one step's reduction keeps between calls: the buckets, the gradients received so far,
// the reductions in flight with their buffers and requests, ... Yours to design.
struct GradientBuckets::State {};

GradientBuckets::GradientBuckets(std::vector<std::vector<int>> buckets,
                                 std::vector<std::size_t> sizes, Communicator& dp_comm)
    : state_(std::make_unique<State>()) {
  // TODO (Part 15.2): remember what gradient_ready and finish will need. A bucket's reduction is
  // a ring (Part 7's) that must be advanced one step at a time from several calls: think of it
  // as an object with a state of its own, and of where its buffers live while MPI owns them.
  throw NotImplemented("GradientBuckets", "overlap/overlap.cpp");
}

GradientBuckets::~GradientBuckets() = default;

void GradientBuckets::gradient_ready(int parameter, const xt::xtensor<double, 1>& gradient) {
  // TODO (Part 15.2): keep the gradient; when its bucket is full, start that bucket's reduction
  // now (tag: the bucket's index). Never wait here.
  throw NotImplemented("GradientBuckets::gradient_ready", "overlap/overlap.cpp");
}

void GradientBuckets::progress() {
  // TODO (Part 15.2): advance every reduction in flight as far as it goes without waiting.
  throw NotImplemented("GradientBuckets::progress", "overlap/overlap.cpp");
}

std::vector<xt::xtensor<double, 1>> GradientBuckets::finish() {
  // TODO (Part 15.2): complete what is left, then hand every parameter its summed gradient.
  throw NotImplemented("GradientBuckets::finish", "overlap/overlap.cpp");
}

// ----------------------------------- 15.3 -------------------------------------------------------

template <class T>
void pipelined_ring(const KeyValueBlock<T>& mine, Communicator& cp_comm,
                    const std::function<void(const KeyValueBlock<T>&)>& attend) {
  // TODO (Part 15.3): p calls of attend, each hop posted before the attend it must hide behind
  // and waited for after it (tag: the hop). Draw the two neighbours' timelines first: which
  // buffers each hop reads and writes, and when each may be reused.
  throw NotImplemented("pipelined_ring", "overlap/overlap.cpp");
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
