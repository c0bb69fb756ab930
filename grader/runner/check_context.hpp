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

template <class T>
const char* dtype_name() {
  if constexpr (std::is_same_v<T, float>) return "float";
  if constexpr (std::is_same_v<T, double>) return "double";
  if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
}

// Records any xtensor expression (its shape and its elements, row-major).
template <class E>
void record_tensor(RecordWriter& out, const std::string& name, const E& tensor) {
  using T = typename E::value_type;
  std::vector<std::size_t> shape(tensor.shape().begin(), tensor.shape().end());
  std::vector<double> values(tensor.begin(), tensor.end());
  out.tensor(name, dtype_name<T>(), shape, values);
}

using CheckFunction = void (*)(CheckContext&);

// Runs the float or the double version of a check, as the test's type says.
inline void run_typed(CheckContext& context, CheckFunction for_float, CheckFunction for_double) {
  (context.test.type == "float" ? for_float : for_double)(context);
}

// The entry point of every check, by function name.
CheckFunction check_function(const std::string& function);

void check_split_train(CheckContext& context);
void check_get_info(CheckContext& context);
void check_naive_collect_forward_input(CheckContext& context);
void check_naive_collect_forward_output(CheckContext& context);
void check_megatron_collect_forward_input(CheckContext& context);
void check_megatron_collect_forward_output(CheckContext& context);
void check_naive_collect_backward_output(CheckContext& context);
void check_naive_collect_backward_x(CheckContext& context);
void check_megatron_collect_backward_output(CheckContext& context);
void check_megatron_collect_backward_x(CheckContext& context);
void check_collect_weight_grad(CheckContext& context);
void check_model_training_cost_analysis(CheckContext& context);
void check_get_optimal_N_D(CheckContext& context);

}  // namespace dtk::grade
