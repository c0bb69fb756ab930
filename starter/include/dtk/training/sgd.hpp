// Stochastic gradient descent with the classic step-decay learning rate.
#pragma once

#include <string>

#include <xtensor/xtensor.hpp>

namespace dtk {

// lr(step) = initial * decay^floor(step / every): the learning rate drops by a constant factor
// every `every` optimizer steps. `step` counts global steps (one per global batch), so every
// (mp, dp) layout follows the same schedule.
struct StepDecay {
  float initial = 0.5f;
  float decay = 0.9f;
  long every = 20;

  float at(long step) const;
};

// param -= lr * grad. `what` names the parameter in the error thrown when the shapes differ
// (e.g. when collect_weight_grad returns a gradient of the wrong shape).
void sgd_step(xt::xtensor<float, 2>& param, const xt::xtensor<float, 2>& grad, float lr,
              const std::string& what);

}  // namespace dtk
