// What a check (the code that tests one student function) gets to work with, and the helpers
// every check uses: deterministic random inputs and recording tensors.
//
// Inputs depend only on (seed, test id, stream name): the student's runner and the reference
// runner build exactly the same inputs, so the grader can compare their outputs.
#pragma once

#include <dtk/dtk.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "forbidden_mpi.hpp"
#include "records.hpp"
#include "test_case.hpp"

namespace dtk::grade {

// splitmix64 seeded from a hash of (seed, stream): the same numbers on every platform.
class Rng {
 public:
  Rng(std::uint64_t seed, const std::string& stream);
  std::uint64_t next();
  int uniform_int(int lo, int hi);  // in [lo, hi]
  double uniform(double lo, double hi);
  // A value with three decimals in [-0.999, 0.999]: random, yet readable in feedback.
  double value();

 private:
  std::uint64_t state_;
};

struct CheckContext {
  const TestCase& test;
  std::uint64_t seed;
  Communicator world;  // the test's own ranks: exactly test.ranks() of them
  RecordWriter& out;
  std::string configs_dir;  // the named model configs
  std::string work_dir;     // where a check may write files (random configs)

  Rng rng(const std::string& stream) const { return Rng(seed, test.id() + "|" + stream); }
};

// The (mp, dp) grid of a collective check, with communicators built here (never with the
// student's get_info), so that a check depends on the one function it tests.
struct Grid {
  explicit Grid(const CheckContext& context);
  int rank, mp_size, dp_size, mp_idx, dp_idx;
  Communicator mp_comm;  // same dp_idx, ordered by mp_idx
  Communicator dp_comm;  // same mp_idx, ordered by dp_idx
};

template <class T>
xt::xtensor<T, 2> random_matrix(Rng& rng, std::size_t rows, std::size_t cols) {
  xt::xtensor<T, 2> m({rows, cols});
  for (T& element : m) element = static_cast<T>(rng.value());
  return m;
}

// Values that say where they come from, like the public tests': element (i, j) of block b is
// 1000 b + 100 i + j, so a misplaced value in the feedback reads as its origin.
template <class T>
xt::xtensor<T, 2> numbered_matrix(std::size_t rows, std::size_t cols, int block = 0) {
  xt::xtensor<T, 2> m({rows, cols});
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) m(i, j) = static_cast<T>(1000 * block + 100 * i + j);
  }
  return m;
}

template <class T>
const char* dtype_name() {
  if constexpr (std::is_same_v<T, float>) return "float";
  if constexpr (std::is_same_v<T, double>) return "double";
  if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
}

// Any xtensor expression as a record's payload: its shape and its elements, row-major.
struct TensorPayload {
  const char* dtype;
  std::vector<std::size_t> shape;
  std::vector<double> values;
};

template <class E>
TensorPayload payload(const E& tensor) {
  return {dtype_name<typename E::value_type>(),
          std::vector<std::size_t>(tensor.shape().begin(), tensor.shape().end()),
          std::vector<double>(tensor.begin(), tensor.end())};
}

template <class E>
void record_tensor(RecordWriter& out, const std::string& name, const E& tensor) {
  const TensorPayload p = payload(tensor);
  out.tensor(name, p.dtype, p.shape, p.values);
}

// Records what value `name` would be after a known mistake, for the feedback to name it.
template <class E>
void record_mistake(RecordWriter& out, const std::string& name, const std::string& mistake,
                    const E& tensor) {
  const TensorPayload p = payload(tensor);
  out.mistake(name, mistake, p.dtype, p.shape, p.values);
}

// Calls `student_call` and records how many bytes it moved through `comm`, the Communicator
// the student function was given: results must travel through it, not through files or MPI
// calls of the submission's own. A check that judges the bytes itself gets them in `*moved`.
// While the call runs, the Communicator's calls are the student's (forbidden_mpi.hpp).
template <class Call>
auto moved_through(CheckContext& context, Communicator& comm, Call&& student_call,
                   std::uint64_t* moved = nullptr) {
  const std::uint64_t before = comm.total_bytes_transferred();
  auto result = [&] {
    StudentCall watched;
    return student_call();
  }();
  const std::uint64_t bytes = comm.total_bytes_transferred() - before;
  context.out.moved(bytes);
  if (moved != nullptr) *moved = bytes;
  return result;
}

// Records how many bytes a student call sent (`moved`, from moved_through) beyond `allowed`,
// the most that what it is asked to do sends with the Communicator's estimates
// (communicator.hpp): 0 when it kept to that. `allowance` says what `allowed` stands for, as in
// "bytes sent beyond the 96 that one Allgather sends"; a function that moves more (an Allreduce
// where a Reduce_scatter is asked for, the logits gathered) fails that record.
void record_bytes_beyond(CheckContext& context, std::uint64_t moved, std::uint64_t allowed,
                         const std::string& allowance);

using CheckFunction = void (*)(CheckContext&);

// Runs the float or the double version of a check, as the test's type says.
inline void run_typed(CheckContext& context, CheckFunction for_float, CheckFunction for_double) {
  (context.test.type == "float" ? for_float : for_double)(context);
}

// Registers a check: what the grader needs to know of it (check_registry.hpp) and its code.
// Every check is registered once, here in the runner, beside its code:
//   DTK_GRADE_CHECK(check_get_info, {"get_info", CaseKind::layout, /*collective=*/true, ...});
struct CheckRegistration {
  CheckRegistration(CheckInfo info, CheckFunction code);
};
#define DTK_GRADE_CHECK(code, ...)                                \
  static const ::dtk::grade::CheckRegistration registered_##code( \
      ::dtk::grade::CheckInfo __VA_ARGS__, code)

// The code of a check, by function name; nullptr if none registered.
CheckFunction check_function(const std::string& function);

}  // namespace dtk::grade
