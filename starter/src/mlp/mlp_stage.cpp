#include "dtk/mlp/mlp_stage.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <xtensor/xoperation.hpp>
#include <xtensor/xview.hpp>

#include "dtk/mlp/shape_check.hpp"
#include "dtk/training/sgd.hpp"

namespace dtk {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

std::string text(std::size_t n) { return std::to_string(n); }

// The starting weights of layers [first_layer, last_layer): layer l drawn from seed + l.
std::vector<LayerWeights> whole_layers(const std::vector<int>& widths, int first_layer,
                                       int last_layer, std::uint32_t seed) {
  std::vector<LayerWeights> weights;
  for (int l = first_layer; l < last_layer; ++l) {
    weights.push_back(initial_layer_weights(widths[l], widths[l + 1], seed + l));
  }
  return weights;
}

}  // namespace

// ------------------------------------ MlpStageLayers ------------------------------------------

MlpStageLayers::MlpStageLayers(std::vector<int> widths, int first_layer, int last_layer,
                               std::uint32_t seed)
    : MlpStageLayers(widths, first_layer, last_layer, StageSplit{}) {
  for (auto& [weight, bias] : whole_layers(widths_, first_layer, last_layer, seed)) {
    layers_.push_back({weight, bias, xt::zeros_like(weight), xt::zeros_like(bias)});
  }
}

MlpStageLayers::MlpStageLayers(std::vector<int> widths, int first_layer, int last_layer,
                               StageSplit split)
    : widths_(std::move(widths)),
      first_layer_(first_layer),
      last_layer_(last_layer),
      split_(std::move(split)) {
  const int num_layers = static_cast<int>(widths_.size()) - 1;
  require(num_layers >= 1, "MlpStageLayers: an MLP needs at least two widths (input, output)");
  require(std::all_of(widths_.begin(), widths_.end(), [](int w) { return w >= 1; }),
          "MlpStageLayers: every width must be >= 1");
  require(0 <= first_layer && first_layer < last_layer && last_layer <= num_layers,
          "MlpStageLayers: layers [" + std::to_string(first_layer) + ", " +
              std::to_string(last_layer) + ") are not a non-empty range of the model's " +
              std::to_string(num_layers) + " layers");
  const std::size_t count = last_layer - first_layer;
  require(
      split_.layers.empty() || (split_.layers.size() == count && split_.weights.size() == count),
      "MlpStageLayers: a split of " + std::to_string(split_.layers.size()) + " layers for " +
          std::to_string(count) + " layers");
  for (auto& [weight, bias] : split_.weights) {
    layers_.push_back({weight, bias, xt::zeros_like(weight), xt::zeros_like(bias)});
  }
  split_.weights.clear();  // now in layers_
}

std::uint64_t MlpStageLayers::model_parallel_bytes() const {
  std::uint64_t bytes = 0;
  for (const auto& split : split_.layers) bytes += split->bytes_sent();
  return bytes;
}

void MlpStageLayers::zero_grads() {
  for (DenseLayer& layer : layers_) {
    layer.grad_weight.fill(0.0f);
    layer.grad_bias.fill(0.0f);
  }
}

void MlpStageLayers::sgd_step(float lr) {
  for (std::size_t j = 0; j < layers_.size(); ++j) {
    const std::string name = "layer " + std::to_string(first_layer_ + j);
    dtk::sgd_step(layers_[j].weight, layers_[j].grad_weight, lr, name + " W");
    dtk::sgd_step(layers_[j].bias, layers_[j].grad_bias, lr, name + " b");
  }
}

// ------------------------------------ MlpStage ------------------------------------------------

std::pair<std::size_t, std::size_t> microbatch_rows(std::size_t rows, int num_microbatches,
                                                    int mb) {
  const std::size_t base = rows / num_microbatches, extra = rows % num_microbatches;
  const std::size_t i = static_cast<std::size_t>(mb);
  const std::size_t begin = i * base + std::min(i, extra);
  return {begin, begin + base + (i < extra)};
}

MlpStage::MlpStage(MlpStageLayers& layers, const PipelineBatch& batch)
    : layers_(layers), batch_(batch) {
  require(1 <= batch.num_microbatches && batch.num_microbatches <= static_cast<int>(batch.rows),
          "MlpStage: " + std::to_string(batch.num_microbatches) + " micro-batches of a batch of " +
              text(batch.rows) + " rows: need between 1 and " + text(batch.rows));
  if (batch_.global_batch == 0) batch_.global_batch = batch.rows;
  if (is_first()) {
    require(batch.x && batch.x->shape(0) == batch.rows &&
                batch.x->shape(1) == static_cast<std::size_t>(layers.widths().front()),
            "MlpStage: the first stage needs batch.x of shape (" + text(batch.rows) + ", " +
                std::to_string(layers.widths().front()) + ")");
  }
  if (is_last()) {
    require(batch.labels && batch.labels->size() == batch.rows,
            "MlpStage: the last stage needs batch.labels, " + text(batch.rows) + " of them");
  }
}

std::pair<std::size_t, std::size_t> MlpStage::rows_of(int mb) const {
  require(0 <= mb && mb < batch_.num_microbatches,
          "MlpStage: no micro-batch " + std::to_string(mb) + " (there are " +
              std::to_string(batch_.num_microbatches) + ")");
  return microbatch_rows(batch_.rows, batch_.num_microbatches, mb);
}

std::size_t MlpStage::Stashed::bytes() const {
  std::size_t values = 0;
  for (const auto* tensors : {&activations, &split_inputs}) {
    for (const Matrix& tensor : *tensors) values += tensor.size();
  }
  return values * sizeof(float);
}

bool MlpStage::relu_after(std::size_t j) const {
  return layers_.first_layer() + static_cast<int>(j) + 1 <
         static_cast<int>(layers_.widths().size()) - 1;
}

std::array<std::size_t, 2> MlpStage::input_shape(int mb) const {
  const auto [begin, end] = rows_of(mb);
  return {end - begin, static_cast<std::size_t>(layers_.widths()[layers_.first_layer()])};
}

std::array<std::size_t, 2> MlpStage::output_shape(int mb) const {
  const auto [begin, end] = rows_of(mb);
  return {end - begin, static_cast<std::size_t>(layers_.widths()[layers_.last_layer()])};
}

Matrix MlpStage::input_microbatch(int mb) const {
  require(is_first(), "MlpStage::input_microbatch: only the first stage reads the input");
  const auto [begin, end] = rows_of(mb);
  return xt::view(*batch_.x, xt::range(begin, end), xt::all());
}

Matrix MlpStage::forward(int mb, const Matrix& input) {
  const auto [rows, width] = input_shape(mb);
  expect_shape(input, rows, width, "MlpStage::forward(" + std::to_string(mb) + ") input");
  require(!stash_.count(mb), "MlpStage::forward(" + std::to_string(mb) + ") called twice");

  Stashed stashed{{input}, std::vector<Matrix>(layers_.layers().size())};
  std::vector<Matrix>& activations = stashed.activations;
  for (std::size_t j = 0; j < layers_.layers().size(); ++j) {
    LayerSplit* split = layers_.split(j);
    Matrix out;
    layers_.with_weights(j, [&](const DenseLayer& layer) {
      // A split layer may need more than this rank's part of its input (split.hpp).
      if (split) stashed.split_inputs[j] = split->forward_input(activations.back());
      const Matrix& in = split ? stashed.split_inputs[j] : activations.back();
      Matrix product({rows, layer.weight.shape(1)});
      matmul(in, layer.weight, product);
      if (split) {
        out = split->forward_output(product, layer.bias);
      } else {
        add_row(product, layer.bias);
        out = std::move(product);
      }
    });
    if (relu_after(j)) out = xt::maximum(out, 0.0f);
    activations.push_back(std::move(out));
  }

  if (is_last()) {
    const auto [begin, end] = rows_of(mb);
    const Labels labels = xt::view(*batch_.labels, xt::range(begin, end));
    SoftmaxCrossEntropy loss;
    stats_ += loss.forward(activations.back(), labels, batch_.global_batch);
    loss_grads_[mb] = loss.backward();
  }
  Matrix output = activations.back();
  stashed_bytes_ += stashed.bytes();
  stash_[mb] = std::move(stashed);
  peak_stashed_ = std::max(peak_stashed_, stash_.size());
  peak_stashed_bytes_ = std::max(peak_stashed_bytes_, stashed_bytes_);
  return output;
}

Matrix MlpStage::loss_grad(int mb) const {
  require(is_last(), "MlpStage::loss_grad: only the last stage computes the loss");
  const auto found = loss_grads_.find(mb);
  require(found != loss_grads_.end(), "MlpStage::loss_grad(" + std::to_string(mb) +
                                          ") before forward(" + std::to_string(mb) + ")");
  return found->second;
}

Matrix MlpStage::backward(int mb, const Matrix& output_grad) {
  auto node = stash_.extract(mb);  // the activations are freed when this step ends
  require(!node.empty(), "MlpStage::backward(" + std::to_string(mb) + ") before forward(" +
                             std::to_string(mb) + ")");
  const Stashed& stashed = node.mapped();
  const std::vector<Matrix>& activations = stashed.activations;
  stashed_bytes_ -= stashed.bytes();
  const auto [rows, width] = output_shape(mb);
  expect_shape(output_grad, rows, width,
               "MlpStage::backward(" + std::to_string(mb) + ") output gradient");
  loss_grads_.erase(mb);

  Matrix grad = output_grad;  // of layer j's output, from the last layer to the first
  for (std::size_t j = layers_.layers().size(); j-- > 0;) {
    if (relu_after(j)) grad = xt::where(activations[j + 1] > 0.0f, grad, 0.0f);
    // A layer's backward runs with its weights there, as in ZeRO-3's accounting: one gather in
    // the forward and one in the backward of every layer.
    LayerSplit* split = layers_.split(j);
    layers_.with_weights(j, [&](DenseLayer& layer) {
      if (split) grad = split->backward_output(grad);
      const Matrix& in = split ? stashed.split_inputs[j] : activations[j];
      // grad_W += inᵀ · grad and grad_b += column sums of grad, for this micro-batch's rows.
      Matrix grad_weight(layer.grad_weight.shape());
      matmul(in, grad, grad_weight, /*transpose_a=*/true);
      layer.grad_weight += grad_weight;
      Matrix grad_bias;
      column_sums(grad, grad_bias);
      layer.grad_bias += grad_bias;
      // Nothing before the model's first layer needs the gradient of its input.
      if (j == 0 && is_first()) {
        grad = Matrix::from_shape({0, 0});
        return;
      }
      Matrix product_grad({rows, layer.weight.shape(0)});
      matmul(grad, layer.weight, product_grad, false, /*transpose_b=*/true);
      grad = split ? split->backward_input(product_grad) : std::move(product_grad);
    });
  }
  return grad;
}

}  // namespace dtk
