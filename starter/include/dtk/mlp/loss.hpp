// Softmax cross-entropy, the loss of the classifier, for a global batch split across the
// replicas (data parallelism).
#pragma once

#include <cstddef>
#include <cstdint>

#include <xtensor/xtensor.hpp>

#include "dtk/mlp/matrix_ops.hpp"

namespace dtk {

using Labels = xt::xtensor<std::int32_t, 1>;

// Totals over the images of a batch (or of many): summed loss, correct predictions, images.
struct BatchStats {
  double loss_sum = 0;
  std::int64_t correct = 0;
  std::int64_t count = 0;

  BatchStats& operator+=(const BatchStats& other);
  double mean_loss() const { return count ? loss_sum / count : 0.0; }
  double accuracy() const { return count ? double(correct) / count : 0.0; }
};

class SoftmaxCrossEntropy {
 public:
  // logits: (batch, classes), this replica's part of the global batch; labels:
  // (batch,). global_batch: the images of the step over ALL replicas. Returns this
  // part's summed loss and correct predictions (argmax of the logits).
  BatchStats forward(const Matrix& logits, const Labels& labels, std::size_t global_batch);

  // The gradient of the mean loss over the GLOBAL batch with respect to the logits:
  // (softmax - one_hot) / global_batch. Dividing by the global batch, not this part's, makes
  // the sum of all replicas' gradients (collect_weight_grad) the exact gradient of the full batch.
  const Matrix& backward();

 private:
  Matrix probabilities_, grad_;
  const Labels* labels_ = nullptr;
  std::size_t global_batch_ = 1;
};

}  // namespace dtk
