#include "dtk/model/flat_parameters.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dtk {

namespace {

// Calls visit(tensor, offset) for W and b of every layer (or their gradients), in the flat
// order, offset being where the tensor starts in the flat vector. Layers is std::vector<DenseLayer>
// with or without const.
template <class Layers, class Visit>
void for_each_tensor(Layers& layers, bool gradients, Visit visit) {
  std::size_t offset = 0;
  for (auto& layer : layers) {
    for (auto* tensor : {gradients ? &layer.grad_weight : &layer.weight,
                         gradients ? &layer.grad_bias : &layer.bias}) {
      visit(*tensor, offset);
      offset += tensor->size();
    }
  }
}

xt::xtensor<float, 1> flatten(const std::vector<DenseLayer>& layers, bool gradients) {
  xt::xtensor<float, 1> flat = xt::xtensor<float, 1>::from_shape({parameter_count(layers)});
  for_each_tensor(layers, gradients, [&flat](const Matrix& tensor, std::size_t offset) {
    std::copy(tensor.begin(), tensor.end(), flat.begin() + offset);
  });
  return flat;
}

}  // namespace

std::size_t parameter_count(const std::vector<DenseLayer>& layers) {
  std::size_t count = 0;
  for (const DenseLayer& layer : layers) count += layer.weight.size() + layer.bias.size();
  return count;
}

xt::xtensor<float, 1> flat_parameters(const std::vector<DenseLayer>& layers) {
  return flatten(layers, /*gradients=*/false);
}

xt::xtensor<float, 1> flat_gradients(const std::vector<DenseLayer>& layers) {
  return flatten(layers, /*gradients=*/true);
}

void set_flat_parameters(std::vector<DenseLayer>& layers, const xt::xtensor<float, 1>& flat) {
  const std::size_t numel = parameter_count(layers);
  if (flat.size() != numel) {
    throw std::invalid_argument("set_flat_parameters: the layers have " + std::to_string(numel) +
                                " parameters, but the flat vector has " +
                                std::to_string(flat.size()) + " values");
  }
  for_each_tensor(layers, /*gradients=*/false, [&flat](Matrix& tensor, std::size_t offset) {
    std::copy_n(flat.begin() + offset, tensor.size(), tensor.begin());
  });
}

}  // namespace dtk
