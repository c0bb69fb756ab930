// Kit self-test of Part 9's provided optimizer pieces, on 4 ranks: Adam's steps, the flat views
// of the layers, and ZeRO stages 1, 2 and 3 driving a sharded Adam with the reference's
// functions, which must give unsharded Adam on the summed gradient.
#include "dtk_test.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "dtk/training/adam.hpp"
#include "dtk/training/flat_parameters.hpp"
#include "dtk/zero.hpp"

namespace {

constexpr int kRanks = 4;
constexpr double kLr = 1e-2;
constexpr int kSteps = 3;

template <class T>
xt::xtensor<T, 1> make(std::size_t n, double (*value)(std::size_t)) {
  xt::xtensor<T, 1> out = xt::xtensor<T, 1>::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) out(i) = static_cast<T>(value(i));
  return out;
}

double initial_parameter(std::size_t i) { return std::cos(0.1 * i); }

// Rank r's gradient at step t: different for every rank, step and element, of both signs.
xt::xtensor<double, 1> rank_gradient(int r, int t, std::size_t numel) {
  xt::xtensor<double, 1> grad = xt::xtensor<double, 1>::from_shape({numel});
  for (std::size_t i = 0; i < numel; ++i) grad(i) = std::sin(0.7 * i + 1.3 * r + 2.9 * t);
  return grad;
}

// Unsharded Adam on the gradient summed over p ranks: what every ZeRO stage must reproduce.
xt::xtensor<double, 1> unsharded_adam(std::size_t numel, int p) {
  xt::xtensor<double, 1> params = make<double>(numel, initial_parameter);
  dtk::Adam<double> adam(numel);
  for (int t = 0; t < kSteps; ++t) {
    xt::xtensor<double, 1> sum = xt::zeros<double>({numel});
    for (int r = 0; r < p; ++r) sum += rank_gradient(r, t, numel);
    adam.step(params, 0, sum, kLr);
  }
  return params;
}

// Parameters [begin, end) of `params`, zero-padded to s values: this rank's shard.
xt::xtensor<double, 1> padded_shard(const xt::xtensor<double, 1>& params, std::size_t begin,
                                    std::size_t end, std::size_t s) {
  xt::xtensor<double, 1> shard = xt::zeros<double>({s});
  std::copy(params.begin() + begin, params.begin() + end, shard.begin());
  return shard;
}

// kSteps of ZeRO stage 1, 2 or 3 on dp_comm; returns the whole parameter vector at the end.
xt::xtensor<double, 1> sharded_adam(int stage, std::size_t numel, dtk::Communicator& dp_comm) {
  const int p = dp_comm.Get_size();
  const auto [begin, end] = dtk::zero_shard_range(numel, p, dp_comm.Get_rank());
  const std::size_t s = (numel + p - 1) / p;
  // Every stage keeps the optimizer states of its shard only.
  dtk::Adam<double> adam(end - begin);
  xt::xtensor<double, 1> params = make<double>(numel, initial_parameter);
  if (stage == 3) {
    // ZeRO-3 keeps only its shard of the parameters; the whole vector exists only when gathered.
    xt::xtensor<double, 1> param_shard = padded_shard(params, begin, end, s);
    for (int t = 0; t < kSteps; ++t) {
      const auto grad = rank_gradient(dp_comm.Get_rank(), t, numel);
      adam.step(param_shard, 0, dtk::zero2_grad_shard(grad, dp_comm), kLr);
    }
    return dtk::zero_gather_params(param_shard, numel, dp_comm);
  }
  for (int t = 0; t < kSteps; ++t) {
    const auto grad = rank_gradient(dp_comm.Get_rank(), t, numel);
    const auto grad_shard =
        stage == 1 ? dtk::zero1_grad_shard(grad, dp_comm) : dtk::zero2_grad_shard(grad, dp_comm);
    adam.step(params, begin, grad_shard, kLr);
    params = dtk::zero_gather_params(padded_shard(params, begin, end, s), numel, dp_comm);
  }
  return params;
}

}  // namespace

TEMPLATE_TEST_CASE(
    "Adam: with a constant gradient every bias-corrected step moves each "
    "parameter by lr against the gradient's sign",
    "[adam]", float, double) {
  using T = TestType;
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // m / (1 - beta1^t) = g and v / (1 - beta2^t) = g² at every step t when g is constant.
    const xt::xtensor<T, 1> grad = {0.5, -2, 1e-3, 0};
    xt::xtensor<T, 1> params = {1, 1, 1, 1, 7};
    dtk::Adam<T> adam(4);
    for (int t = 1; t <= kSteps; ++t) {
      adam.step(params, 0, grad, static_cast<T>(kLr));
      const double moved = t * kLr;
      const xt::xtensor<T, 1> expected = {static_cast<T>(1 - moved), static_cast<T>(1 + moved),
                                          static_cast<T>(1 - moved * 1e-3 / (1e-3 + 1e-8)), 1, 7};
      check.close("parameters after Adam step " + std::to_string(t) +
                      " (the last, 7, is past "
                      "size() and stays)",
                  expected, params, 1e-5);
    }
    check.equal("steps()", kSteps, adam.steps());
    check.equal("state_bytes()", 2 * 4 * sizeof(T), adam.state_bytes());
  });
}

TEST_CASE("Adam: a step past the end of params or with too short a gradient throws", "[adam]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Adam<double> adam(3);
    xt::xtensor<double, 1> params = xt::zeros<double>({4});
    const xt::xtensor<double, 1> grad = xt::ones<double>({3});
    dtk::testing::expect_invalid_argument(check, "Adam::step(params of 4, offset 2, ...)",
                                          [&] { adam.step(params, 2, grad, 0.1); });
    const xt::xtensor<double, 1> short_grad = xt::ones<double>({2});
    dtk::testing::expect_invalid_argument(check, "Adam::step(..., grad of 2, ...)",
                                          [&] { adam.step(params, 0, short_grad, 0.1); });
    check.equal("steps() after two refused steps", 0, adam.steps());
  });
}

TEST_CASE("flat views: W then b of each layer, row-major, the same order for the gradients",
          "[flat]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // Layers 3 -> 2 and 2 -> 2: W1 at [0, 6), b1 at [6, 8), W2 at [8, 12), b2 at [12, 14).
    dtk::MlpStageLayers stage({3, 2, 2}, 0, 2);
    auto& layers = stage.layers();
    check.equal("parameter_count", 14, dtk::parameter_count(layers));
    const xt::xtensor<float, 1> values = xt::arange<float>(14);
    dtk::set_flat_parameters(layers, values);
    check.close("W1 after set_flat_parameters(0 .. 13)",
                xt::xtensor<float, 2>{{0, 1}, {2, 3}, {4, 5}}, layers[0].weight);
    check.close("b1", xt::xtensor<float, 2>{{6, 7}}, layers[0].bias);
    check.close("W2", xt::xtensor<float, 2>{{8, 9}, {10, 11}}, layers[1].weight);
    check.close("b2", xt::xtensor<float, 2>{{12, 13}}, layers[1].bias);
    check.close("flat_parameters after set_flat_parameters", values, dtk::flat_parameters(layers));
    for (auto& layer : layers) {
      layer.grad_weight = -layer.weight;
      layer.grad_bias = -layer.bias;
    }
    check.close("flat_gradients (each gradient set to minus its parameter)",
                xt::xtensor<float, 1>(-values), dtk::flat_gradients(layers));
    dtk::testing::expect_invalid_argument(check, "set_flat_parameters(13 values)", [&] {
      dtk::set_flat_parameters(layers, xt::xtensor<float, 1>(xt::arange<float>(13)));
    });
  });
}

TEST_CASE(
    "ZeRO 1, 2 and 3 with a sharded Adam equal unsharded Adam on the summed gradient, on "
    "1 to 4 ranks",
    "[zero]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    for (int size = 1; size <= kRanks; ++size) {
      // Groups of `size` consecutive ranks (with 3, rank 3 alone).
      dtk::Communicator dp_comm = world.Split(world.Get_rank() / size, world.Get_rank());
      // 1 and 3: fewer values than ranks; 10 and 1001: not divisible by 3 or 4.
      for (std::size_t numel : {1, 3, 10, 1001}) {
        const auto expected = unsharded_adam(numel, dp_comm.Get_size());
        for (int stage = 1; stage <= 3; ++stage) {
          check.close("ZeRO-" + std::to_string(stage) + " on " +
                          std::to_string(dp_comm.Get_size()) + " rank(s), numel " +
                          std::to_string(numel) + ", after " + std::to_string(kSteps) + " steps",
                      expected, sharded_adam(stage, numel, dp_comm), 1e-6, 0);
        }
      }
    }
  });
}
