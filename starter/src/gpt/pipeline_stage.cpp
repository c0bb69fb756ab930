#include "dtk/gpt/pipeline_stage.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <mpi.h>

namespace dtk::gpt {

template <class T>
GptPipelineStage<T>::GptPipelineStage(Gpt<T>& model, const std::vector<GptBatch>& micro_batches,
                                      InFlight& in_flight, TimelineRecorder* recorder, int chunk)
    : model_(model),
      micro_batches_(micro_batches),
      in_flight_(in_flight),
      recorder_(recorder),
      slot_of_(micro_batches.size(), -1),
      chunk_suffix_(chunk < 0 ? "" : "." + std::to_string(chunk)) {}

template <class T>
bool GptPipelineStage<T>::is_first() const {
  return model_.layout().holds_embedding();
}

template <class T>
bool GptPipelineStage<T>::is_last() const {
  return model_.layout().holds_head(model_.config());
}

template <class T>
const GptBatch& GptPipelineStage<T>::micro_batch(int mb) const {
  if (mb < 0 || std::size_t(mb) >= micro_batches_.size()) {
    throw std::invalid_argument("GptPipelineStage: micro-batch " + std::to_string(mb) +
                                " of a step of " + std::to_string(micro_batches_.size()));
  }
  return micro_batches_[mb];
}

// B_mb sequences of the positions this rank's residual stream holds, h columns.
template <class T>
std::array<std::size_t, 2> GptPipelineStage<T>::input_shape(int mb) const {
  return {model_.stream_rows(micro_batch(mb)), std::size_t(model_.config().hidden)};
}

template <class T>
std::array<std::size_t, 2> GptPipelineStage<T>::output_shape(int mb) const {
  return input_shape(mb);  // a block keeps the stream's shape
}

template <class T>
xt::xtensor<T, 2> GptPipelineStage<T>::input_microbatch(int mb) const {
  micro_batch(mb);
  return xt::xtensor<T, 2>::from_shape({0, 0});  // the first stage embeds the tokens itself
}

template <class T>
int GptPipelineStage<T>::take_slot(int mb) {
  if (slot_of_[mb] != -1) {
    throw std::logic_error("GptPipelineStage: a second forward of micro-batch " +
                           std::to_string(mb) + " before its backward");
  }
  const auto free = std::find(slot_taken_.begin(), slot_taken_.end(), false);
  const int slot = static_cast<int>(free - slot_taken_.begin());
  if (free == slot_taken_.end()) slot_taken_.push_back(true);
  slot_taken_[slot] = true;
  slot_of_[mb] = slot;
  in_flight_.peak = std::max(in_flight_.peak, ++in_flight_.now);
  return slot;
}

template <class T>
int GptPipelineStage<T>::give_back_slot(int mb) {
  const int slot = slot_of_[mb];
  if (slot == -1) {
    throw std::logic_error("GptPipelineStage: a backward of micro-batch " + std::to_string(mb) +
                           " without its forward");
  }
  slot_taken_[slot] = false;
  slot_of_[mb] = -1;
  --in_flight_.now;
  return slot;
}

template <class T>
xt::xtensor<T, 2> GptPipelineStage<T>::forward(int mb, const xt::xtensor<T, 2>& input) {
  const GptBatch& batch = micro_batch(mb);
  const double begin = MPI_Wtime();
  const int slot = take_slot(mb);
  const GptLoss loss = model_.forward(batch, input, slot);
  add_expert_rows(slot);
  activation_peak_.note(model_);  // every slot the step took is full after some forward
  loss_.cross_entropy_sum += loss.cross_entropy_sum;
  loss_.scored += loss.scored;
  loss_.aux_loss += loss.aux_loss;
  xt::xtensor<T, 2> output =
      is_last() ? xt::xtensor<T, 2>::from_shape({0, 0}) : xt::xtensor<T, 2>(model_.stream_output());
  const double end = MPI_Wtime();
  busy_seconds_ += end - begin;
  if (recorder_) {
    recorder_->add(WorkKind::Forward, mb, "F" + std::to_string(mb) + chunk_suffix_, begin, end);
  }
  return output;
}

template <class T>
void GptPipelineStage<T>::add_expert_rows(int slot) {
  const std::vector<double> rows = model_.expert_rows(slot);
  expert_rows_.resize(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) expert_rows_[i] += rows[i];
}

template <class T>
xt::xtensor<T, 2> GptPipelineStage<T>::loss_grad(int mb) const {
  micro_batch(mb);
  return xt::xtensor<T, 2>::from_shape({0, 0});  // the last stage starts from its own loss
}

template <class T>
xt::xtensor<T, 2> GptPipelineStage<T>::backward(int mb, const xt::xtensor<T, 2>& output_grad) {
  micro_batch(mb);
  const double begin = MPI_Wtime();
  model_.backward(output_grad, give_back_slot(mb));
  activation_peak_.note(model_);  // what recomputation made again
  xt::xtensor<T, 2> input_grad = is_first() ? xt::xtensor<T, 2>::from_shape({0, 0})
                                            : xt::xtensor<T, 2>(model_.stream_input_grad());
  const double end = MPI_Wtime();
  busy_seconds_ += end - begin;
  if (recorder_) {
    recorder_->add(WorkKind::Backward, mb, "B" + std::to_string(mb) + chunk_suffix_, begin, end);
  }
  return input_grad;
}

template class GptPipelineStage<float>;
template class GptPipelineStage<double>;

}  // namespace dtk::gpt
