// One stage of the GPT's pipeline, as Part 8's executor runs it (dtk/pipeline.hpp's
// PipelineStage): the pieces of the model this rank holds (GptLayout::piece_begin, piece_end),
// run on one training step's micro-batches.
//
// What crosses a stage boundary is a micro-batch's residual stream, (B_mb · S, h): B_mb
// sequences of the S positions this rank holds (T; T/cp under context parallelism; T/(cp · tp)
// with sequence parallelism too). Each rank sends its own rows to the rank of the next stage
// with its tp, cp and dp coordinates, and receives their gradient back. The first stage reads
// its micro-batch's tokens itself (its input_microbatch is empty); the last starts a backward
// from its own loss (its loss_grad is empty): only the last stage has a loss.
//
// Each micro-batch in flight gets a slot of the model's activations (slots.hpp), the lowest
// free one at its forward, freed at its backward: the stage keeps as many slots as it ever has
// micro-batches in flight (GPipe's m; 1F1B's at most p − s on stage s). Interleaved (Part 14),
// a rank runs one stage per chunk it holds, each on its own piece of the model.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "dtk/gpt/batch.hpp"
#include "dtk/gpt/gpt.hpp"
#include "dtk/pipeline.hpp"
#include "dtk/trace/timeline.hpp"

namespace dtk::gpt {

// The forwards whose backward has not run yet, over every chunk of one rank: now and at most.
struct InFlight {
  int now = 0, peak = 0;
};

template <class T>
class GptPipelineStage final : public PipelineStage<T> {
 public:
  // `model` (this chunk's), `micro_batches` (one step's, this rank's positions of each) and
  // `in_flight` (shared by the rank's chunks) outlive the stage. With a `recorder`, each forward
  // and backward is an interval of the trace, named "F3" and "B3" (micro-batch 3) or, when the
  // rank holds several chunks, "F3.1" and "B3.1" (through its chunk `chunk` = 1).
  GptPipelineStage(Gpt<T>& model, const std::vector<GptBatch>& micro_batches, InFlight& in_flight,
                   TimelineRecorder* recorder, int chunk = -1);

  bool is_first() const override;
  bool is_last() const override;
  std::array<std::size_t, 2> input_shape(int mb) const override;
  std::array<std::size_t, 2> output_shape(int mb) const override;
  xt::xtensor<T, 2> input_microbatch(int mb) const override;
  xt::xtensor<T, 2> forward(int mb, const xt::xtensor<T, 2>& input) override;
  xt::xtensor<T, 2> loss_grad(int mb) const override;
  xt::xtensor<T, 2> backward(int mb, const xt::xtensor<T, 2>& output_grad) override;

  // The cross-entropy summed over the rows this stage scored (the last stage's micro-batches),
  // and the load-balancing losses of its blocks, over every micro-batch of the step.
  const GptLoss& loss() const { return loss_; }
  // The slots the step took: the most micro-batches this stage held at once.
  int slots_used() const { return static_cast<int>(slot_taken_.size()); }
  // A mixture of experts: the (token, choice) rows each expert of this stage's blocks got, summed
  // over the micro-batches (block after block, E values each). Empty for the dense model.
  const std::vector<double>& expert_rows() const { return expert_rows_; }
  // Seconds spent in the forwards and backwards (the rest of a schedule's time, waiting for the
  // stages beside it, is the stage's share of the pipeline's bubble).
  double busy_seconds() const { return busy_seconds_; }
  // The model's activations, and its first block's, at their peak.
  const ActivationPeak& activation_peak() const { return activation_peak_; }

 private:
  const GptBatch& micro_batch(int mb) const;
  int take_slot(int mb);
  int give_back_slot(int mb);
  void add_expert_rows(int slot);

  Gpt<T>& model_;
  const std::vector<GptBatch>& micro_batches_;
  InFlight& in_flight_;
  TimelineRecorder* recorder_;
  std::vector<int> slot_of_;      // each micro-batch's slot while in flight, else -1
  std::vector<bool> slot_taken_;  // by a micro-batch in flight, for each slot the step took
  GptLoss loss_;
  ActivationPeak activation_peak_;
  double busy_seconds_ = 0;
  std::vector<double> expert_rows_;
  std::string chunk_suffix_;  // "" or ".1": the trace's names
};

}  // namespace dtk::gpt
