#include "dtk/training/sgd.hpp"

#include <cmath>
#include <stdexcept>

#include <xtensor/xnoalias.hpp>

#include "dtk/mlp/shape_check.hpp"

namespace dtk {

float StepDecay::at(long step) const {
  return initial * std::pow(decay, static_cast<float>(step / every));
}

void sgd_step(xt::xtensor<float, 2>& param, const xt::xtensor<float, 2>& grad, float lr,
              const std::string& what) {
  expect_shape(grad, param.shape(0), param.shape(1), what);
  xt::noalias(param) -= lr * grad;
}

}  // namespace dtk
