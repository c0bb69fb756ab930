// Part 15 public tests: assign_buckets by hand; GradientBuckets on 4 ranks (and on groups of 2
// and of 1) through a backward of this file: layers of parameters whose gradients say which rank
// and element they come from, progress() between the layers, finish() after them; and
// pipelined_ring with an attend that keeps the blocks and the order of the calls around it.
//   mpirun -n 4 ./build/tests/test_overlap
// What is checked of GradientBuckets: every gradient summed over the ranks; a bucket's first
// message posted inside the gradient_ready that fills it; nothing but Isend and Irecv (and their
// completions) inside gradient_ready and progress; and progress() alone, called after the
// backward, moving every ring on to its last message before finish() runs. The hidden tests
// judge the same from every MPI call the code makes (the tags included) and on other shapes.
// Of pipelined_ring: every block attended, exactly and in the ring's order; messages to the right
// and from the left only; something in flight whenever attend begins on any block but the last.
// The hidden tests tell the two ways to miss that apart, hop by hop (posted too late, or
// completed too early), by the tags.
#include "dtk_test.hpp"

#include <dtk/overlap.hpp>

#include <mpi.h>

#include <xtensor/xadapt.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace {

constexpr int kRanks = 4;

using dtk::testing::expect_invalid_argument;

std::string bytes_text(const std::vector<std::size_t>& bytes) {
  std::string text;
  for (std::size_t b : bytes) text += (text.empty() ? "" : ", ") + std::to_string(b);
  return "{" + text + "}";
}

std::string buckets_text(const std::vector<std::vector<int>>& buckets) {
  std::string text = "{";
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    text += b ? ", {" : "{";
    for (std::size_t i = 0; i < buckets[b].size(); ++i) {
      text += (i ? ", " : "") + std::to_string(buckets[b][i]);
    }
    text += "}";
  }
  return text + "}";
}

struct ByHand {
  std::vector<std::size_t> bytes;
  std::size_t cap, first_cap;
  std::vector<std::vector<int>> buckets;
  const char* why;
};

const std::vector<ByHand> kByHand = {
    {{4, 4, 4, 4, 4}, 8, 4, {{4}, {3, 2}, {1, 0}}, "the first bucket has a cap of its own"},
    {{1, 1, 1, 1, 1}, 3, 3, {{4, 3, 2}, {1, 0}}, "the last bucket holds what is left"},
    {{100, 1, 1}, 4, 2, {{2, 1}, {0}}, "a parameter above the cap closes its bucket"},
    {{3, 5, 2, 6}, 6, 6, {{3}, {2, 1}, {0}}, "a bucket closes when it reaches its cap"},
    {{7}, 100, 100, {{0}}, "one parameter"},
    {{}, 10, 10, {}, "no parameters, no buckets"},
};

TEST_CASE("Part 15 | assign_buckets: by hand", "[part15]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    for (const ByHand& c : kByHand) {
      const std::string call = "assign_buckets(" + bytes_text(c.bytes) + ", " +
                               std::to_string(c.cap) + ", " + std::to_string(c.first_cap) + ")";
      const std::string actual = buckets_text(dtk::assign_buckets(c.bytes, c.cap, c.first_cap));
      check.that(actual == buckets_text(c.buckets), call + " (" + c.why + ")\n  expected " +
                                                        buckets_text(c.buckets) + "\n  actual   " +
                                                        actual);
    }
  });
}

TEST_CASE("Part 15 | assign_buckets: bad arguments throw std::invalid_argument", "[part15]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    expect_invalid_argument(check, "assign_buckets({4, 4}, 0, 4)", [] {
      dtk::assign_buckets({4, 4}, 0, 4);
    });
    expect_invalid_argument(check, "assign_buckets({4, 4}, 4, 0)", [] {
      dtk::assign_buckets({4, 4}, 4, 0);
    });
    expect_invalid_argument(check, "assign_buckets({4, 0}, 4, 4)", [] {
      dtk::assign_buckets({4, 0}, 4, 4);
    });
  });
}

// --- GradientBuckets ---------------------------------------------------------------------------

// A model of `layers` layers of two parameters each; parameter i has sizes[i] elements. Rank r's
// gradient of parameter i holds r + 1 + i / 1000 + e / 10^6 at element e: every sum says which
// elements it added.
struct Model {
  int layers;
  std::vector<std::size_t> sizes;
};

xt::xtensor<double, 1> gradient_of(int rank, int parameter, std::size_t size) {
  auto g = xt::xtensor<double, 1>::from_shape({size});
  for (std::size_t e = 0; e < size; ++e) g(e) = rank + 1 + parameter / 1e3 + double(e) / 1e6;
  return g;
}

// What the Communicator's observer saw while a WatchedCalls lived: messages posted (Isend and
// Irecv), the bytes the Isends sent, and every call that is not a non-blocking one or a
// completion ("Wait": a request completed by Wait or Test).
struct Seen {
  int posted = 0;
  double bytes_sent = 0;
  std::vector<std::string> blocking;
};
Seen seen;

struct WatchedCalls {
  WatchedCalls() {
    seen = Seen{};
    dtk::set_communication_observer([](const dtk::CommunicationCall& call) {
      const std::string name = call.call;
      if (name == "Isend" || name == "Irecv") ++seen.posted;
      if (name == "Isend") seen.bytes_sent += static_cast<double>(call.bytes);
      if (name != "Isend" && name != "Irecv" && name != "Wait") seen.blocking.push_back(name);
    });
  }
  ~WatchedCalls() { dtk::set_communication_observer({}); }
};

// The buckets of the model: the backward's order, three parameters each (the last bucket fewer).
std::vector<std::vector<int>> buckets_of(const Model& model) {
  std::vector<std::vector<int>> buckets;
  for (int i = 2 * model.layers - 1; i >= 0; --i) {
    if (buckets.empty() || buckets.back().size() == 3) buckets.emplace_back();
    buckets.back().push_back(i);
  }
  return buckets;
}

// Runs a step's backward on `comm` and checks the sums and what the calls did.
void run_backward(dtk::testing::Checks& check, const Model& model, dtk::Communicator& comm,
                  const std::string& where) {
  const int p = comm.Get_size(), r = comm.Get_rank();
  const std::vector<std::vector<int>> buckets = buckets_of(model);
  std::vector<int> bucket_of(model.sizes.size());
  std::vector<std::size_t> missing(buckets.size());
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    for (int i : buckets[b]) bucket_of[i] = static_cast<int>(b);
    missing[b] = buckets[b].size();
  }
  const WatchedCalls watched;
  dtk::GradientBuckets reducer(buckets, model.sizes, comm);
  std::vector<std::string> late;  // buckets whose first message waited past their last gradient
  for (int layer = model.layers - 1; layer >= 0; --layer) {
    for (int i : {2 * layer + 1, 2 * layer}) {
      const int before = seen.posted;
      reducer.gradient_ready(i, gradient_of(r, i, model.sizes[i]));
      if (--missing[bucket_of[i]] == 0 && p > 1 && seen.posted == before) {
        late.push_back("bucket " + std::to_string(bucket_of[i]));
      }
    }
    reducer.progress();
  }
  check.that(late.empty(), where + ": no message was posted inside the gradient_ready that " +
                               "filled " + (late.empty() ? "" : late.front()) +
                               ": a full bucket's reduction starts at once");
  check.that(seen.blocking.empty(),
             where + ": gradient_ready and progress called " +
                 (seen.blocking.empty() ? "" : seen.blocking.front()) +
                 ", which waits: during the backward use Isend, Irecv and Request::Test only");

  // progress() alone, after the backward, must take every ring to its last message. However a
  // ring cuts its chunks, the ranks together send 2(p - 1) n elements per bucket of n: the ranks
  // call progress() in turns with a sum of what they sent so far (this test's own MPI call),
  // until that is all of it or 10 s have passed.
  std::size_t elements = 0;
  for (std::size_t size : model.sizes) elements += size;
  const double whole = 2.0 * (p - 1) * double(elements) * sizeof(double);
  const double deadline = MPI_Wtime() + 10;
  double totals[2] = {0, 0};  // bytes the ranks sent; ranks out of time
  while (totals[0] < whole && totals[1] == 0) {
    reducer.progress();
    double mine[2] = {seen.bytes_sent, MPI_Wtime() > deadline ? 1.0 : 0.0};
    MPI_Allreduce(mine, totals, 2, MPI_DOUBLE, MPI_SUM, comm.handle());
  }
  check.that(totals[0] >= whole,
             where + ": after 10 s of progress() calls, the ranks had sent " +
                 std::to_string(static_cast<long long>(totals[0])) + " of the " +
                 std::to_string(static_cast<long long>(whole)) +
                 " bytes their rings send: progress() must test the requests in flight and, as "
                 "a step's messages arrive, post the next step's");

  const std::vector<xt::xtensor<double, 1>> sums = reducer.finish();
  check.equal(where + ": finish() returns one gradient per parameter", model.sizes.size(),
              sums.size());
  for (std::size_t i = 0; i < sums.size() && i < model.sizes.size(); ++i) {
    xt::xtensor<double, 1> expected = xt::zeros<double>({model.sizes[i]});
    for (int q = 0; q < p; ++q) expected += gradient_of(q, static_cast<int>(i), model.sizes[i]);
    check.close(where + ": parameter " + std::to_string(i) + "'s gradient summed", expected,
                sums[i], 1e-12, 0,
                {{"this rank's own gradient, never reduced",
                  gradient_of(r, static_cast<int>(i), model.sizes[i])},
                 {"the mean over the ranks, not the sum", expected / double(p)}});
  }
}

TEST_CASE("Part 15 | GradientBuckets: 4 ranks, small buckets", "[part15]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    run_backward(check, {4, {5, 3, 1, 7, 2, 9, 4, 6}}, world, "4 ranks, 8 parameters");
  });
}

TEST_CASE("Part 15 | GradientBuckets: groups of 2 and of 1, buckets smaller than the ring",
          "[part15]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int r = world.Get_rank();
    dtk::Communicator pairs = world.Split(r / 2, r);
    run_backward(check, {3, {1, 1, 2, 1, 1, 3}}, pairs, "2 ranks, 6 parameters of 1 to 3");
    dtk::Communicator alone = world.Split(r, 0);
    run_backward(check, {2, {4, 2, 3, 1}}, alone, "1 rank");
  });
}

TEST_CASE("Part 15 | GradientBuckets: buckets of 1 MB and more", "[part15]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    run_backward(check, {2, {65536, 131072, 65537, 40000}}, world, "4 ranks, 2 MB of gradients");
  });
}

// ------------------------------------ 15.3 -------------------------------------------------

// Rank q's block: every value says whose block it is and where it sits.
dtk::KeyValueBlock<double> block_of(int q, std::size_t rows, std::size_t cols) {
  dtk::KeyValueBlock<double> block{xt::xtensor<double, 2>::from_shape({rows, cols}),
                                   xt::xtensor<double, 2>::from_shape({rows, cols}),
                                   {}};
  for (std::size_t i = 0; i < block.k.size(); ++i) {
    block.k.flat(i) = 1e6 * q + double(i);
    block.v.flat(i) = -1e6 * q - double(i);
  }
  for (std::size_t i = 0; i < rows; ++i) block.positions.push_back(100 * q + 3 * int(i));
  return block;
}

// Runs pipelined_ring on `comm` with an attend that keeps the order of everything: its own
// calls, and the messages posted and completed around them.
void run_ring(dtk::testing::Checks& check, dtk::Communicator& comm, std::size_t rows,
              std::size_t cols, const std::string& where) {
  const int p = comm.Get_size(), r = comm.Get_rank();
  const int left = comm.world_rank_of((r - 1 + p) % p), right = comm.world_rank_of((r + 1) % p);
  std::vector<std::string> order;  // "post", "done", "begin", "end", or the blocking call
  std::vector<std::string> strays;
  dtk::set_communication_observer([&](const dtk::CommunicationCall& call) {
    const std::string name = call.call;
    if (name == "Isend" || name == "Irecv") {
      order.push_back("post");
      if (call.peer != (name == "Isend" ? right : left)) {
        strays.push_back(name + (name == "Isend" ? " to " : " from ") + "world rank " +
                         std::to_string(call.peer));
      }
    } else {
      order.push_back(name == "Wait" ? "done" : name);
    }
  });
  std::vector<dtk::KeyValueBlock<double>> attended;
  dtk::pipelined_ring<double>(block_of(r, rows, cols), comm,
                              [&](const dtk::KeyValueBlock<double>& block) {
                                order.push_back("begin");
                                attended.push_back(block);
                                order.push_back("end");
                              });
  dtk::set_communication_observer({});

  check.equal(where + ": attend calls", std::size_t(p), attended.size());
  for (int call = 0; call < p && call < int(attended.size()); ++call) {
    const dtk::KeyValueBlock<double> expected = block_of((r - call + p) % p, rows, cols);
    const std::string which = where + ": attend call " + std::to_string(call);
    check.close(
        which + "'s keys (of rank r - " + std::to_string(call) + ")", expected.k, attended[call].k,
        0, 0,
        {{"the block of rank r + " + std::to_string(call) +
              ": the ring turns the other way, or a block arrived in a buffer still being sent",
          block_of((r + call) % p, rows, cols).k}});
    check.close(which + "'s values", expected.v, attended[call].v, 0, 0);
    check.that(attended[call].positions == expected.positions, which + "'s positions");
  }
  check.that(strays.empty(), where + ": " + (strays.empty() ? "" : strays.front()) +
                                 ": a ring sends to the right neighbour and receives from the "
                                 "left one only");
  // When attend begins on any block but the last, the next hop's messages are in flight (posted
  // before, not yet completed by a Test or a Wait); when the ring returns, nothing is.
  int in_flight = 0, call = 0;
  std::vector<int> idle_calls;
  std::string blocking;
  for (const std::string& what : order) {
    if (what == "post") {
      ++in_flight;
    } else if (what == "done") {
      --in_flight;
    } else if (what == "begin") {
      if (call++ < p - 1 && in_flight == 0) idle_calls.push_back(call - 1);
    } else if (what != "end" && blocking.empty()) {
      blocking = what;
    }
  }
  check.that(idle_calls.empty(),
             where + ": nothing was in flight when attend call " +
                 (idle_calls.empty() ? "" : std::to_string(idle_calls.front())) +
                 " began: the next hop is posted before the current block is attended, and "
                 "waited for after");
  check.equal(where + ": requests still in flight when pipelined_ring returned", 0, in_flight);
  check.that(blocking.empty(), where + ": pipelined_ring called " + blocking +
                                   ": only Isend and Irecv, and their Test and Wait");
}

TEST_CASE("Part 15 | pipelined_ring: 4 ranks, blocks of 1 MB", "[part15]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    run_ring(check, world, 512, 256, "4 ranks, blocks of 512 x 256");
  });
}

TEST_CASE("Part 15 | pipelined_ring: groups of 2 and of 1, small blocks", "[part15]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int r = world.Get_rank();
    dtk::Communicator pairs = world.Split(r / 2, r);
    run_ring(check, pairs, 3, 2, "2 ranks");
    dtk::Communicator alone = world.Split(r, 0);
    run_ring(check, alone, 4, 5, "1 rank");
  });
}

}  // namespace
