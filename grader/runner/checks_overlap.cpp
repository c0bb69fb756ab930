// Part 15 (assignment 4): communication hidden behind computation.
//   - assign_buckets is pure: one process asks for the buckets of a case's parameters (sizes
//     drawn from the test's shared key, or named), and for the arguments to refuse.
//   - GradientBuckets runs on the test's ranks through a backward of the grader's: layers of two
//     parameters, the last layer first, each parameter's gradient drawn from the rank's own key;
//     gradient_ready for each, progress() after each layer, finish() after the last. The sums
//     are compared with the reference's. How the reductions overlapped the backward is judged
//     from every MPI call the student's code made, call by call (MpiEventRecording): whether a
//     bucket's first message went out inside the gradient_ready that filled it, in the order
//     the buckets filled; whether anything waited during the backward; whether each progress()
//     tested what was in flight, and moved on every bucket whose messages had arrived. Each of
//     these is a fact of the calls made and of what MPI said of each request when tested, never
//     of timing: the same code gets the same verdicts at any load.
//   - pipelined_ring runs on the test's ranks, each with a block from its own key, and an attend
//     of the grader's that keeps what it is given and marks its start and end among the MPI
//     calls (mark_event): the blocks attended are compared with the reference's; each hop's
//     messages must have been posted before the attend they hide behind began, and neither
//     tested nor waited for before it returned.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include <xtensor/xview.hpp>

#include "check_context.hpp"
#include "forbidden_mpi.hpp"

namespace dtk::grade {

namespace {

// ------------------------------------ 15.1 -------------------------------------------------

struct BucketCase {
  std::vector<std::size_t> bytes;
  std::size_t cap = 0, first_cap = 0;
};

// The case's parameters: "ddp" (the header's rule on a dozen parameters), "big" (one far above
// the cap), "none" (no parameters), or params=N drawn in 1 .. size=S bytes; "zerocap",
// "zerofirst" and "zerobytes" make arguments to refuse.
BucketCase bucket_case(const CheckContext& context) {
  const TestCase& test = context.test;
  BucketCase c;
  c.cap = static_cast<std::size_t>(test.value("cap", 16));
  c.first_cap = static_cast<std::size_t>(test.value("first", c.cap));
  if (test.has_word("none")) return c;
  const int params = static_cast<int>(test.value("params", 12));
  const int size = static_cast<int>(test.value("size", 8));
  Rng rng = context.shared_rng("bytes");
  for (int i = 0; i < params; ++i) c.bytes.push_back(rng.uniform_int(1, size));
  if (test.has_word("big")) c.bytes[params / 2] = 10 * c.cap;
  if (test.has_word("zerocap")) c.cap = 0;
  if (test.has_word("zerofirst")) c.first_cap = 0;
  if (test.has_word("zerobytes")) c.bytes.back() = 0;
  return c;
}

std::string sizes_text(const std::vector<std::size_t>& values) {
  std::string text;
  for (std::size_t v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return "{" + text + "}";
}

// The buckets as one list, each bucket's parameters followed by -1.
std::vector<long long> flattened(const std::vector<std::vector<int>>& buckets) {
  std::vector<long long> flat;
  for (const std::vector<int>& bucket : buckets) {
    flat.insert(flat.end(), bucket.begin(), bucket.end());
    flat.push_back(-1);
  }
  return flat;
}

// The grader's own rule with its known mistakes switched on (a check never calls a student
// function outside call()).
struct BucketRule {
  bool forward_order = false;  // the parameters taken from the first, not the last
  bool one_cap = false;        // the first bucket given the common cap
  bool stay_under = false;     // a bucket closed before the parameter that would reach the cap
  bool drop_last = false;      // the bucket left open at the end dropped
};

std::vector<std::vector<int>> buckets_by(const BucketCase& c, const BucketRule& rule) {
  const int n = static_cast<int>(c.bytes.size());
  std::vector<std::vector<int>> buckets;
  std::vector<int> filling;
  std::size_t filled = 0;
  const auto cap = [&] { return buckets.empty() && !rule.one_cap ? c.first_cap : c.cap; };
  const auto close = [&] {
    buckets.push_back(filling);
    filling.clear();
    filled = 0;
  };
  for (int k = 0; k < n; ++k) {
    const int i = rule.forward_order ? k : n - 1 - k;
    if (rule.stay_under && !filling.empty() && filled + c.bytes[i] > cap()) close();
    filling.push_back(i);
    filled += c.bytes[i];
    if (filled >= cap()) close();
  }
  if (!filling.empty() && !rule.drop_last) close();
  return buckets;
}

void check_assign_buckets(CheckContext& context) {
  const BucketCase c = bucket_case(context);
  const std::string call = "assign_buckets(" + sizes_text(c.bytes) + ", " + std::to_string(c.cap) +
                           ", " + std::to_string(c.first_cap) + ")";
  const bool refused = c.cap == 0 || c.first_cap == 0 ||
                       std::find(c.bytes.begin(), c.bytes.end(), 0) != c.bytes.end();
  if (refused) {
    context.out.note(call + ": arguments it must refuse");
    record_refusal(context, call, [&] { assign_buckets(c.bytes, c.cap, c.first_cap); });
    return;
  }
  context.out.note(call + "; the buckets in the order they fill, each followed by -1");
  const std::string name = "the buckets";
  record_tensor(context.out, name, int_tensor(flattened(context.call([&] {
                  return assign_buckets(c.bytes, c.cap, c.first_cap);
                }))));
  context.judge([&](Judgement& judgement) {
    const auto mistake = [&](const std::string& what, const BucketRule& rule) {
      judgement.mistake(name, what, int_tensor(flattened(buckets_by(c, rule))));
    };
    mistake("the parameters taken from the first (the backward makes the last one's first)",
            {true, false, false, false});
    mistake("the first bucket given the common cap, not first_bucket_cap_bytes",
            {false, true, false, false});
    mistake(
        "a bucket closed before the parameter that would reach its cap (the cap is reached, "
        "then the bucket closes)",
        {false, false, true, false});
    mistake("the last bucket, under its cap, left out", {false, false, false, true});
  });
}

// ------------------------------------ 15.2 -------------------------------------------------

constexpr const char* kSumsPart = "the gradients summed over the ranks";
constexpr const char* kStartPart =
    "reductions start in the gradient_ready that fills them, in order";
constexpr const char* kNoWaitPart = "nothing waits during the backward";
constexpr const char* kDrivePart = "progress() drives every reduction in flight";

// The case's model, alike on every rank: layers=L layers of two parameters (parameter 2l and
// 2l + 1 in layer l), each of 1 .. size=S elements ("big": 65536 .. 98304, buckets above 1 MB),
// and buckets of 1 .. 3 parameters taken in the backward's order (parameter 2L - 1 first).
// Shapes, not values: drawn from the case's text, never from the grading's seed, so that every
// grading of the case has the same model (a ring's messages depend on the sizes).
struct Model {
  int layers = 0;
  std::vector<std::size_t> sizes;
  std::vector<std::vector<int>> buckets;
};

Model model_of(const CheckContext& context) {
  const TestCase& test = context.test;
  Model m;
  m.layers = static_cast<int>(test.value("layers", 4));
  const int size = static_cast<int>(test.value("size", 20));
  Rng rng(0, "model " + test.id());
  for (int i = 0; i < 2 * m.layers; ++i) {
    m.sizes.push_back(test.has_word("big") ? rng.uniform_int(65536, 98304)
                                           : rng.uniform_int(1, size));
  }
  std::size_t bucket_size = 0;
  for (int i = 2 * m.layers - 1; i >= 0; --i) {
    if (m.buckets.empty() || m.buckets.back().size() == bucket_size) {
      m.buckets.emplace_back();
      bucket_size = static_cast<std::size_t>(rng.uniform_int(1, 3));
    }
    m.buckets.back().push_back(i);
  }
  return m;
}

// Rank r's gradients, from its own key.
std::vector<xt::xtensor<double, 1>> gradients_of(Rng rng, const Model& m) {
  std::vector<xt::xtensor<double, 1>> gradients;
  for (std::size_t size : m.sizes)
    gradients.push_back(xt::flatten(random_matrix<double>(rng, 1, size)));
  return gradients;
}

// Gradients up to this size are recorded whole; larger ones ("big") as every stride-th element.
constexpr std::size_t kRecordedWhole = 4096;

std::size_t stride_of(std::size_t size) {
  return size <= kRecordedWhole ? 1 : (size + kRecordedWhole - 1) / kRecordedWhole;
}

xt::xtensor<double, 1> sampled(const xt::xtensor<double, 1>& gradient, std::size_t stride) {
  return xt::view(gradient, xt::range(std::size_t{0}, gradient.size(), stride));
}

// One call of the student's object, and the MPI calls it made.
struct Call {
  enum class Kind { other, ready, progress, finish } kind = Kind::other;
  int filled_bucket = -1;  // ready: the bucket this gradient completed, if any
  std::vector<MpiEvent> events;
};

// What the calls of one step's backward did, judged as the contract says.
class Overlap {
 public:
  Overlap(const std::vector<Call>& calls, int buckets) : calls_(calls), buckets_(buckets) {}

  // Buckets whose first message was not posted inside the gradient_ready that filled them.
  long long late_starts() const {
    long long late = 0;
    for (const Call& call : calls_) {
      if (call.filled_bucket < 0) continue;
      const bool posted = std::any_of(call.events.begin(), call.events.end(), [&](auto& e) {
        return e.kind == MpiEvent::Kind::post && e.tag == call.filled_bucket;
      });
      if (!posted) ++late;
    }
    return late;
  }

  // The tags of the first messages, in the order they were posted (one per bucket).
  std::vector<long long> start_order() const {
    std::vector<long long> order;
    for (const Call& call : calls_) {
      for (const MpiEvent& e : call.events) {
        if (e.kind == MpiEvent::Kind::post &&
            std::find(order.begin(), order.end(), e.tag) == order.end()) {
          order.push_back(e.tag);
        }
      }
    }
    return order;
  }

  // Waits and blocking calls inside gradient_ready and progress(); the first one's name.
  std::pair<long long, std::string> waits() const {
    long long count = 0;
    std::string first;
    for (const Call& call : calls_) {
      if (call.kind != Call::Kind::ready && call.kind != Call::Kind::progress) continue;
      for (const MpiEvent& e : call.events) {
        if (e.kind != MpiEvent::Kind::wait && e.kind != MpiEvent::Kind::blocking) continue;
        if (count++ == 0) first = e.kind == MpiEvent::Kind::wait ? "a Request's Wait" : e.call;
      }
    }
    return {count, first};
  }

  // (bucket, progress() call) pairs where the bucket had requests in flight at the call's start
  // and the call tested none of them (testing one drives every transfer of the process: one is
  // enough), and pairs where, at the call's end, every message the bucket had posted had
  // completed, yet the bucket posted more later: it sat still while it could have gone on.
  std::pair<long long, long long> undriven() const {
    std::map<std::uint64_t, int> in_flight;  // request -> tag
    long long untested = 0, still = 0;
    for (std::size_t c = 0; c < calls_.size(); ++c) {
      const Call& call = calls_[c];
      std::set<std::uint64_t> tested;
      const std::map<std::uint64_t, int> at_start = in_flight;
      for (const MpiEvent& e : call.events) {
        if (e.kind == MpiEvent::Kind::post) in_flight[e.request] = e.tag;
        if (e.kind == MpiEvent::Kind::test || e.kind == MpiEvent::Kind::wait) {
          tested.insert(e.request);
          if (e.completed || e.kind == MpiEvent::Kind::wait) in_flight.erase(e.request);
        }
      }
      if (call.kind != Call::Kind::progress) continue;
      std::set<int> in_flight_buckets, tested_buckets;
      for (const auto& [request, tag] : at_start) {
        in_flight_buckets.insert(tag);
        if (tested.count(request)) tested_buckets.insert(tag);
      }
      untested += static_cast<long long>(in_flight_buckets.size() - tested_buckets.size());
      for (int b = 0; b < buckets_; ++b) {
        const bool waiting = std::any_of(in_flight.begin(), in_flight.end(),
                                         [&](const auto& entry) { return entry.second == b; });
        if (!waiting && started(b, c) && posts_after(b, c)) ++still;
      }
    }
    return {untested, still};
  }

 private:
  bool posts_in(int bucket, std::size_t from, std::size_t to) const {
    for (std::size_t c = from; c < to; ++c) {
      for (const MpiEvent& e : calls_[c].events) {
        if (e.kind == MpiEvent::Kind::post && e.tag == bucket) return true;
      }
    }
    return false;
  }
  bool started(int bucket, std::size_t call) const { return posts_in(bucket, 0, call + 1); }
  bool posts_after(int bucket, std::size_t call) const {
    return posts_in(bucket, call + 1, calls_.size());
  }

  const std::vector<Call>& calls_;
  int buckets_;
};

// The bytes a ring sends for buckets of these sizes: 2(p - 1) messages of at most
// ceil(n / p) elements each.
std::uint64_t ring_bytes(const Model& m, int p) {
  std::uint64_t bytes = 0;
  for (const std::vector<int>& bucket : m.buckets) {
    std::size_t n = 0;
    for (int i : bucket) n += m.sizes[i];
    bytes += 2 * std::uint64_t(p - 1) * ((n + p - 1) / p) * sizeof(double);
  }
  return bytes;
}

void check_gradient_buckets(CheckContext& context) {
  const Model m = model_of(context);
  const int p = context.test.p;
  const std::vector<xt::xtensor<double, 1>> mine = gradients_of(context.rng("gradients"), m);
  context.out.note(std::to_string(p) + " ranks, a backward of " + std::to_string(m.layers) +
                   " layers of two parameters (" + sizes_text(m.sizes) + " elements; layer l " +
                   "holds parameters 2l and 2l + 1, the last layer first), " +
                   std::to_string(m.buckets.size()) +
                   " buckets of 1 to 3 parameters in the backward's order, progress() after "
                   "each layer");

  std::vector<int> bucket_of(m.sizes.size());
  std::vector<std::size_t> missing;
  for (std::size_t b = 0; b < m.buckets.size(); ++b) {
    for (int i : m.buckets[b]) bucket_of[i] = static_cast<int>(b);
    missing.push_back(m.buckets[b].size());
  }
  std::vector<Call> calls;
  const auto run = [&](Call::Kind kind, int filled_bucket, auto&& code) {
    Call call{kind, filled_bucket, {}};
    {
      MpiEventRecording recording(call.events);
      context.call(code);
    }
    calls.push_back(std::move(call));
  };
  std::unique_ptr<GradientBuckets> reducer;
  std::vector<xt::xtensor<double, 1>> sums;
  try {
    run(Call::Kind::other, -1,
        [&] { reducer = std::make_unique<GradientBuckets>(m.buckets, m.sizes, context.world); });
    for (int layer = m.layers - 1; layer >= 0; --layer) {
      for (int i : {2 * layer + 1, 2 * layer}) {
        const bool fills = --missing[bucket_of[i]] == 0 && p > 1;
        run(Call::Kind::ready, fills ? bucket_of[i] : -1,
            [&] { reducer->gradient_ready(i, mine[i]); });
      }
      run(Call::Kind::progress, -1, [&] { reducer->progress(); });
    }
    run(Call::Kind::finish, -1, [&] { sums = reducer->finish(); });
    run(Call::Kind::other, -1, [&] { reducer.reset(); });
  } catch (...) {
    // Its requests may be in flight: never destroyed outside a student call (nor waited for).
    static_cast<void>(reducer.release());
    throw;
  }

  context.out.part(kSumsPart);
  for (std::size_t i = 0; i < m.sizes.size(); ++i) {
    const std::size_t stride = stride_of(m.sizes[i]);
    const std::string name =
        "parameter " + std::to_string(i) + "'s summed gradient" +
        (stride == 1 ? "" : " (every " + std::to_string(stride) + "th element: a sample)");
    // A sum of another size is recorded whole: its shape is the mistake.
    record_tensor(context.out, name,
                  i >= sums.size()               ? xt::xtensor<double, 1>::from_shape({0})
                  : sums[i].size() == m.sizes[i] ? sampled(sums[i], stride)
                                                 : sums[i]);
    context.judge([&](Judgement& judgement) {
      xt::xtensor<double, 1> total = xt::zeros<double>({m.sizes[i]});
      for (int q = 0; q < p; ++q) total += gradients_of(judgement.rng_of(q, "gradients"), m)[i];
      judgement.mistake(name, "this rank's own gradient, never reduced", sampled(mine[i], stride));
      judgement.mistake(name, "the mean over the ranks, not the sum",
                        sampled(xt::xtensor<double, 1>(total / double(p)), stride));
    });
  }
  record_bytes_beyond(context, ring_bytes(m, p), "a ring of every bucket sends");
  // How a ring cuts its chunks decides what each rank sends (the ranks together always send
  // 2(p - 1) n elements per bucket: sending_shared below); each rank receives, at least, a value
  // of every element of every bucket.
  if (p > 1) {
    std::uint64_t elements = 0;
    for (std::size_t size : m.sizes) elements += size;
    context.least_received(elements * sizeof(double));
  }

  const Overlap overlap(calls, static_cast<int>(m.buckets.size()));
  context.out.part(kStartPart);
  context.out.integer(
      "buckets whose first message was not posted inside the gradient_ready "
      "that filled them",
      overlap.late_starts());
  record_tensor(context.out, "the buckets in the order their first messages were posted (tags)",
                int_tensor(overlap.start_order()));
  context.out.part(kNoWaitPart);
  const auto [waits, first_wait] = overlap.waits();
  if (waits > 0) context.out.note("the first call that waits during the backward: " + first_wait);
  context.out.integer("Waits and blocking calls inside gradient_ready and progress()", waits);
  context.out.part(kDrivePart);
  const auto [untested, still] = overlap.undriven();
  context.out.integer("buckets in flight a progress() call did not test", untested);
  context.out.integer("times a bucket whose messages had all arrived was left still by progress()",
                      still);
}

// ------------------------------------ 15.3 -------------------------------------------------

constexpr const char* kBlocksPart = "every block attended, in the ring's order";
constexpr const char* kRingPart = "a ring: hop h tagged h, from the left, to the right";
constexpr const char* kPostedPart = "each hop posted before the block it hides behind is attended";
constexpr const char* kWaitedPart = "each hop waited for only after that block is attended";

// Rank r's block: rows x cols keys and values ("big": 512 x 256, 1 MB each) from its own key,
// and rows increasing positions no formula gives.
KeyValueBlock<double> block_of(Rng rng, std::size_t rows, std::size_t cols) {
  KeyValueBlock<double> block{
      random_matrix<double>(rng, rows, cols), random_matrix<double>(rng, rows, cols), {}};
  int position = 0;
  for (std::size_t i = 0; i < rows; ++i)
    block.positions.push_back(position += rng.uniform_int(1, 5));
  return block;
}

xt::xtensor<double, 1> sampled_matrix(const xt::xtensor<double, 2>& m) {
  return sampled(xt::flatten(m), stride_of(m.size()));
}

// The order of the student's messages and the check's attend marks, as the contract judges it.
struct RingOrder {
  long long foreign = 0;  // messages tagged outside 1 .. p - 1, or not to the right / from the left
  long long late = 0;     // hops with a message posted after, or none before, their attend began
  long long early = 0;    // tests and waits of a hop's requests before its attend returned;
                          // blocking calls
};

RingOrder ring_order(const std::vector<MpiEvent>& events, int p, int rank) {
  RingOrder order;
  const int left = (rank - 1 + p) % p, right = (rank + 1) % p;
  // Hop h hides behind attend call h - 1: begun[h] and ended[h] once that call began, returned.
  std::vector<bool> begun(p + 1, false), ended(p + 1, false), sent(p + 1, false),
      received(p + 1, false);
  std::set<int> late_hops;
  std::map<std::uint64_t, int> hop_of;  // request -> its hop
  for (const MpiEvent& e : events) {
    switch (e.kind) {
      case MpiEvent::Kind::begin:
        if (e.tag + 1 <= p) begun[e.tag + 1] = true;
        break;
      case MpiEvent::Kind::end:
        if (e.tag + 1 <= p) ended[e.tag + 1] = true;
        break;
      case MpiEvent::Kind::post:
        if (e.tag < 1 || e.tag >= p) {
          ++order.foreign;
          break;
        }
        if (e.peer != (e.send ? right : left)) ++order.foreign;
        hop_of[e.request] = e.tag;
        if (begun[e.tag]) late_hops.insert(e.tag);
        (e.send ? sent : received)[e.tag] = true;
        break;
      case MpiEvent::Kind::test:
      case MpiEvent::Kind::wait: {
        const auto found = hop_of.find(e.request);
        if (found != hop_of.end() && !ended[found->second]) ++order.early;
        break;
      }
      case MpiEvent::Kind::blocking:
        ++order.early;
        break;
    }
  }
  for (int hop = 1; hop < p; ++hop) {
    if (!sent[hop] || !received[hop]) late_hops.insert(hop);
  }
  order.late = static_cast<long long>(late_hops.size());
  return order;
}

void check_pipelined_ring(CheckContext& context) {
  const TestCase& test = context.test;
  const int p = test.p, r = context.rank();
  const bool big = test.has_word("big");
  const auto rows = static_cast<std::size_t>(big ? 512 : test.value("rows", 6));
  const auto cols = static_cast<std::size_t>(big ? 256 : test.value("cols", 4));
  const KeyValueBlock<double> mine = block_of(context.rng("block"), rows, cols);
  context.out.note(std::to_string(p) + (p == 1 ? " rank" : " ranks, each") +
                   " with a block of keys and values of " + std::to_string(rows) + " x " +
                   std::to_string(cols) +
                   " and its own positions; attend records what it is given");

  std::vector<MpiEvent> events;
  std::vector<KeyValueBlock<double>> attended;
  const std::function<void(const KeyValueBlock<double>&)> attend =
      [&](const KeyValueBlock<double>& block) {
        const int call = static_cast<int>(attended.size());
        mark_event(MpiEvent::Kind::begin, call);
        attended.push_back(block);
        mark_event(MpiEvent::Kind::end, call);
      };
  {
    MpiEventRecording recording(events);
    context.call([&] { pipelined_ring<double>(mine, context.world, attend); });
  }

  context.out.part(kBlocksPart);
  context.out.integer("attend calls", static_cast<long long>(attended.size()));
  const KeyValueBlock<double> none{xt::xtensor<double, 2>::from_shape({0, 0}),
                                   xt::xtensor<double, 2>::from_shape({0, 0}),
                                   {}};  // not made
  for (int call = 0; call < p; ++call) {
    const std::string name = "attend call " + std::to_string(call) + "'s ";
    const bool made = call < static_cast<int>(attended.size());
    const KeyValueBlock<double>& block = made ? attended[call] : none;
    const std::string sample = big ? " (a sample)" : "";
    record_tensor(context.out, name + "keys" + sample, sampled_matrix(block.k));
    record_tensor(context.out, name + "values" + sample, sampled_matrix(block.v));
    record_tensor(context.out, name + "positions", int_tensor(block.positions));
    context.judge([&](Judgement& judgement) {
      const auto mistake = [&](const std::string& what, int owner) {
        const KeyValueBlock<double> expected =
            block_of(judgement.rng_of((owner % p + p) % p, "block"), rows, cols);
        judgement.mistake(name + "keys" + sample, what, sampled_matrix(expected.k));
      };
      if (call > 0) {
        mistake("the block of rank r + " + std::to_string(call) +
                    ": the ring turns the other way, or a block arrived in a buffer still being "
                    "sent",
                r + call);
        mistake("this rank's own block again: nothing received", r);
      }
    });
  }
  const std::uint64_t block_bytes = 2 * rows * cols * sizeof(double) + rows * sizeof(int);
  record_bytes_beyond(context, std::uint64_t(p - 1) * block_bytes,
                      "p - 1 hops of one block each send");
  if (p > 1) context.least_received(std::uint64_t(p - 1) * block_bytes);

  const RingOrder order = ring_order(events, p, r);
  context.out.part(kRingPart);
  context.out.integer(
      "messages tagged outside 1 .. p - 1, or sent elsewhere than to the right neighbour, or "
      "received from elsewhere than the left",
      order.foreign);
  context.out.part(kPostedPart);
  context.out.integer(
      "hops h with a message tagged h posted after, or no send or no receive tagged h posted "
      "before, attend call h - 1 began",
      order.late);
  context.out.part(kWaitedPart);
  context.out.integer(
      "Tests and Waits of hop h's requests before attend call h - 1 returned, and blocking calls",
      order.early);
}

}  // namespace

DTK_GRADE_CHECK(check_assign_buckets, {"assign_buckets",
                                       CaseKind::fields,
                                       /*collective=*/false,
                                       /*typed=*/false,
                                       {},
                                       /*reduces=*/false,
                                       /*timed_against=*/"",
                                       /*case_words=*/
                                       {"params", "size", "cap", "first", "big", "none", "zerocap",
                                        "zerofirst", "zerobytes"}});
DTK_GRADE_CHECK(check_gradient_buckets, {"GradientBuckets",
                                         CaseKind::fields,
                                         /*collective=*/true,
                                         /*typed=*/false,
                                         {kSumsPart, kStartPart, kNoWaitPart, kDrivePart},
                                         /*reduces=*/false,
                                         /*timed_against=*/"",
                                         /*case_words=*/{"layers", "size", "big"},
                                         /*sending_shared=*/true});
DTK_GRADE_CHECK(check_pipelined_ring, {"pipelined_ring",
                                       CaseKind::fields,
                                       /*collective=*/true,
                                       /*typed=*/false,
                                       {kBlocksPart, kRingPart, kPostedPart, kWaitedPart},
                                       /*reduces=*/false,
                                       /*timed_against=*/"",
                                       /*case_words=*/{"rows", "cols", "big"}});

}  // namespace dtk::grade
