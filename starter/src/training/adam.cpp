#include "dtk/training/adam.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace dtk {

template <class T>
Adam<T>::Adam(std::size_t size, AdamOptions options)
    : options_(options), m_(xt::zeros<T>({size})), v_(xt::zeros<T>({size})) {}

template <class T>
void Adam<T>::step(xt::xtensor<T, 1>& params, std::size_t offset, const xt::xtensor<T, 1>& grad,
                   T lr) {
  const std::size_t n = size();
  if (offset + n > params.size() || grad.size() < n) {
    throw std::invalid_argument(
        "Adam::step: the optimizer holds the states of " + std::to_string(n) +
        " parameters, so it needs params.size() >= offset + " + std::to_string(n) +
        " and grad.size() >= " + std::to_string(n) + ", got params.size() " +
        std::to_string(params.size()) + ", offset " + std::to_string(offset) + ", grad.size() " +
        std::to_string(grad.size()));
  }
  ++steps_;
  // m and v start at 0 and so lean towards 0 in the first steps; dividing by these undoes it.
  const T correction1 = static_cast<T>(1 - std::pow(options_.beta1, steps_));
  const T correction2 = static_cast<T>(1 - std::pow(options_.beta2, steps_));
  const T beta1 = static_cast<T>(options_.beta1), beta2 = static_cast<T>(options_.beta2);
  const T eps = static_cast<T>(options_.eps);
  T* param = params.data() + offset;
  for (std::size_t i = 0; i < n; ++i) {
    const T g = grad(i);
    m_(i) = beta1 * m_(i) + (1 - beta1) * g;
    v_(i) = beta2 * v_(i) + (1 - beta2) * g * g;
    param[i] -= lr * (m_(i) / correction1) / (std::sqrt(v_(i) / correction2) + eps);
  }
}

template class Adam<float>;
template class Adam<double>;

}  // namespace dtk
