// One pipeline stage of a deep MLP (assignment 2, Part 8): the PipelineStage that
// run_pipeline_schedule drives when the kit trains a pipeline.
//
// The model is widths[0] -> widths[1] -> ... -> widths.back(): layer l is fully connected,
// widths[l] -> widths[l + 1], followed by ReLU except after the last layer, which feeds softmax
// cross-entropy. E.g. {784, 256, 256, 256, 10} has 4 layers. A stage holds a contiguous range of
// them, [first_layer, last_layer).
//
// Two objects, because the weights outlive a step and the activations do not:
//   MlpStageLayers  the stage's layers and their gradient accumulators, kept from step to step;
//   MlpStage        one training step of the stage: it cuts the batch into micro-batches,
//                   stashes each micro-batch's activations from forward(mb) to backward(mb),
//                   and adds each micro-batch's weight gradients to the layers' accumulators.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "dtk/mlp/fc_layer.hpp"
#include "dtk/mlp/layer_split.hpp"
#include "dtk/mlp/loss.hpp"
#include "dtk/mlp/matrix_ops.hpp"
#include "dtk/mlp/mlp.hpp"
#include "dtk/pipeline.hpp"

namespace dtk {

// One fully connected layer, out = x · W + b, and the gradients of one step summed over its
// micro-batches.
struct DenseLayer {
  Matrix weight, bias;            // (in, out), (1, out)
  Matrix grad_weight, grad_bias;  // same shapes
};

// Where a stage's weights come from when they are not kept whole (ZeRO-3, Part 9): the stage
// calls acquire(j) right before it uses layers()[j]'s W and b and release(j) right after, so the
// gate can gather them from the data-parallel ranks and free them again.
class ParameterGate {
 public:
  virtual ~ParameterGate() = default;
  virtual void acquire(std::size_t j) = 0;
  virtual void release(std::size_t j) = 0;
};

class MlpStageLayers {
 public:
  // Layers [first_layer, last_layer) of the MLP with these widths, layer l drawn from seed + l
  // (initial_layer_weights): whatever the cut, every layer starts the same, and layers 0 and 1
  // of {784, 256, 10} start as the kit's MLP's fc1 and fc2. Gradients start at zero.
  // Requires at least two widths, all >= 1, and 0 <= first_layer < last_layer <= widths - 1.
  MlpStageLayers(std::vector<int> widths, int first_layer, int last_layer,
                 std::uint32_t seed = MLP::kDefaultSeed);
  // The same layers split over a model-parallel group: `split` holds this rank's slices of
  // their weights and how each layer communicates (layer_split.hpp).
  MlpStageLayers(std::vector<int> widths, int first_layer, int last_layer, StageSplit split);

  const std::vector<int>& widths() const { return widths_; }
  int first_layer() const { return first_layer_; }
  int last_layer() const { return last_layer_; }
  bool holds_first_layer() const { return first_layer_ == 0; }
  bool holds_last_layer() const { return last_layer_ == static_cast<int>(widths_.size()) - 1; }

  // Layer first_layer() + j is layers()[j].
  std::vector<DenseLayer>& layers() { return layers_; }
  const std::vector<DenseLayer>& layers() const { return layers_; }

  // How layers()[j] is split over the model-parallel group: nullptr when it is whole.
  LayerSplit* split(std::size_t j) const {
    return split_.layers.empty() ? nullptr : split_.layers[j].get();
  }
  // Whether this rank's copy of layers()[j]'s bias counts among the model's weights.
  bool owns_bias(std::size_t j) const { return !split(j) || split(j)->owns_bias(); }
  // What the split layers sent over their model-parallel communicators so far (0: not split).
  std::uint64_t model_parallel_bytes() const;

  // Without a gate (the default: nullptr) the weights are always there. The gate must outlive
  // the stage's use of these layers.
  void set_gate(ParameterGate* gate) { gate_ = gate; }
  // Runs use() between gate->acquire(j) and gate->release(j) (just use() without a gate).
  template <class Use>
  void with_weights(std::size_t j, Use use) {
    if (gate_) gate_->acquire(j);
    use(layers_[j]);
    if (gate_) gate_->release(j);
  }

  void zero_grads();
  // W -= lr * grad_W and b -= lr * grad_b for every layer (the gradients are left as they are).
  void sgd_step(float lr);

 private:
  std::vector<int> widths_;
  int first_layer_, last_layer_;
  std::vector<DenseLayer> layers_;
  StageSplit split_;  // no layers: not split
  ParameterGate* gate_ = nullptr;
};

// One training step's batch as a pipeline stage sees it.
struct PipelineBatch {
  std::size_t rows = 0;            // images in this pipeline's batch
  int num_microbatches = 1;        // 1 <= num_microbatches <= rows
  std::size_t global_batch = 0;    // images over all data-parallel replicas: the loss is their
                                   // mean (0: rows, a single replica)
  const Matrix* x = nullptr;       // (rows, widths[0]): the input, read by the first stage only
  const Labels* labels = nullptr;  // (rows): the targets, read by the last stage only
};

// Rows [begin, end) of micro-batch mb when `rows` rows are cut into num_microbatches contiguous
// micro-batches, the first rows % num_microbatches of them one row longer.
std::pair<std::size_t, std::size_t> microbatch_rows(std::size_t rows, int num_microbatches, int mb);

class MlpStage : public PipelineStage<float> {
 public:
  // `layers` must outlive this object; backward() adds to its gradient accumulators (zero them
  // before the step). The first stage needs batch.x, the last batch.labels.
  MlpStage(MlpStageLayers& layers, const PipelineBatch& batch);

  bool is_first() const override { return layers_.holds_first_layer(); }
  bool is_last() const override { return layers_.holds_last_layer(); }
  std::array<std::size_t, 2> input_shape(int mb) const override;
  std::array<std::size_t, 2> output_shape(int mb) const override;
  Matrix input_microbatch(int mb) const override;
  Matrix forward(int mb, const Matrix& input) override;
  Matrix loss_grad(int mb) const override;
  // On the first stage, returns an empty (0, 0) tensor: nothing before the model's first layer
  // needs the gradient of its input.
  Matrix backward(int mb, const Matrix& output_grad) override;

  // Last stage: loss and correct predictions over the micro-batches run forward so far.
  const BatchStats& stats() const { return stats_; }
  // The most micro-batches whose activations this stage held at once (GPipe: all of them;
  // 1F1B: at most num_stages - stage).
  std::size_t peak_stashed_microbatches() const { return peak_stashed_; }
  // The most bytes of stashed activations this stage held at once.
  std::size_t peak_stashed_bytes() const { return peak_stashed_bytes_; }

 private:
  // Rows [begin, end) of the batch that micro-batch mb holds (throws for an mb out of range).
  std::pair<std::size_t, std::size_t> rows_of(int mb) const;
  // Whether ReLU follows layers()[j].
  bool relu_after(std::size_t j) const;

  // What one micro-batch keeps from its forward to its backward.
  struct Stashed {
    // The stage's input, then each layer's output (ReLU's output tells where its input was
    // positive): activations[j] is what layer j received.
    std::vector<Matrix> activations;
    // What a split layer j multiplied by its W slice, when it needed more than activations[j].
    std::vector<Matrix> split_inputs;
    std::size_t bytes() const;
  };

  MlpStageLayers& layers_;
  PipelineBatch batch_;
  std::map<int, Stashed> stash_;
  std::map<int, Matrix> loss_grads_;  // last stage, from forward(mb) to loss_grad(mb)
  BatchStats stats_;
  std::size_t peak_stashed_ = 0;
  std::size_t stashed_bytes_ = 0, peak_stashed_bytes_ = 0;
};

}  // namespace dtk
