#include "dtk/training/flat_parameters.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dtk {

namespace {

// Calls visit(tensor, offset) for W and b of every layer of [first, last) (or their gradients),
// in the flat order, offset being where the tensor starts in the flat vector. Layer is
// DenseLayer with or without const.
template <class Layer, class Visit>
void for_each_tensor(Layer* first, Layer* last, bool gradients, Visit visit) {
  std::size_t offset = 0;
  for (; first != last; ++first) {
    Layer& layer = *first;
    for (auto* tensor : {gradients ? &layer.grad_weight : &layer.weight,
                         gradients ? &layer.grad_bias : &layer.bias}) {
      visit(*tensor, offset);
      offset += tensor->size();
    }
  }
}

// The values of the tensors for_each_tensor visits (under ZeRO-3 the gradients exist while the
// weights do not, so the two counts can differ).
std::size_t count(const DenseLayer* first, const DenseLayer* last, bool gradients = false) {
  std::size_t numel = 0;
  for_each_tensor(first, last, gradients,
                  [&numel](const Matrix& tensor, std::size_t) { numel += tensor.size(); });
  return numel;
}

xt::xtensor<float, 1> flatten(const DenseLayer* first, const DenseLayer* last, bool gradients) {
  xt::xtensor<float, 1> flat = xt::xtensor<float, 1>::from_shape({count(first, last, gradients)});
  for_each_tensor(first, last, gradients, [&flat](const Matrix& tensor, std::size_t offset) {
    std::copy(tensor.begin(), tensor.end(), flat.begin() + offset);
  });
  return flat;
}

void unflatten(DenseLayer* first, DenseLayer* last, const xt::xtensor<float, 1>& flat) {
  const std::size_t numel = count(first, last);
  if (flat.size() != numel) {
    throw std::invalid_argument("set_flat_parameters: the layers have " + std::to_string(numel) +
                                " parameters, but the flat vector has " +
                                std::to_string(flat.size()) + " values");
  }
  for_each_tensor(first, last, /*gradients=*/false, [&flat](Matrix& tensor, std::size_t offset) {
    std::copy_n(flat.begin() + offset, tensor.size(), tensor.begin());
  });
}

}  // namespace

std::size_t parameter_count(const std::vector<DenseLayer>& layers) {
  return count(layers.data(), layers.data() + layers.size());
}

xt::xtensor<float, 1> flat_parameters(const std::vector<DenseLayer>& layers) {
  return flatten(layers.data(), layers.data() + layers.size(), /*gradients=*/false);
}

xt::xtensor<float, 1> flat_gradients(const std::vector<DenseLayer>& layers) {
  return flatten(layers.data(), layers.data() + layers.size(), /*gradients=*/true);
}

void set_flat_parameters(std::vector<DenseLayer>& layers, const xt::xtensor<float, 1>& flat) {
  unflatten(layers.data(), layers.data() + layers.size(), flat);
}

xt::xtensor<float, 1> flat_parameters(const DenseLayer& layer) {
  return flatten(&layer, &layer + 1, /*gradients=*/false);
}

xt::xtensor<float, 1> flat_gradients(const DenseLayer& layer) {
  return flatten(&layer, &layer + 1, /*gradients=*/true);
}

void set_flat_parameters(DenseLayer& layer, const xt::xtensor<float, 1>& flat) {
  unflatten(&layer, &layer + 1, flat);
}

}  // namespace dtk
