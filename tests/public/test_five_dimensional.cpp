// Part 14 public tests: interleaved_schedule, run_interleaved_schedule, the grid's functions, the
// stage boundary's and the uneven shares', on 4 ranks.
//   mpirun -n 4 ./build/tests/test_five_dimensional
// The schedules expected are written out by hand from the header's rules; every other schedule
// is checked by what any valid schedule must be (each step once, and runnable by the whole
// pipeline without a rank waiting forever). The executor is driven by chunks of this file whose
// tensors say where they come from, on a schedule of this file, and the last cases send
// activations of 1 MB and more. The grid is checked by hand on one grid and, on others, by what
// any grid's groups must be; the boundary by sending a tensor from one stage to the other.
#include "dtk_test.hpp"

#include <dtk/five_dimensional.hpp>
#include "tagged_tensors.hpp"

#include <xtensor/xadapt.hpp>

#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace {

constexpr int kRanks = 4;

using dtk::testing::describe_tag;
using dtk::testing::expect_invalid_argument;
using dtk::testing::Kind;
using dtk::testing::report_first_few;
using dtk::testing::shape_text;
using dtk::testing::tagged;

// "F0.1 B2.0 ...": F0.1 is the forward of micro-batch 0 through the rank's chunk 1.
std::string schedule_text(const std::vector<dtk::ChunkStep>& steps) {
  std::string text;
  for (const dtk::ChunkStep& step : steps) {
    text += (text.empty() ? "" : " ") + std::string(step.op == dtk::PipeOp::Forward ? "F" : "B") +
            std::to_string(step.microbatch) + "." + std::to_string(step.chunk);
  }
  return text;
}

std::vector<dtk::ChunkStep> parse_schedule(const std::string& text) {
  std::vector<dtk::ChunkStep> steps;
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    const std::size_t dot = word.find('.');
    steps.push_back({word[0] == 'F' ? dtk::PipeOp::Forward : dtk::PipeOp::Backward,
                     std::stoi(word.substr(1, dot - 1)), std::stoi(word.substr(dot + 1))});
  }
  return steps;
}

std::string count_of(int n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string layout_text(int rank, int p, int v, int m) {
  return "interleaved_schedule(rank " + std::to_string(rank) + ", " + count_of(p, "rank", "ranks") +
         ", " + count_of(v, "chunk", "chunks") + ", " +
         count_of(m, "micro-batch", "micro-batches") + ")";
}

// Written out by hand from the header's rules: {p, V, m} -> every rank's schedule.
const std::map<std::tuple<int, int, int>, std::vector<std::string>> kByHand = {
    {{2, 2, 4},
     {"F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0",
      "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0"}},
    {{4, 2, 4},
     {"F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 B0.1 B1.1 B2.1 B3.1 B0.0 B1.0 B2.0 B3.0",
      "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 B0.1 B1.1 B2.1 B3.1 B0.0 B1.0 B2.0 B3.0",
      "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 B0.1 F3.1 B1.1 B2.1 B3.1 B0.0 B1.0 B2.0 B3.0",
      "F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 B0.0 B1.0 B2.0 B3.0"}},
    {{2, 3, 2},
     {"F0.0 F1.0 F0.1 F1.1 F0.2 F1.2 B0.2 B1.2 B0.1 B1.1 B0.0 B1.0",
      "F0.0 F1.0 F0.1 F1.1 F0.2 B0.2 F1.2 B1.2 B0.1 B1.1 B0.0 B1.0"}},
    {{3, 1, 3},
     {"F0.0 F1.0 F2.0 B0.0 B1.0 B2.0", "F0.0 F1.0 F2.0 B0.0 B1.0 B2.0",
      "F0.0 B0.0 F1.0 B1.0 F2.0 B2.0"}},
    {{1, 3, 2}, {"F0.0 F0.1 F0.2 B0.2 F1.0 B0.1 F1.1 B0.0 F1.2 B1.2 B1.1 B1.0"}},
};

// Why `schedules` (every rank's, p ranks of V chunks, m micro-batches) is not a valid chunked
// schedule, or "": each rank runs each forward and each backward of its chunks once, and the
// whole pipeline can run them in these orders (a rank waits only for a step another rank runs
// earlier in its own order, the model's chunk c being rank c % p's chunk c / p).
std::string schedule_problem(const std::vector<std::vector<dtk::ChunkStep>>& schedules, int p,
                             int v, int m) {
  const int chunks = p * v;
  for (int r = 0; r < p; ++r) {
    std::set<std::tuple<int, int, int>> seen;
    for (const dtk::ChunkStep& s : schedules[r]) {
      if (s.microbatch < 0 || s.microbatch >= m || s.chunk < 0 || s.chunk >= v) {
        return "rank " + std::to_string(r) + "'s step " + schedule_text({s}) +
               " names no micro-batch or chunk of the run";
      }
      if (!seen.insert({static_cast<int>(s.op), s.microbatch, s.chunk}).second) {
        return "rank " + std::to_string(r) + " runs " + schedule_text({s}) + " twice";
      }
    }
    if (static_cast<int>(seen.size()) != 2 * m * v) {
      return "rank " + std::to_string(r) + " runs " + std::to_string(seen.size()) +
             " steps, not every forward and backward of its chunks (" + std::to_string(2 * m * v) +
             ")";
    }
  }
  std::set<std::tuple<int, int, int>> done;  // (op, micro-batch, model chunk)
  std::vector<std::size_t> next(p, 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int r = 0; r < p; ++r) {
      for (; next[r] < schedules[r].size(); ++next[r]) {
        const dtk::ChunkStep& s = schedules[r][next[r]];
        const int c = s.chunk * p + r, forward = static_cast<int>(dtk::PipeOp::Forward),
                  backward = static_cast<int>(dtk::PipeOp::Backward);
        const bool ready =
            s.op == dtk::PipeOp::Forward
                ? c == 0 || done.count({forward, s.microbatch, c - 1})
                : done.count({forward, s.microbatch, c}) &&
                      (c == chunks - 1 || done.count({backward, s.microbatch, c + 1}));
        if (!ready) break;
        done.insert({static_cast<int>(s.op), s.microbatch, c});
        moved = true;
      }
    }
  }
  for (int r = 0; r < p; ++r) {
    if (next[r] < schedules[r].size()) {
      return "rank " + std::to_string(r) + " waits forever at its step " +
             schedule_text({schedules[r][next[r]]}) +
             ": the step it needs runs later in some rank's order";
    }
  }
  return "";
}

// A chunked schedule of this file for the executor tests (valid, and not 14.1's): every forward,
// chunk after chunk, then every backward, the chunks in reverse; `reversed`, each chunk's
// micro-batches last to first.
std::vector<dtk::ChunkStep> forwards_then_backwards(int v, int m, bool reversed = false) {
  std::vector<dtk::ChunkStep> steps;
  const auto microbatch = [&](int i) { return reversed ? m - 1 - i : i; };
  for (int chunk = 0; chunk < v; ++chunk)
    for (int i = 0; i < m; ++i) steps.push_back({dtk::PipeOp::Forward, microbatch(i), chunk});
  for (int chunk = v - 1; chunk >= 0; --chunk)
    for (int i = 0; i < m; ++i) steps.push_back({dtk::PipeOp::Backward, microbatch(i), chunk});
  return steps;
}

// ----------------------------------- 14.2's chunks ------------------------------------------

// Their tensors say where they come from (tests/harness/tagged_tensors.hpp): piece c is the
// model's chunk c, the data is -1 and the loss pV.

// The model's chunk `chunk` of `chunks`. It records its calls and checks every input is exactly
// what the chunk before (or the data, or the loss) made for that micro-batch. The activation
// entering model chunk c of micro-batch mb is (rows + mb, width + c): its shape differs from
// chunk to chunk and from micro-batch to micro-batch.
template <class T>
class TracingChunk : public dtk::PipelineStage<T> {
 public:
  TracingChunk(int chunk, int chunks, std::size_t rows, std::size_t width)
      : chunk_(chunk), chunks_(chunks), rows_(rows), width_(width) {}

  bool is_first() const override { return chunk_ == 0; }
  bool is_last() const override { return chunk_ == chunks_ - 1; }
  std::array<std::size_t, 2> input_shape(int mb) const override { return shape(mb, chunk_); }
  std::array<std::size_t, 2> output_shape(int mb) const override { return shape(mb, chunk_ + 1); }

  xt::xtensor<T, 2> input_microbatch(int mb) const override {
    if (!is_first()) problem("input_microbatch(" + std::to_string(mb) + ") on a later chunk");
    return tagged<T>(Kind::Activation, -1, mb, input_shape(mb));
  }
  xt::xtensor<T, 2> forward(int mb, const xt::xtensor<T, 2>& input) override {
    calls.push_back(mb);
    check_received("forward(" + std::to_string(mb) + ")", input,
                   tagged<T>(Kind::Activation, chunk_ - 1, mb, input_shape(mb)));
    return tagged<T>(Kind::Activation, chunk_, mb, output_shape(mb));
  }
  xt::xtensor<T, 2> loss_grad(int mb) const override {
    if (!is_last()) problem("loss_grad(" + std::to_string(mb) + ") on a chunk but the last");
    return tagged<T>(Kind::Gradient, chunks_, mb, output_shape(mb));
  }
  xt::xtensor<T, 2> backward(int mb, const xt::xtensor<T, 2>& output_grad) override {
    calls.push_back(-1 - mb);
    check_received("backward(" + std::to_string(mb) + ")", output_grad,
                   tagged<T>(Kind::Gradient, chunk_ + 1, mb, output_shape(mb)));
    return tagged<T>(Kind::Gradient, chunk_, mb, input_shape(mb));
  }

  // The bytes this chunk's results add to what the rank sends, for m micro-batches.
  std::uint64_t bytes_sent(int m) const {
    std::uint64_t values = 0;
    for (int mb = 0; mb < m; ++mb) {
      if (!is_last()) values += output_shape(mb)[0] * output_shape(mb)[1];
      if (!is_first()) values += input_shape(mb)[0] * input_shape(mb)[1];
    }
    return values * sizeof(T);
  }

  std::vector<int> calls;  // forward(mb): mb; backward(mb): -1 - mb
  mutable std::vector<std::string> problems;

 private:
  std::array<std::size_t, 2> shape(int mb, int boundary) const {
    return {rows_ + mb, width_ + boundary};
  }
  void problem(const std::string& text) const {
    problems.push_back("model chunk " + std::to_string(chunk_) + ": " + text);
  }
  void check_received(const std::string& call, const xt::xtensor<T, 2>& actual,
                      const xt::xtensor<T, 2>& expected) const {
    const std::array<std::size_t, 2> actual_shape = {actual.shape(0), actual.shape(1)};
    const std::array<std::size_t, 2> expected_shape = {expected.shape(0), expected.shape(1)};
    if (actual_shape != expected_shape) {
      problem(call + " got a " + shape_text(actual_shape) + " tensor, expected " +
              shape_text(expected_shape));
      return;
    }
    for (std::size_t e = 0; e < expected.size(); ++e) {
      if (actual.data()[e] != expected.data()[e]) {
        problem(call + " got " + describe_tag(actual.data()[e], chunks_, "model chunk") +
                " (element " + std::to_string(e) + "), expected " +
                describe_tag(expected.data()[e], chunks_, "model chunk"));
        return;
      }
    }
  }

  int chunk_, chunks_;
  std::size_t rows_, width_;
};

// What the steps of `schedule` through chunk v should have called on it, in order.
std::vector<int> calls_of(const std::vector<dtk::ChunkStep>& schedule, int v) {
  std::vector<int> calls;
  for (const dtk::ChunkStep& s : schedule) {
    if (s.chunk == v)
      calls.push_back(s.op == dtk::PipeOp::Forward ? s.microbatch : -1 - s.microbatch);
  }
  return calls;
}

std::string calls_text(const std::vector<int>& calls) {
  std::string text;
  for (int c : calls)
    text += (text.empty() ? "" : " ") +
            (c >= 0 ? "F" + std::to_string(c) : "B" + std::to_string(-1 - c));
  return text;
}

// A schedule for rank r of p with V chunks and m micro-batches.
using ScheduleMaker = std::function<std::vector<dtk::ChunkStep>(int r, int p, int v, int m)>;

// Runs pipelines of p = 1, 2 and 4 ranks on the 4 ranks (rank r is pipeline rank r % p of
// pipeline r / p) for each count of chunks and micro-batches the maker takes, and checks every
// chunk's calls, every tensor it received and the bytes the rank sent.
template <class T>
void check_executor(dtk::testing::Checks& check, const ScheduleMaker& make_schedule,
                    const std::string& name, const std::vector<std::tuple<int, int, int>>& runs,
                    std::size_t rows, std::size_t width) {
  dtk::Communicator world;
  const int rank = world.Get_rank();
  report_first_few(check, [&](dtk::testing::Checks& each) {
    for (const auto& [p, v, m] : runs) {
      dtk::Communicator pp_comm = world.Split(/*color=*/rank / p, /*key=*/rank);
      const int r = pp_comm.Get_rank();
      const std::vector<dtk::ChunkStep> schedule = make_schedule(r, p, v, m);
      std::vector<TracingChunk<T>> chunks;
      for (int c = 0; c < v; ++c) chunks.emplace_back(c * p + r, p * v, rows, width);
      std::vector<dtk::PipelineStage<T>*> handed;
      for (TracingChunk<T>& chunk : chunks) handed.push_back(&chunk);
      const std::uint64_t bytes_before = pp_comm.total_bytes_transferred();
      dtk::run_interleaved_schedule<T>(handed, schedule, pp_comm);
      const std::uint64_t bytes_sent = pp_comm.total_bytes_transferred() - bytes_before;

      const std::string run = name + ", p=" + std::to_string(p) + " V=" + std::to_string(v) +
                              " m=" + std::to_string(m) + ", pipeline rank " + std::to_string(r) +
                              ": ";
      std::uint64_t expected_bytes = 0;
      for (int c = 0; c < v; ++c) {
        const std::vector<int> expected = calls_of(schedule, c);
        each.that(chunks[c].calls == expected, run + "its chunk " + std::to_string(c) +
                                                   " was called\n  " + calls_text(chunks[c].calls) +
                                                   "\n  but the schedule says\n  " +
                                                   calls_text(expected));
        for (const std::string& problem : chunks[c].problems) each.that(false, run + problem);
        expected_bytes += chunks[c].bytes_sent(m);
      }
      each.that(bytes_sent == expected_bytes,
                run + "sent " + std::to_string(bytes_sent) + " bytes, expected " +
                    std::to_string(expected_bytes) + " (each activation and each gradient once)");
    }
  });
}

const ScheduleMaker kForwardsThenBackwards = [](int, int, int v, int m) {
  return forwards_then_backwards(v, m);
};
// The odd ranks take the micro-batches last to first: valid, but their neighbours send them
// first to last.
const ScheduleMaker kOddRanksReversed = [](int r, int, int v, int m) {
  return forwards_then_backwards(v, m, r % 2 == 1);
};
const ScheduleMaker kByHandTables = [](int r, int p, int v, int m) {
  return parse_schedule(kByHand.at({p, v, m}).at(r));
};

// (64 + mb) x (4096 + c) values: at least 1 MB of float, far above MPI's eager limit.
constexpr std::size_t kLargeRows = 64, kLargeWidth = 4096;

}  // namespace

// ----------------------------------- 14.1 ---------------------------------------------------

TEST_CASE("Part 14 | interleaved_schedule: by hand", "[part14]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    for (const auto& [layout, expected] : kByHand) {
      const auto& [p, v, m] = layout;
      for (int r = 0; r < p; ++r) {
        const std::string actual = schedule_text(dtk::interleaved_schedule(r, p, v, m));
        check.that(actual == expected[r], layout_text(r, p, v, m) + "\n  expected " + expected[r] +
                                              "\n  actual   " + actual);
      }
    }
  });
}

TEST_CASE("Part 14 | interleaved_schedule: 1-4 ranks, 1-3 chunks, m = p, 2p, 3p: valid",
          "[part14]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    report_first_few(check, [](dtk::testing::Checks& each) {
      for (int p = 1; p <= 4; ++p) {
        for (int v = 1; v <= 3; ++v) {
          for (int m = p; m <= 3 * p; m += p) {
            std::vector<std::vector<dtk::ChunkStep>> schedules;
            for (int r = 0; r < p; ++r) schedules.push_back(dtk::interleaved_schedule(r, p, v, m));
            const std::string problem = schedule_problem(schedules, p, v, m);
            each.that(problem.empty(),
                      layout_text(0, p, v, m) + " and its other ranks: " + problem);
            // The warm-up: forwards before the first backward.
            for (int r = 0; problem.empty() && r < p; ++r) {
              int warm_up = 0;
              while (schedules[r][warm_up].op == dtk::PipeOp::Forward) ++warm_up;
              const int expected = std::min((p - r - 1) * 2 + (v - 1) * p, m * v - 1) + 1;
              each.that(warm_up == expected,
                        layout_text(r, p, v, m) + " runs " + std::to_string(warm_up) +
                            " forwards before its first backward, expected " +
                            std::to_string(expected) + " (the warm-up and the first steady one)");
            }
          }
        }
      }
    });
  });
}

TEST_CASE("Part 14 | interleaved_schedule: bad arguments throw std::invalid_argument", "[part14]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    expect_invalid_argument(check, "interleaved_schedule(rank 2, 2 ranks, 2, 4)",
                            [] { dtk::interleaved_schedule(2, 2, 2, 4); });
    expect_invalid_argument(check, "interleaved_schedule(rank -1, 2 ranks, 2, 4)",
                            [] { dtk::interleaved_schedule(-1, 2, 2, 4); });
    expect_invalid_argument(check, "interleaved_schedule(0, 0 ranks, 2, 4)",
                            [] { dtk::interleaved_schedule(0, 0, 2, 4); });
    expect_invalid_argument(check, "interleaved_schedule(0, 2, 0 chunks, 4)",
                            [] { dtk::interleaved_schedule(0, 2, 0, 4); });
    expect_invalid_argument(check, "interleaved_schedule(0, 2, 2, 3 micro-batches)",
                            [] { dtk::interleaved_schedule(0, 2, 2, 3); });
    expect_invalid_argument(check, "interleaved_schedule(0, 2, 2, 0 micro-batches)",
                            [] { dtk::interleaved_schedule(0, 2, 2, 0); });
  });
}

// ----------------------------------- 14.2 ---------------------------------------------------

TEMPLATE_TEST_CASE("Part 14 | run_interleaved_schedule: small activations", "[part14]", float,
                   double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    std::vector<std::tuple<int, int, int>> runs;
    for (int p : {1, 2, 4})
      for (int v : {1, 2, 3})
        for (int m : {1, 3}) runs.emplace_back(p, v, m);
    check_executor<TestType>(check, kForwardsThenBackwards, "every forward, then every backward",
                             runs, 2, 3);
    check_executor<TestType>(check, kByHandTables, "interleaved (by hand)",
                             {{2, 2, 4}, {4, 2, 4}, {2, 3, 2}}, 2, 3);
    check_executor<TestType>(check, kOddRanksReversed,
                             "every forward then every backward, odd ranks last to first",
                             {{2, 2, 3}, {4, 1, 2}}, 2, 3);
  });
}

// Blocking Sends of large activations around the ring wait for each other here: the harness
// stops the program after DTK_TEST_TIMEOUT seconds (60 by default).
TEMPLATE_TEST_CASE("Part 14 | run_interleaved_schedule: activations of 1 MB and more", "[part14]",
                   float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_executor<TestType>(check, kByHandTables, "interleaved (by hand)", {{2, 2, 4}, {4, 2, 4}},
                             kLargeRows, kLargeWidth);
    check_executor<TestType>(check, kForwardsThenBackwards, "every forward, then every backward",
                             {{1, 2, 2}, {4, 2, 2}}, kLargeRows, kLargeWidth);
  });
}

// ----------------------------------- 14.3 ---------------------------------------------------

namespace {

std::string grid_text(const dtk::GridShape& g) {
  return "{tp=" + std::to_string(g.tp) + ", cp=" + std::to_string(g.cp) +
         ", dp=" + std::to_string(g.dp) + ", pp=" + std::to_string(g.pp) +
         ", ep=" + std::to_string(g.ep) + "}";
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}

struct NamedGroup {
  dtk::GridGroup group;
  const char* name;
};

const std::vector<NamedGroup> kGroups = {{dtk::GridGroup::Tensor, "Tensor"},
                                         {dtk::GridGroup::Context, "Context"},
                                         {dtk::GridGroup::Data, "Data"},
                                         {dtk::GridGroup::Expert, "Expert"},
                                         {dtk::GridGroup::Pipeline, "Pipeline"},
                                         {dtk::GridGroup::DenseGradients, "DenseGradients"},
                                         {dtk::GridGroup::ExpertGradients, "ExpertGradients"},
                                         {dtk::GridGroup::Stage, "Stage"}};

// How many ranks an axis's group holds (all but one coordinate fixed), from the header's
// definitions; the gradient sums' groups are yours to work out (the by-hand case shows one).
std::optional<int> axis_group_size(const dtk::GridShape& g, dtk::GridGroup group) {
  switch (group) {
    case dtk::GridGroup::Tensor:
      return g.tp;
    case dtk::GridGroup::Context:
      return g.cp;
    case dtk::GridGroup::Data:
      return g.dp;
    case dtk::GridGroup::Expert:
      return g.ep;
    case dtk::GridGroup::Pipeline:
      return g.pp;
    case dtk::GridGroup::Stage:
      return g.tp * g.cp * g.dp;
    case dtk::GridGroup::DenseGradients:
    case dtk::GridGroup::ExpertGradients:
      return std::nullopt;
  }
  return std::nullopt;
}

// What every member of a gradient sum's group shares with the rank, by the header's rule (the
// same slice of the parameters: the same tp_idx and pp_idx; of an expert's, the same ep_idx
// too); empty for the axes' groups.
std::string slice_not_shared(const dtk::GridShape& g, dtk::GridGroup group, int rank, int member) {
  if (group != dtk::GridGroup::DenseGradients && group != dtk::GridGroup::ExpertGradients) {
    return "";
  }
  const dtk::GridCoordinates a = dtk::grid_coordinates(g, rank);
  const dtk::GridCoordinates b = dtk::grid_coordinates(g, member);
  if (a.tp != b.tp || a.pp != b.pp) return "a different tp_idx or pp_idx: another slice";
  if (group == dtk::GridGroup::ExpertGradients && a.ep != b.ep) {
    return "a different ep_idx: other experts";
  }
  return "";
}

}  // namespace

TEST_CASE("Part 14 | grid_coordinates and grid_group: by hand", "[part14]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // 24 ranks: rank 13 is tp 1, cp 0, dp 0, pp 1 (13 = ((1 · 2 + 0) · 3 + 0) · 2 + 1).
    const dtk::GridShape grid{/*tp=*/2, /*cp=*/3, /*dp=*/2, /*pp=*/2, /*ep=*/2};
    const std::map<int, std::vector<int>> coordinates = {
        {13, {1, 0, 0, 1, 0}}, {22, {0, 2, 1, 1, 1}}, {5, {1, 2, 0, 0, 0}}};
    for (const auto& [rank, expected] : coordinates) {
      const dtk::GridCoordinates at = dtk::grid_coordinates(grid, rank);
      const std::vector<int> actual = {at.tp, at.cp, at.dp, at.pp, at.ep};
      check.that(actual == expected,
                 "grid_coordinates(" + grid_text(grid) + ", " + std::to_string(rank) +
                     ") as [tp, cp, dp, pp, ep]\n  expected " + ranks_text(expected) +
                     "\n  actual   " + ranks_text(actual));
    }
    const std::vector<std::vector<int>> groups_of_13 = {
        {12, 13},     {13, 15, 17},
        {13, 19},     {13, 19},
        {1, 13},      {13, 15, 17, 19, 21, 23},
        {13, 15, 17}, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}};
    for (std::size_t i = 0; i < kGroups.size(); ++i) {
      const std::vector<int> actual = dtk::grid_group(grid, 13, kGroups[i].group);
      check.that(actual == groups_of_13[i], "grid_group(" + grid_text(grid) +
                                                ", 13, GridGroup::" + kGroups[i].name +
                                                ")\n  expected " + ranks_text(groups_of_13[i]) +
                                                "\n  actual   " + ranks_text(actual));
    }
  });
}

TEST_CASE("Part 14 | grid_group: every rank of several grids, each group the same from its members",
          "[part14]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    report_first_few(check, [](dtk::testing::Checks& each) {
      for (const dtk::GridShape& grid :
           {dtk::GridShape{2, 3, 4, 2, 2}, dtk::GridShape{4, 1, 2, 3, 1},
            dtk::GridShape{1, 2, 6, 1, 3}, dtk::GridShape{1, 1, 1, 1, 1}}) {
        const int size = grid.tp * grid.cp * grid.dp * grid.pp;
        std::set<std::vector<int>> seen;
        for (int rank = 0; rank < size; ++rank) {
          const dtk::GridCoordinates at = dtk::grid_coordinates(grid, rank);
          each.that(seen.insert({at.tp, at.cp, at.dp, at.pp}).second,
                    "grid_coordinates(" + grid_text(grid) + ", " + std::to_string(rank) +
                        ") gives the coordinates of an earlier rank");
          for (const NamedGroup& named : kGroups) {
            const std::vector<int> members = dtk::grid_group(grid, rank, named.group);
            const std::string call = "grid_group(" + grid_text(grid) + ", " + std::to_string(rank) +
                                     ", GridGroup::" + named.name + ") = " + ranks_text(members);
            const std::optional<int> size = axis_group_size(grid, named.group);
            each.that(!size || static_cast<int>(members.size()) == *size,
                      call + ": expected " + std::to_string(size.value_or(0)) + " ranks");
            each.that(std::is_sorted(members.begin(), members.end()) &&
                          std::count(members.begin(), members.end(), rank) == 1,
                      call + ": expected increasing ranks, this rank among them");
            // A group is the same group seen from each of its members.
            for (int member : members) {
              const std::string other = slice_not_shared(grid, named.group, rank, member);
              each.that(other.empty(), call + ": rank " + std::to_string(member) + " has " + other);
              each.that(dtk::grid_group(grid, member, named.group) == members,
                        call + ", but from rank " + std::to_string(member) + " it is " +
                            ranks_text(dtk::grid_group(grid, member, named.group)));
            }
          }
        }
      }
    });
  });
}

TEST_CASE("Part 14 | grid_coordinates and grid_group: bad arguments throw std::invalid_argument",
          "[part14]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    const std::vector<std::pair<dtk::GridShape, int>> bad = {
        {{0, 1, 1, 1, 1}, 0},  // tp = 0
        {{1, 1, 3, 1, 2}, 0},  // ep does not divide dp
        {{2, 1, 2, 1, 1}, 4},  // world rank past the grid
        {{2, 1, 2, 1, 1}, -1}};
    for (const auto& [grid, rank] : bad) {
      const std::string args = grid_text(grid) + ", " + std::to_string(rank);
      expect_invalid_argument(check, "grid_coordinates(" + args + ")",
                              [&] { dtk::grid_coordinates(grid, rank); });
      expect_invalid_argument(check, "grid_group(" + args + ", GridGroup::Data)",
                              [&] { dtk::grid_group(grid, rank, dtk::GridGroup::Data); });
    }
  });
}

// ----------------------------------- 14.4 ---------------------------------------------------

namespace {

// The tensor a sending rank holds: element (i, j) is 1000 i + j, plus 0.5 · (tp rank + 1) with
// sequence parallelism (each tp rank its own rows), so a value says where it came from.
template <class T>
xt::xtensor<T, 2> boundary_tensor(std::size_t rows, std::size_t width, bool sequence_parallel,
                                  int tp_rank) {
  xt::xtensor<T, 2> tensor({rows, width});
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < width; ++j)
      tensor(i, j) = T(1000 * i + j) + (sequence_parallel ? T(0.5) * T(tp_rank + 1) : T(0));
  return tensor;
}

// What a sending rank of tp rank t sends: its share of rows, or (sequence parallelism, rows that
// tp does not divide) the whole tensor.
template <class T>
std::vector<T> expected_message(const xt::xtensor<T, 2>& held, int tp, int t,
                                bool sequence_parallel) {
  if (sequence_parallel || held.shape(0) % tp != 0) return {held.begin(), held.end()};
  const std::size_t share = held.size() / tp;
  return {held.begin() + t * share, held.begin() + (t + 1) * share};
}

// Two stages of tp ranks on the 4 ranks (4 / (2 tp) pipelines side by side), each function met
// by this file's own other half: send_to_stage's message is received here (whatever its size)
// and compared with the share (or the whole tensor) the contract says; receive_from_stage
// receives that message, sent from here, and must return the tensor the sender held.
template <class T>
void check_boundary(dtk::testing::Checks& check, int tp, std::size_t rows, std::size_t width,
                    bool sequence_parallel, bool backward) {
  dtk::Communicator world;
  const int rank = world.Get_rank(), dp = kRanks / (2 * tp);
  const int t = rank % tp, d = rank / tp % dp, stage = rank / (tp * dp);
  dtk::Communicator pp_comm = world.Split(/*color=*/d * tp + t, /*key=*/stage);
  dtk::Communicator tp_comm = world.Split(/*color=*/stage * dp + d, /*key=*/t);
  const int sending = backward ? 1 : 0, other = 1 - stage, tag = 77;
  // The tensor the sender of this tp rank holds (the receiver makes the same one to compare).
  const xt::xtensor<T, 2> held = boundary_tensor<T>(rows, width, sequence_parallel, t);
  const std::vector<T> message = expected_message(held, tp, t, sequence_parallel);
  const std::string what = "tp=" + std::to_string(tp) + ", a (" + std::to_string(rows) + ", " +
                           std::to_string(width) + ") tensor, " +
                           (sequence_parallel ? "sequence parallel" : "not sequence parallel") +
                           ", stage " + std::to_string(sending) + " to stage " +
                           std::to_string(1 - sending) + ", tp rank " + std::to_string(t) + ": ";
  const std::string expected_text =
      message.size() < held.size() ? " (its share of the rows)" : " (the whole tensor)";
  // The end of send_to_stage's messages: a tag the contract's 0 .. 32767 never uses. It carries
  // whether send_to_stage threw. Whatever a function throws is thrown again once both sides are
  // done with each other, so that no rank waits for a message that never comes.
  constexpr int kEndTag = 32768;
  if (stage == sending) {
    std::exception_ptr thrown;
    try {
      dtk::send_to_stage<T>(held, sequence_parallel, other, tag, pp_comm, tp_comm);
    } catch (...) {
      thrown = std::current_exception();
    }
    const int threw = thrown ? 1 : 0;
    MPI_Send(&threw, 1, MPI_INT, other, kEndTag, pp_comm.handle());
    MPI_Send(message.data(), static_cast<int>(message.size() * sizeof(T)), MPI_BYTE, other, tag,
             pp_comm.handle());
    if (thrown) std::rethrow_exception(thrown);
    return;
  }
  std::vector<std::pair<int, std::vector<T>>> arrived;  // (tag, values) of each message
  int sender_threw = 0;
  for (;;) {
    MPI_Status status;
    MPI_Probe(other, MPI_ANY_TAG, pp_comm.handle(), &status);
    if (status.MPI_TAG == kEndTag) {
      MPI_Recv(&sender_threw, 1, MPI_INT, other, kEndTag, pp_comm.handle(), MPI_STATUS_IGNORE);
      break;
    }
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    std::vector<T> values(static_cast<std::size_t>(bytes) / sizeof(T));
    MPI_Recv(values.data(), bytes, MPI_BYTE, other, status.MPI_TAG, pp_comm.handle(),
             MPI_STATUS_IGNORE);
    arrived.emplace_back(status.MPI_TAG, std::move(values));
  }
  if (!sender_threw) {  // else the sender reports what it threw
    check.that(arrived.size() == 1, what + "send_to_stage sent " + std::to_string(arrived.size()) +
                                        " messages, expected 1");
  }
  if (!sender_threw && arrived.size() == 1) {
    check.that(arrived[0].first == tag, what + "send_to_stage's message came with tag " +
                                            std::to_string(arrived[0].first) + ", the call's was " +
                                            std::to_string(tag));
    check.close(what + "what send_to_stage sent, against what it should send" + expected_text,
                xt::xtensor<T, 1>(xt::adapt(message)),
                xt::xtensor<T, 1>(xt::adapt(arrived[0].second)), 0, 0);
  }
  xt::xtensor<T, 2> received;
  try {
    received =
        dtk::receive_from_stage<T>({rows, width}, sequence_parallel, other, tag, pp_comm, tp_comm);
  } catch (...) {
    // The message it was to receive, taken here so that its sender can go on.
    std::vector<T> unread(message.size());
    MPI_Recv(unread.data(), static_cast<int>(unread.size() * sizeof(T)), MPI_BYTE, other, tag,
             pp_comm.handle(), MPI_STATUS_IGNORE);
    throw;
  }
  check.close(what + "what receive_from_stage returned, against the tensor the sender held", held,
              received, 0, 0);
}

}  // namespace

TEMPLATE_TEST_CASE("Part 14 | send_to_stage and receive_from_stage", "[part14]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // Every exchange runs on every rank, whatever an earlier one threw; the first throw is
    // reported at the end.
    std::exception_ptr first_thrown;
    const auto exchange = [&](int tp, std::size_t rows, std::size_t width, bool sp, bool back) {
      try {
        check_boundary<TestType>(check, tp, rows, width, sp, back);
      } catch (...) {
        if (!first_thrown) first_thrown = std::current_exception();
      }
    };
    exchange(2, 6, 5, false, false);                             // shares of 3 rows
    exchange(2, 6, 5, false, true);                              // a gradient going back
    exchange(2, 3, 5, true, false);                              // each tp rank its own rows
    exchange(2, 5, 3, false, false);                             // 2 does not divide 5: whole
    exchange(1, 4, 3, false, false);                             // tp = 1, two pipelines
    exchange(2, kLargeRows * 4, kLargeWidth / 4, false, false);  // 1 MB
    if (first_thrown) std::rethrow_exception(first_thrown);
  });
}

// ----------------------------------- 14.5 ---------------------------------------------------

namespace {

std::string sizes_text(const std::vector<std::size_t>& sizes) {
  std::string text = "{";
  for (std::size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "}";
}

const std::vector<double> kLabs = {0.7, 0.2, 0.1};

}  // namespace

TEST_CASE("Part 14 | share_sizes: by hand", "[part14]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    const std::vector<std::tuple<std::size_t, std::vector<double>, std::vector<std::size_t>>>
        cases = {{10, kLabs, {7, 2, 1}},          // no remainders
                 {1003, kLabs, {702, 201, 100}},  // 702.1, 200.6, 100.3: the leftover to 0.6
                 {10, {1.0 / 3, 1.0 / 3, 1.0 / 3}, {4, 3, 3}},  // equal remainders: the lower index
                 {5, {0.5, 0.5}, {3, 2}},
                 {7, {0.25, 0, 0.75}, {2, 0, 5}},  // 1.75 and 5.25: the leftover to 0.75
                 {0, kLabs, {0, 0, 0}}};
    for (const auto& [n, fractions, expected] : cases) {
      const std::vector<std::size_t> actual = dtk::share_sizes(n, fractions);
      check.that(actual == expected, "share_sizes(" + std::to_string(n) + ", " +
                                         std::to_string(fractions.size()) +
                                         " fractions)\n  expected " + sizes_text(expected) +
                                         "\n  actual   " + sizes_text(actual));
    }
  });
}

TEST_CASE("Part 14 | partition_examples: shares of one permutation, every example once",
          "[part14]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    report_first_few(check, [](dtk::testing::Checks& each) {
      // Each case's share sizes, worked out by hand (share_sizes' rule), so that this test needs
      // only your partition_examples.
      struct Case {
        std::size_t n;
        std::vector<double> fractions;
        std::vector<std::size_t> sizes;
      };
      for (const auto& [n, fractions, sizes] :
           std::vector<Case>{{10, kLabs, {7, 2, 1}},
                             {1003, kLabs, {702, 201, 100}},
                             {11, {0.25, 0.25, 0.25, 0.25}, {3, 3, 3, 2}},
                             {6, {0.5, 0, 0.5}, {3, 0, 3}}}) {
        const std::uint64_t seed = 20261205;
        const std::vector<std::size_t> order = dtk::seeded_permutation(n, seed);
        std::size_t begin = 0;
        for (int share = 0; share < static_cast<int>(fractions.size()); ++share) {
          const std::vector<std::size_t> actual =
              dtk::partition_examples(n, fractions, seed, share);
          const std::vector<std::size_t> expected(order.begin() + begin,
                                                  order.begin() + begin + sizes[share]);
          each.that(
              actual == expected,
              "partition_examples(" + std::to_string(n) + ", " + std::to_string(fractions.size()) +
                  " fractions, seed, share " + std::to_string(share) + ") should be examples " +
                  std::to_string(begin) + " .. " + std::to_string(begin + sizes[share]) +
                  " (exclusive) of seeded_permutation's order: " + std::to_string(actual.size()) +
                  " examples returned, " + std::to_string(expected.size()) + " expected" +
                  (actual.size() == expected.size() ? ", in another order or other ones" : ""));
          begin += sizes[share];
        }
      }
    });
  });
}

TEST_CASE(
    "Part 14 | share_sizes and partition_examples: bad arguments throw "
    "std::invalid_argument",
    "[part14]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    expect_invalid_argument(check, "share_sizes(10, {})", [] { dtk::share_sizes(10, {}); });
    expect_invalid_argument(check, "share_sizes(10, {0.6, -0.1, 0.5})", [] {
      dtk::share_sizes(10, {0.6, -0.1, 0.5});
    });
    expect_invalid_argument(check, "share_sizes(10, {0.5, 0.4}) (sum 0.9)", [] {
      dtk::share_sizes(10, {0.5, 0.4});
    });
    expect_invalid_argument(check, "partition_examples(10, {0.7, 0.2, 0.1}, 1, share 3)",
                            [] { dtk::partition_examples(10, kLabs, 1, 3); });
    expect_invalid_argument(check, "partition_examples(10, {0.5, 0.4}, 1, 0)", [] {
      dtk::partition_examples(10, {0.5, 0.4}, 1, 0);
    });
  });
}

TEMPLATE_TEST_CASE("Part 14 | weighted_gradient_average", "[part14]", float, double) {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int rank = world.Get_rank();
    // Rank r: 3·(r + 1) examples whose mean gradient is (r + 1) · [1, 2, 3]; with `empty`, rank
    // 2 has none and holds NaN.
    for (bool empty : {false, true}) {
      const auto examples_of = [&](int r) { return empty && r == 2 ? 0 : 3 * (r + 1); };
      xt::xtensor<TestType, 1> mean = {1, 2, 3};
      mean *= TestType(rank + 1);
      if (examples_of(rank) == 0) mean.fill(std::numeric_limits<TestType>::quiet_NaN());
      double weighted = 0, examples = 0;
      for (int r = 0; r < kRanks; ++r) {
        weighted += examples_of(r) * (r + 1);
        examples += examples_of(r);
      }
      const xt::xtensor<TestType, 1> expected =
          xt::xtensor<TestType, 1>{1, 2, 3} * TestType(weighted / examples);
      const xt::xtensor<TestType, 1> actual =
          dtk::weighted_gradient_average<TestType>(mean, examples_of(rank), world);
      check.close(std::string("weighted_gradient_average, rank r holding 3·(r + 1) examples") +
                      (empty ? " (rank 2 none, its mean NaN)" : "") +
                      ", the mean over the whole batch",
                  expected, actual, 1e-6, 0);
    }
    expect_invalid_argument(
        check, "weighted_gradient_average({1, 2}, 0 examples on every rank, world)", [&] {
          dtk::weighted_gradient_average<TestType>(xt::xtensor<TestType, 1>{1, 2}, 0, world);
        });
  });
}
