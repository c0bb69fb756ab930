// What a check (the code that tests one student function) gets to work with. The harness, not
// the check's author, keeps the grader's guarantees (docs/sandbox.md, The threat model):
//
// - A rank holds its own inputs only. rng() draws them from a key of this rank's own (keys.hpp),
//   shared_rng() those every rank of the test holds alike; no other rank's key is in the process.
// - No expected value lives where student code runs. What to expect comes from the reference's
//   run of the same check; what known mistakes would give is computed in judge(), which runs in
//   the reference's launch only, where every rank's inputs can be made (Judgement::rng_of).
//   What can only be judged from the student's outputs of every rank (the cost of a plan, say)
//   is derived after the launch, by a derive function (DTK_GRADE_DERIVED_CHECK), in a process
//   of the grader's where no student code runs.
// - Student code runs only through call(): on a sealed thread of its own (student_thread.hpp),
//   while every MPI and Communicator call of the process is the student's, checked against the
//   part's rules and counted as its traffic (forbidden_mpi.hpp). Anywhere else the student
//   library's code is not even executable: a check that calls a student function directly
//   crashes on the reference at once.
// - Traffic is what MPI moved between this rank and the others, whatever object or thread
//   carried it; the harness records it after the check (moved, received).
//
// Inputs depend only on (key, stream name), so the student's run and the reference's draw
// exactly the same values. They are random: a case fixes shapes, never a formula of values.
#pragma once

#include <dtk/dtk.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "forbidden_mpi.hpp"
#include "records.hpp"
#include "student_thread.hpp"
#include "test_case.hpp"

namespace dtk::grade {

// splitmix64 seeded from a hash of (key, stream): the same numbers on every platform.
class Rng {
 public:
  Rng(std::uint64_t key, const std::string& stream);
  std::uint64_t next();
  int uniform_int(int lo, int hi);  // in [lo, hi]
  double uniform(double lo, double hi);
  // A value with three decimals in [-0.999, 0.999]: random, yet readable in feedback.
  double value();

 private:
  std::uint64_t state_;
};

// The keys one rank of a test was given (keys.hpp): its own, the one every rank shares, and in
// the reference's launch the seed, from which every rank's can be made.
struct TestKeys {
  std::uint64_t own = 0, shared = 0;
  std::optional<std::uint64_t> seed;
};

class Judgement;

class CheckContext {
 public:
  CheckContext(const TestCase& test, const TestKeys& keys, MPI_Comm test_comm, RecordWriter& out,
               std::string configs_dir, std::string work_dir);

  const TestCase& test;
  Communicator world;  // the test's own ranks: exactly test.ranks() of them
  RecordWriter& out;
  const std::string configs_dir;  // the named model configs
  const std::string work_dir;     // where a check may write files (random configs)

  int rank() const { return rank_; }
  // This rank's own inputs.
  Rng rng(const std::string& stream) const { return Rng(keys_.own, stream); }
  // Inputs every rank of the test holds alike (the same model config, say).
  Rng shared_rng(const std::string& stream) const { return Rng(keys_.shared, stream); }

  // Runs `student_call` (a call of the student function under test) on a sealed thread of its
  // own and returns what it returns; what it throws comes back as the standard exception of
  // the same kind (std::invalid_argument, std::runtime_error, ...) with the same message. A
  // thread it leaves running is a forbidden call of the function, and the tests after this one
  // run in a fresh process.
  template <class Call>
  auto call(Call&& student_call) {
    using Result = decltype(student_call());
    if constexpr (std::is_void_v<Result>) {
      run_student_call([&] { student_call(); });
    } else {
      std::optional<Result> result;
      run_student_call([&] { result.emplace(student_call()); });
      return std::move(*result);
    }
  }

  // Runs `judging(judgement)` in the reference's launch only (never where student code runs):
  // what the known mistakes would give, from every rank's inputs.
  template <class Judging>
  void judge(Judging&& judging);

  // The bytes this rank's student calls of this test sent to other ranks so far (every type),
  // for checks that bound them (record_bytes_beyond).
  std::uint64_t bytes_sent() const { return traffic_.sent(); }
  // The least this rank's result needs to receive from the other ranks; without it, at least
  // three quarters of what the reference's rank receives.
  void least_received(std::uint64_t bytes) { least_received_ = bytes; }
  // When several right methods move different amounts, the least any of them sends and
  // receives: the calls' traffic is then judged up to that many bytes only (more is no better).
  void judge_traffic_up_to(std::uint64_t bytes) { traffic_cap_ = bytes; }

  // The harness's own, after the check: records the traffic of collective checks.
  void record_traffic();
  bool left_a_thread() const { return left_a_thread_; }

 private:
  friend class Judgement;
  void run_student_call(const std::function<void()>& code);

  TestKeys keys_;
  int rank_ = 0;
  Traffic traffic_;
  std::optional<std::uint64_t> least_received_, traffic_cap_;
  bool left_a_thread_ = false;
};

// What a check's judge() may use: every rank's inputs, and where the known mistakes go.
class Judgement {
 public:
  explicit Judgement(CheckContext& context) : context_(context) {}
  // Rank `rank`'s own inputs, as that rank's rng(stream) draws them.
  Rng rng_of(int rank, const std::string& stream) const;
  // Records what value `name` would be after a known mistake, for the feedback to name it.
  template <class E>
  void mistake(const std::string& name, const std::string& description, const E& value);
  // Likewise for a value recorded with a type of its own ("step": a schedule, records.hpp).
  void mistake(const std::string& name, const std::string& description, const std::string& dtype,
               const std::vector<std::size_t>& shape, const std::vector<double>& values) {
    context_.out.mistake(name, description, dtype, shape, values);
  }

 private:
  CheckContext& context_;
};

// The (mp, dp) grid of a collective check, with communicators built here (never with the
// student's get_info), so that a check depends on the one function it tests.
struct Grid {
  explicit Grid(const CheckContext& context);
  int rank, mp_size, dp_size, mp_idx, dp_idx;
  Communicator mp_comm;  // same dp_idx, ordered by mp_idx
  Communicator dp_comm;  // same mp_idx, ordered by dp_idx
};

// A (rows, cols) matrix of Rng::value()s; `rng` goes on from where the matrix ends.
template <class T>
xt::xtensor<T, 2> random_matrix(Rng& rng, std::size_t rows, std::size_t cols) {
  xt::xtensor<T, 2> m({rows, cols});
  for (T& element : m) element = static_cast<T>(rng.value());
  return m;
}
template <class T>
xt::xtensor<T, 2> random_matrix(Rng&& rng, std::size_t rows, std::size_t cols) {
  return random_matrix<T>(rng, rows, cols);
}

template <class T>
const char* dtype_name() {
  if constexpr (std::is_same_v<T, float>) return "float";
  if constexpr (std::is_same_v<T, double>) return "double";
  if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
}

// A list of integers (indices, sizes, ranks, counts) as a record's int64 tensor.
template <class Values>
xt::xtensor<std::int64_t, 1> int_tensor(const Values& values) {
  auto tensor = xt::xtensor<std::int64_t, 1>::from_shape({values.size()});
  std::copy(values.begin(), values.end(), tensor.begin());
  return tensor;
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

// Records what a derive function needs and no rubric item compares (records.hpp, evidence).
template <class E>
void record_evidence(RecordWriter& out, const std::string& name, const E& tensor) {
  const TensorPayload p = payload(tensor);
  out.evidence(name, p.dtype, p.shape, p.values);
}

template <class Judging>
void CheckContext::judge(Judging&& judging) {
  if (!keys_.seed) return;
  Judgement judgement(*this);
  judging(judgement);
}

template <class E>
void Judgement::mistake(const std::string& name, const std::string& description, const E& value) {
  const TensorPayload p = payload(value);
  mistake(name, description, p.dtype, p.shape, p.values);
}

// Records whether `student_call`, a call with arguments the contract refuses, throws
// std::invalid_argument, under the name `call` ("cp_positions(10, 4, 0, true)"): 1 when it
// does, 0 when it returns, 2 when it throws another type.
template <class Call>
void record_refusal(CheckContext& context, const std::string& call, Call&& student_call) {
  long long outcome = 0;
  try {
    context.call(student_call);
  } catch (const std::invalid_argument&) {
    outcome = 1;
  } catch (const std::exception&) {
    outcome = 2;
  }
  context.out.integer(call +
                          ": throws std::invalid_argument (1: it does, 0: returns, 2: throws "
                          "another type)",
                      outcome);
}

// Records how many bytes the student calls of the test sent (bytes_sent()) beyond `allowed`,
// the most that what it is asked to do sends with the Communicator's estimates
// (communicator.hpp): 0 when it kept to that. `allowance` says what `allowed` stands for, as in
// "bytes sent beyond the 96 that one Allgather sends"; a function that moves more (an Allreduce
// where a Reduce_scatter is asked for, the logits gathered) fails that record.
void record_bytes_beyond(CheckContext& context, std::uint64_t allowed,
                         const std::string& allowance);

using CheckFunction = void (*)(CheckContext&);

// Runs the float or the double version of a check, as the test's type says.
inline void run_typed(CheckContext& context, CheckFunction for_float, CheckFunction for_double) {
  (context.test.type == "float" ? for_float : for_double)(context);
}

// What a derive function gets: a test's outputs on every rank, after the launch, in a process
// of the grader's where no student code runs (`dtk-grade-runner --derive`). What it records
// for rank r joins that rank's outputs, as if the check had recorded it.
struct DeriveContext {
  const TestCase& test;
  std::uint64_t seed;
  std::string configs_dir;
  const std::vector<TestOutput>& ranks;  // what each rank recorded, by rank
  std::vector<RecordWriter*> out;        // where each rank's derived values go

  // Rank `rank`'s own inputs, as that rank's rng(stream) drew them.
  Rng rng_of(int rank, const std::string& stream) const;
  // What rank `rank` recorded as evidence, or as a value, under `name`; nullptr if it did not.
  const Value* evidence(int rank, const std::string& name) const;
  const Value* value(int rank, const std::string& name) const;
};
using DeriveFunction = void (*)(DeriveContext&);

// Registers a check: what the grader needs to know of it (check_registry.hpp) and its code.
// Every check is registered once, here in the runner, beside its code:
//   DTK_GRADE_CHECK(check_get_info, {"get_info", CaseKind::layout, /*collective=*/true, ...});
//   DTK_GRADE_DERIVED_CHECK(check_plan_training, derive_plan_cost, {"plan_training", ...});
struct CheckRegistration {
  CheckRegistration(CheckInfo info, CheckFunction code, DeriveFunction derive = nullptr);
};
#define DTK_GRADE_CHECK(code, ...)                                \
  static const ::dtk::grade::CheckRegistration registered_##code( \
      ::dtk::grade::CheckInfo __VA_ARGS__, code)
#define DTK_GRADE_DERIVED_CHECK(code, derive, ...)                \
  static const ::dtk::grade::CheckRegistration registered_##code( \
      ::dtk::grade::CheckInfo __VA_ARGS__, code, derive)

// The code of a check, by function name; nullptr if none registered.
CheckFunction check_function(const std::string& function);
// Its derive function; nullptr if it has none.
DeriveFunction derive_function(const std::string& function);

}  // namespace dtk::grade
