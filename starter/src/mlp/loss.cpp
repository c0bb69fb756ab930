#include "dtk/mlp/loss.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace dtk {

BatchStats& BatchStats::operator+=(const BatchStats& other) {
  loss_sum += other.loss_sum;
  correct += other.correct;
  count += other.count;
  return *this;
}

BatchStats SoftmaxCrossEntropy::forward(const Matrix& logits, const Labels& labels,
                                        std::size_t global_batch) {
  const std::size_t batch = logits.shape(0), classes = logits.shape(1);
  if (labels.size() != batch) {
    throw std::invalid_argument("SoftmaxCrossEntropy: " + std::to_string(batch) +
                                " rows of logits but " + std::to_string(labels.size()) + " labels");
  }
  ensure_shape(probabilities_, batch, classes);
  labels_ = &labels;
  global_batch_ = global_batch;

  BatchStats stats;
  stats.count = batch;
  for (std::size_t i = 0; i < batch; ++i) {
    const float* z = logits.data() + i * classes;
    float* p = probabilities_.data() + i * classes;
    // Subtracting the largest logit keeps exp() from overflowing; the softmax is unchanged.
    const std::size_t best = std::max_element(z, z + classes) - z;
    double sum = 0;
    for (std::size_t j = 0; j < classes; ++j) sum += p[j] = std::exp(z[j] - z[best]);
    for (std::size_t j = 0; j < classes; ++j) p[j] = static_cast<float>(p[j] / sum);
    // -log softmax(z)[label] = log(sum) - (z[label] - z[best])
    const std::size_t label = labels(i);
    stats.loss_sum += std::log(sum) - (z[label] - z[best]);
    stats.correct += best == label;
  }
  return stats;
}

const Matrix& SoftmaxCrossEntropy::backward() {
  const std::size_t batch = probabilities_.shape(0), classes = probabilities_.shape(1);
  ensure_shape(grad_, batch, classes);
  const float scale = 1.0f / static_cast<float>(global_batch_);
  for (std::size_t i = 0; i < batch; ++i) {
    for (std::size_t j = 0; j < classes; ++j) {
      const float one_hot = static_cast<std::size_t>((*labels_)(i)) == j ? 1.0f : 0.0f;
      grad_(i, j) = (probabilities_(i, j) - one_hot) * scale;
    }
  }
  return grad_;
}

}  // namespace dtk
