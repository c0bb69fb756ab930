// Part 7 (assignment 2): the collectives students build from point-to-point messages. A check
// runs on the test's p ranks, each holding its own src, drawn from its own key (every value
// random: none follows a formula the feedback could reveal). The call is judged by what crossed
// between ranks: the bytes MPI delivered from other ranks (check_context.hpp), summed over the
// ranks for what was sent (a collective of one's own may share the sending unevenly), and for
// what each rank received against the least its result needs from the others. What the known
// mistakes would give is computed in the reference's run only, from every rank's src.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <type_traits>

#include <xtensor/xview.hpp>

#include "check_context.hpp"
#include "forbidden_mpi.hpp"
#include "student_thread.hpp"

namespace dtk::grade {

namespace {

MPI_Op mpi_op(const std::string& op) {
  if (op == "min") return MPI_MIN;
  if (op == "max") return MPI_MAX;
  return MPI_SUM;
}

// A src of `size` elements, random: three decimals in [-1, 1], or integers in [-999, 999] for
// int32. `turn` names one of several inputs of a test (the speed bonus's).
template <class T>
xt::xtensor<T, 1> random_src(Rng rng, std::size_t size) {
  auto src = xt::xtensor<T, 1>::from_shape({size});
  for (T& value : src) {
    value = std::is_integral_v<T> ? static_cast<T>(rng.uniform_int(-999, 999))
                                  : static_cast<T>(rng.value());
  }
  return src;
}

// This rank's src, and (in the reference's run) every rank's.
template <class T>
xt::xtensor<T, 1> own_src(const CheckContext& context, std::size_t size) {
  return random_src<T>(context.rng("src"), size);
}

template <class T>
std::vector<xt::xtensor<T, 1>> every_src(const Judgement& judgement, int p, std::size_t size) {
  std::vector<xt::xtensor<T, 1>> srcs;
  for (int r = 0; r < p; ++r) srcs.push_back(random_src<T>(judgement.rng_of(r, "src"), size));
  return srcs;
}

// Element-wise `op` over all srcs, in rank order.
template <class T>
xt::xtensor<T, 1> reduced(const std::vector<xt::xtensor<T, 1>>& srcs, const std::string& op) {
  xt::xtensor<T, 1> result = srcs.front();
  for (std::size_t r = 1; r < srcs.size(); ++r) {
    for (std::size_t i = 0; i < result.size(); ++i) {
      const T v = srcs[r](i);
      result(i) = op == "min"   ? std::min(result(i), v)
                  : op == "max" ? std::max(result(i), v)
                                : result(i) + v;
    }
  }
  return result;
}

// Block b (of `block` elements) of v.
template <class T>
xt::xtensor<T, 1> block_of(const xt::xtensor<T, 1>& v, std::size_t b, std::size_t block) {
  xt::xtensor<T, 1> out = xt::xtensor<T, 1>::from_shape({block});
  std::copy_n(v.begin() + b * block, block, out.begin());
  return out;
}

// blocks[0], blocks[1], ... one after another.
template <class T>
xt::xtensor<T, 1> concatenated(const std::vector<xt::xtensor<T, 1>>& blocks) {
  std::size_t size = 0;
  for (const auto& b : blocks) size += b.size();
  auto out = xt::xtensor<T, 1>::from_shape({size});
  auto at = out.begin();
  for (const auto& b : blocks) at = std::copy(b.begin(), b.end(), at);
  return out;
}

// What a rank must receive from the other ranks at least: `elements` of T when there are any.
template <class T>
std::uint64_t least_from_others(const CheckContext& context, std::size_t elements) {
  return context.test.p > 1 ? elements * sizeof(T) : 0;
}

// A known mistake: what `dst` would be after it.
template <class T>
struct Wrong {
  std::string mistake;
  xt::xtensor<T, 1> dst;
};

// Buffers up to this size are recorded whole; larger ones (megabytes) by windows, so that a
// launch's records stay small.
constexpr std::size_t kRecordedWhole = 4096;

// The windows of a buffer of n elements that are recorded: around each of p + 1 evenly spaced
// boundaries (where chunks and blocks begin, and where off-by-one mistakes show) and a strided
// sample in between.
std::set<std::pair<std::size_t, std::size_t>> windows(std::size_t n, std::size_t p) {
  if (n <= kRecordedWhole) return {{0, n}};
  std::set<std::pair<std::size_t, std::size_t>> found;
  const std::size_t around = 8, samples = 32, width = 4;
  for (std::size_t k = 0; k <= p; ++k) {
    const std::size_t at = k * n / p;
    found.insert({at > around ? at - around : 0, std::min(n, at + around)});
  }
  for (std::size_t k = 0; k < samples; ++k) {
    const std::size_t at = k * n / samples + n / (2 * samples);
    found.insert({at, std::min(n, at + width)});
  }
  return found;
}

// The names and windows dst is recorded by: whole, or as windows "dst[i..j]" of elements i to
// j - 1.
std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> recorded_windows(
    std::size_t n, std::size_t p) {
  std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> named;
  for (const auto& [begin, end] : windows(n, p)) {
    const bool whole = begin == 0 && end == n;
    named.push_back(
        {whole ? "dst" : "dst[" + std::to_string(begin) + ".." + std::to_string(end) + "]",
         {begin, end}});
  }
  return named;
}

template <class T>
xt::xtensor<T, 1> window_of(const xt::xtensor<T, 1>& v, std::pair<std::size_t, std::size_t> w) {
  return xt::xtensor<T, 1>(xt::view(v, xt::range(w.first, w.second)));
}

// Records dst as recorded_windows cuts it.
template <class T>
void record_result(CheckContext& context, const xt::xtensor<T, 1>& dst) {
  for (const auto& [name, window] : recorded_windows(dst.size(), context.test.p))
    record_tensor(context.out, name, window_of(dst, window));
}

// Records what the known mistakes would give in dst's place, cut the same way.
template <class T>
void record_mistakes(Judgement& judgement, const CheckContext& context, std::size_t size,
                     const std::vector<Wrong<T>>& mistakes) {
  for (const auto& [name, window] : recorded_windows(size, context.test.p)) {
    for (const Wrong<T>& wrong : mistakes) {
      if (wrong.dst.size() == size)
        judgement.mistake(name, wrong.mistake, window_of(wrong.dst, window));
    }
  }
}

void describe(CheckContext& context, const std::string& what) {
  const TestCase& test = context.test;
  context.out.note(std::to_string(test.p) + " ranks, " + test.type +
                   (test.op.empty() ? "" : ", " + test.op) + ", " + what);
}

template <class T>
void allreduce_case(CheckContext& context) {
  const TestCase& test = context.test;
  const int p = test.p, r = context.rank();
  describe(context, std::to_string(test.count) + " elements on every rank, drawn from the seed");
  auto dst = xt::xtensor<T, 1>::from_shape({test.count});
  const auto src = own_src<T>(context, test.count);
  // Every element of the result depends on every other rank's.
  context.least_received(least_from_others<T>(context, test.count));
  context.call([&] { my_allreduce<T>(src, dst, mpi_op(test.op), context.world); });
  record_result(context, dst);
  context.judge([&](Judgement& judgement) {
    const auto srcs = every_src<T>(judgement, p, test.count);
    std::vector<Wrong<T>> mistakes = {{"this rank's own src (nothing received)", srcs[r]}};
    if (test.op != "sum")
      mistakes.push_back({"summing whatever the op (the op ignored)", reduced(srcs, "sum")});
    record_mistakes(judgement, context, test.count, mistakes);
  });
}

template <class T>
void allgather_case(CheckContext& context) {
  const TestCase& test = context.test;
  const int p = test.p;
  describe(context, std::to_string(test.count) + " elements on every rank, drawn from the seed");
  auto dst = xt::xtensor<T, 1>::from_shape({p * test.count});
  const auto src = own_src<T>(context, test.count);
  // Every other rank's src.
  context.least_received(least_from_others<T>(context, (p - 1) * test.count));
  context.call([&] { my_allgather<T>(src, dst, context.world); });
  record_result(context, dst);
  context.judge([&](Judgement& judgement) {
    const auto srcs = every_src<T>(judgement, p, test.count);
    std::vector<Wrong<T>> mistakes;
    auto rotated = [&](int shift, const std::string& sign) {
      std::vector<xt::xtensor<T, 1>> blocks;
      for (int b = 0; b < p; ++b) blocks.push_back(srcs[(b + shift) % p]);
      mistakes.push_back(
          {"the blocks rotated by one rank (block b holding rank b " + sign + " 1's src)",
           concatenated(blocks)});
    };
    if (p > 1) rotated(1, "+");
    if (p > 2) {
      rotated(p - 1, "-");
      mistakes.push_back(
          {"the blocks in reverse rank order",
           concatenated(std::vector<xt::xtensor<T, 1>>(srcs.rbegin(), srcs.rend()))});
    }
    record_mistakes(judgement, context, dst.size(), mistakes);
  });
}

template <class T>
void reduce_scatter_case(CheckContext& context) {
  const TestCase& test = context.test;
  const int p = test.p, r = context.rank();
  const std::size_t block = test.count;
  describe(context, std::to_string(p) + " blocks of " + std::to_string(block) +
                        " elements on every rank, drawn from the seed");
  auto dst = xt::xtensor<T, 1>::from_shape({block});
  const auto src = own_src<T>(context, p * block);
  // Every element of its block depends on every other rank's.
  context.least_received(least_from_others<T>(context, block));
  context.call([&] { my_reduce_scatter<T>(src, dst, mpi_op(test.op), context.world); });
  record_result(context, dst);
  context.judge([&](Judgement& judgement) {
    const auto srcs = every_src<T>(judgement, p, p * block);
    const auto all = reduced(srcs, test.op);
    std::vector<Wrong<T>> mistakes;
    if (test.op != "sum")
      mistakes.push_back(
          {"summing whatever the op (the op ignored)", block_of(reduced(srcs, "sum"), r, block)});
    if (p > 1) {
      mistakes.push_back({"the reduced block of rank r + 1 (blocks rotated by one)",
                          block_of(all, (r + 1) % p, block)});
      mistakes.push_back({"the reduced block of rank r - 1 (blocks rotated by one)",
                          block_of(all, (r + p - 1) % p, block)});
    }
    record_mistakes(judgement, context, block, mistakes);
  });
}

template <class T>
void alltoall_case(CheckContext& context) {
  const TestCase& test = context.test;
  const int p = test.p, r = context.rank();
  const std::size_t block = test.count;
  describe(context, std::to_string(p) + " blocks of " + std::to_string(block) +
                        " elements on every rank, drawn from the seed");
  auto dst = xt::xtensor<T, 1>::from_shape({p * block});
  const auto src = own_src<T>(context, p * block);
  // Block r of every other rank's src.
  context.least_received(least_from_others<T>(context, (p - 1) * block));
  context.call([&] { my_alltoall<T>(src, dst, context.world); });
  record_result(context, dst);
  context.judge([&](Judgement& judgement) {
    const auto srcs = every_src<T>(judgement, p, p * block);
    std::vector<Wrong<T>> mistakes;
    if (p > 1) {
      mistakes.push_back({"this rank's own src (nothing exchanged)", srcs[r]});
      std::vector<xt::xtensor<T, 1>> rotated;
      for (int q = 0; q < p; ++q) rotated.push_back(block_of(srcs[q], (r + 1) % p, block));
      mistakes.push_back(
          {"block r + 1 of every rank (blocks rotated by one)", concatenated(rotated)});
    }
    record_mistakes(judgement, context, dst.size(), mistakes);
  });
}

// The speed bonus's measurement: the student's function against MPI's own collective on
// floats, in turns (which one goes first alternates), after one warm-up of each. Every turn
// has inputs of its own (values drawn for it, new buffers, dst filled with NaN first) and every
// result is compared with MPI's on the same input, so a call that remembers an earlier input,
// or returns before its work is done, is caught. The student's call runs on a sealed
// thread of its own; MPI's turn on this, the main thread, which student code never runs on, once
// the state student code could leave it has been checked (ProcessState). A timing is the slowest
// rank's, between barriers. Rank 0 records the times in seconds ("mine i", "mpi i"), every
// rank how many of its elements differed from MPI's ("wrong") and what the student's calls
// changed (an error).
template <class Mine, class Mpi>
void time_against_mpi(CheckContext& context, std::size_t count, Mine&& mine, Mpi&& mpi) {
  const TestCase& test = context.test;
  MPI_Comm comm = context.world.handle();
  const int r = context.rank();
  const ProcessState before = ProcessState::now();
  std::string changed;
  auto slowest = [&](double seconds) {
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
    return seconds;
  };
  auto time_mine = [&](const xt::xtensor<float, 1>& src, xt::xtensor<float, 1>& dst) {
    double seconds = 0;
    Traffic traffic;
    run_student_code([&] {
      MPI_Barrier(comm);
      const double start = MPI_Wtime();
      {
        StudentCall watched(traffic);
        mine(src, dst);
      }
      seconds = MPI_Wtime() - start;
    });
    if (changed.empty()) changed = ProcessState::now().changes_since(before);
    return slowest(seconds);
  };
  auto time_mpi = [&](const xt::xtensor<float, 1>& src, xt::xtensor<float, 1>& dst) {
    MPI_Barrier(comm);
    const double start = MPI_Wtime();
    mpi(src, dst);
    return slowest(MPI_Wtime() - start);
  };
  long long wrong = 0;
  std::vector<double> mine_seconds, mpi_seconds;
  for (int turn = -1; turn < test.repetitions; ++turn) {  // turn -1: the warm-up
    const auto src = random_src<float>(context.rng("src, timing " + std::to_string(turn)), count);
    xt::xtensor<float, 1> dst_mine = xt::xtensor<float, 1>::from_shape({count});
    xt::xtensor<float, 1> dst_mpi = dst_mine;
    dst_mine.fill(std::numeric_limits<float>::quiet_NaN());
    dst_mpi.fill(std::numeric_limits<float>::quiet_NaN());
    double mine_time = 0, mpi_time = 0;
    if (turn % 2 == 0) {
      mine_time = time_mine(src, dst_mine);
      mpi_time = time_mpi(src, dst_mpi);
    } else {
      mpi_time = time_mpi(src, dst_mpi);
      mine_time = time_mine(src, dst_mine);
    }
    for (std::size_t i = 0; i < count; ++i) {
      const float expected = dst_mpi(i);
      wrong += !(std::fabs(dst_mine(i) - expected) <= 1e-4f * std::max(1.0f, std::fabs(expected)));
    }
    if (turn >= 0) {
      mine_seconds.push_back(mine_time);
      mpi_seconds.push_back(mpi_time);
    }
  }
  context.out.note(std::to_string(test.p) + " ranks, " + std::to_string(test.bytes) +
                   " bytes of floats, " + std::to_string(test.repetitions) +
                   " timings of each, each on inputs of its own");
  context.out.integer("wrong", wrong);
  if (!changed.empty()) context.out.error("its call left the process changed: " + changed);
  if (r != 0) return;
  for (int i = 0; i < test.repetitions; ++i) {
    context.out.real("mine " + std::to_string(i), mine_seconds[i]);
    context.out.real("mpi " + std::to_string(i), mpi_seconds[i]);
  }
}

void time_allreduce(CheckContext& context) {
  const std::size_t count = context.test.bytes / sizeof(float);
  time_against_mpi(
      context, count,
      [&](const xt::xtensor<float, 1>& src, xt::xtensor<float, 1>& dst) {
        my_allreduce<float>(src, dst, MPI_SUM, context.world);
      },
      [&](const xt::xtensor<float, 1>& src, xt::xtensor<float, 1>& dst) {
        MPI_Allreduce(src.data(), dst.data(), static_cast<int>(src.size()), MPI_FLOAT, MPI_SUM,
                      context.world.handle());
      });
}

void time_alltoall(CheckContext& context) {
  const std::size_t p = context.test.p, block = context.test.bytes / sizeof(float) / p;
  time_against_mpi(
      context, p * block,
      [&](const xt::xtensor<float, 1>& src, xt::xtensor<float, 1>& dst) {
        my_alltoall<float>(src, dst, context.world);
      },
      [&](const xt::xtensor<float, 1>& src, xt::xtensor<float, 1>& dst) {
        MPI_Alltoall(src.data(), static_cast<int>(block), MPI_FLOAT, dst.data(),
                     static_cast<int>(block), MPI_FLOAT, context.world.handle());
      });
}

// The float, double or int32 version of a check, as the test's type says.
void run_buffer_typed(CheckContext& context, CheckFunction for_float, CheckFunction for_double,
                      CheckFunction for_int32) {
  const std::string& type = context.test.type;
  (type == "float" ? for_float : type == "double" ? for_double : for_int32)(context);
}

void check_my_allreduce(CheckContext& context) {
  if (context.test.is_speed()) return time_allreduce(context);
  run_buffer_typed(context, allreduce_case<float>, allreduce_case<double>,
                   allreduce_case<std::int32_t>);
}
void check_my_allgather(CheckContext& context) {
  run_buffer_typed(context, allgather_case<float>, allgather_case<double>,
                   allgather_case<std::int32_t>);
}
void check_my_reduce_scatter(CheckContext& context) {
  run_buffer_typed(context, reduce_scatter_case<float>, reduce_scatter_case<double>,
                   reduce_scatter_case<std::int32_t>);
}
void check_my_alltoall(CheckContext& context) {
  if (context.test.is_speed()) return time_alltoall(context);
  run_buffer_typed(context, alltoall_case<float>, alltoall_case<double>,
                   alltoall_case<std::int32_t>);
}

}  // namespace

// Each shares the sending among its ranks as it likes: its bytes sent are judged summed.
DTK_GRADE_CHECK(check_my_allreduce, {"my_allreduce",
                                     CaseKind::buffer,
                                     /*collective=*/true,
                                     /*typed=*/true,
                                     {},
                                     /*reduces=*/true,
                                     /*timed_against=*/"MPI_Allreduce",
                                     {},
                                     /*sending_shared=*/true});
DTK_GRADE_CHECK(check_my_allgather, {"my_allgather",
                                     CaseKind::buffer,
                                     /*collective=*/true,
                                     /*typed=*/true,
                                     {},
                                     /*reduces=*/false,
                                     /*timed_against=*/"",
                                     {},
                                     /*sending_shared=*/true});
DTK_GRADE_CHECK(check_my_reduce_scatter, {"my_reduce_scatter",
                                          CaseKind::buffer,
                                          /*collective=*/true,
                                          /*typed=*/true,
                                          {},
                                          /*reduces=*/true,
                                          /*timed_against=*/"",
                                          {},
                                          /*sending_shared=*/true});
DTK_GRADE_CHECK(check_my_alltoall, {"my_alltoall",
                                    CaseKind::buffer,
                                    /*collective=*/true,
                                    /*typed=*/true,
                                    {},
                                    /*reduces=*/false,
                                    /*timed_against=*/"MPI_Alltoall",
                                    {},
                                    /*sending_shared=*/true});

}  // namespace dtk::grade
