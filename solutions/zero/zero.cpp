// Part 9: ZeRO, sharded data parallelism.
// Declared, with the exact contract of every function, in include/dtk/zero.hpp.
// The only MPI use allowed here: dp_comm.Allreduce in zero1_grad_shard, dp_comm.Reduce_scatter
// in zero2_grad_shard, dp_comm.Allgather in zero_gather_params (one call each).
#include <dtk/zero.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include <xtensor/xview.hpp>

namespace dtk {

namespace {

// Bytes per parameter of the fp16 parameters and of the fp16 gradients (the paper's setting).
constexpr double kParameterBytes = 2;
constexpr double kGradientBytes = 2;

void require(bool ok, const std::string& function, const std::string& what) {
  if (!ok) throw std::invalid_argument(function + ": " + what);
}

void require_dp_size(int dp_size, const std::string& function) {
  require(dp_size >= 1, function, "dp_size must be >= 1, got " + std::to_string(dp_size));
}

// s = ceil(numel / dp_size): the values every rank stores, padding included.
std::size_t shard_size(std::size_t numel, int dp_size) { return (numel + dp_size - 1) / dp_size; }

}  // namespace

// ----------------------------------- 9.1 --------------------------------------------------------

double zero_memory_per_rank(double num_params, int dp_size, int stage, double k) {
  const std::string function = "zero_memory_per_rank";
  require(std::isfinite(num_params) && num_params >= 0, function,
          "num_params must be finite and >= 0, got " + std::to_string(num_params));
  require_dp_size(dp_size, function);
  require(0 <= stage && stage <= 3, function,
          "stage must be 0, 1, 2 or 3, got " + std::to_string(stage));
  require(std::isfinite(k) && k >= 0, function,
          "k must be finite and >= 0, got " + std::to_string(k));
  double parameters = kParameterBytes * num_params;
  double gradients = kGradientBytes * num_params;
  double optimizer_states = k * num_params;
  // Each stage shards one more of the three, from the largest down.
  if (stage >= 1) optimizer_states /= dp_size;
  if (stage >= 2) gradients /= dp_size;
  if (stage >= 3) parameters /= dp_size;
  return parameters + gradients + optimizer_states;
}

// ----------------------------------- 9.2 --------------------------------------------------------

std::pair<std::size_t, std::size_t> zero_shard_range(std::size_t numel, int dp_size, int dp_idx) {
  require_dp_size(dp_size, "zero_shard_range");
  require(0 <= dp_idx && dp_idx < dp_size, "zero_shard_range",
          "dp_idx must be in 0 .. dp_size - 1 = " + std::to_string(dp_size - 1) + ", got " +
              std::to_string(dp_idx));
  const std::size_t s = shard_size(numel, dp_size);
  return {std::min(dp_idx * s, numel), std::min((dp_idx + 1) * s, numel)};
}

// ----------------------------------- 9.3 --------------------------------------------------------

template <class T>
xt::xtensor<T, 1> zero1_grad_shard(const xt::xtensor<T, 1>& flat_grad, Communicator& dp_comm) {
  const std::size_t numel = flat_grad.size();
  const int p = dp_comm.Get_size();
  xt::xtensor<T, 1> sum = xt::xtensor<T, 1>::from_shape({numel});
  dp_comm.Allreduce(flat_grad, sum);
  const auto [begin, end] = zero_shard_range(numel, p, dp_comm.Get_rank());
  xt::xtensor<T, 1> shard = xt::zeros<T>({shard_size(numel, p)});
  std::copy(sum.begin() + begin, sum.begin() + end, shard.begin());
  return shard;
}

// ----------------------------------- 9.4 --------------------------------------------------------

template <class T>
xt::xtensor<T, 1> zero2_grad_shard(const xt::xtensor<T, 1>& flat_grad, Communicator& dp_comm) {
  const int p = dp_comm.Get_size();
  const std::size_t s = shard_size(flat_grad.size(), p);
  // Padded to p equal blocks: block r is exactly rank r's shard.
  xt::xtensor<T, 1> padded = xt::zeros<T>({p * s});
  std::copy(flat_grad.begin(), flat_grad.end(), padded.begin());
  xt::xtensor<T, 1> shard = xt::xtensor<T, 1>::from_shape({s});
  dp_comm.Reduce_scatter(padded, shard);
  return shard;
}

// ----------------------------------- 9.5 --------------------------------------------------------

template <class T>
xt::xtensor<T, 1> zero_gather_params(const xt::xtensor<T, 1>& shard, std::size_t numel,
                                     Communicator& dp_comm) {
  const int p = dp_comm.Get_size();
  const std::size_t s = shard_size(numel, p);
  require(shard.size() == s, "zero_gather_params",
          "shard.size() must be ceil(numel / dp_size) = ceil(" + std::to_string(numel) + " / " +
              std::to_string(p) + ") = " + std::to_string(s) + ", got " +
              std::to_string(shard.size()));
  xt::xtensor<T, 1> gathered = xt::xtensor<T, 1>::from_shape({p * s});
  dp_comm.Allgather(shard, gathered);
  return xt::view(gathered, xt::range(std::size_t{0}, numel));
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests link against exactly these.
// -------------------------------------------------------------------------------------------
#define DTK_INSTANTIATE_ZERO(T)                                                            \
  template xt::xtensor<T, 1> zero1_grad_shard<T>(const xt::xtensor<T, 1>&, Communicator&); \
  template xt::xtensor<T, 1> zero2_grad_shard<T>(const xt::xtensor<T, 1>&, Communicator&); \
  template xt::xtensor<T, 1> zero_gather_params<T>(const xt::xtensor<T, 1>&, std::size_t,  \
                                                   Communicator&);

DTK_INSTANTIATE_ZERO(float)
DTK_INSTANTIATE_ZERO(double)

}  // namespace dtk
