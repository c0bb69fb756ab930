// A bf16 run's model states (Part 16.2 in the trainer, gpt_train --dtype bf16): every parameter
// and every gradient held as bf16, 2 bytes each, beside the optimizer's fp32 master copy and
// Adam's two moments (the students' MixedPrecisionAdam, 12 bytes a parameter): Part 9.1's
// 2 + 2 + 12 bytes. The model computes in float:
//   - a piece of the model (the embedding, a block, the head) is made float just before it runs,
//     forward or backward, and freed after it (GptCommunication's piece_starts and piece_ends,
//     the hooks ZeRO-3 gathers through);
//   - as a piece's backward ends, its float gradients are added into the bf16 gradients, rounded
//     (a step of m micro-batches rounds m times, as an accelerator accumulating in bf16 does);
//   - the step sums each gradient group's bf16 gradients over the group's ranks in float (the
//     groups of model_states.hpp), rounds the sum to bf16 and hands it to the group's
//     MixedPrecisionAdam, which writes the new bf16 parameters.
// ZeRO stages 1 and 2 (Part 9 again, in bf16): each group's gradients are reduce-scattered in
// float instead, and each rank keeps the optimizer (at stage 2 the summed gradients too) of its
// shard only, steps it, and gathers every rank's new bf16 shard back. The activations are the
// model's (bf16_store.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "dtk/communicator.hpp"
#include "dtk/gpt/config.hpp"  // Bf16Rounding
#include "dtk/gpt/model_states.hpp"
#include "dtk/gpt/parameter.hpp"

namespace dtk::gpt {

struct GptGrid;

// Part 16.2's MixedPrecisionAdam as the model states call it (bound by gpt_train): one optimizer
// per gradient group, made with the group's bf16 parameters; step writes their new values.
using Bf16Vector = std::vector<std::uint16_t>;
using MixedPrecisionStep =
    std::function<void(Bf16Vector& params, const Bf16Vector& grads, float lr)>;
using MakeMixedPrecisionAdam = std::function<MixedPrecisionStep(const Bf16Vector& params)>;

template <class T>
class MixedPrecisionStates {
 public:
  // The pieces of this rank's chunks (Gpt::pieces(), chunk after chunk), their float values as
  // the model made them: rounded to bf16, then the floats freed. `round` is 16.1's to_bf16;
  // ZeRO stages 1 and 2 need `zero`'s functions.
  MixedPrecisionStates(std::vector<std::vector<Parameter<T>*>> pieces, GptGrid& g,
                       Bf16Rounding round, const MakeMixedPrecisionAdam& make_adam,
                       int zero_stage = 0, ZeroCollectives<T> zero = {});
  MixedPrecisionStates(const MixedPrecisionStates&) = delete;
  MixedPrecisionStates& operator=(const MixedPrecisionStates&) = delete;

  // GptCommunication's piece_starts and piece_ends.
  void piece_starts(const std::vector<Parameter<T>*>& piece, bool backward);
  void piece_ends(const std::vector<Parameter<T>*>& piece, bool backward);

  void zero_grad();  // before a step's backwards
  // After the step's last backward: the gradients summed (unless `summed`: Part 15's buckets
  // have summed them, through gradient and set_summed_gradient) and the optimizer's step.
  // Returns the seconds spent summing.
  double step(double lr, bool summed = false);

  // Part 15's buckets on a bf16 run (--bucket_mb): p's bf16 gradient as its backward left it,
  // widened (what a bucket sums), and its sum over the group given back, rounded to bf16.
  xt::xtensor<double, 1> gradient(const Parameter<T>* p) const;
  void set_summed_gradient(const Parameter<T>* p, const xt::xtensor<double, 1>& sum);

  // Every piece made float (to read the whole model: weights_l2), and freed again.
  void unpack_all();
  void release_all();

  // parameters and gradients: 2 bytes a value (at stage 2, the gradients' shard); optimizer: the
  // master copy and Adam's moments, 12 (at stages 1 and 2, of the shard); transient: the largest
  // piece in float (values and gradients), and the largest group's float buffers of the sum
  // (and at stage 2 its whole bf16 gradients, from the backward to the sum).
  typename ModelStates<T>::Bytes bytes() const;

 private:
  struct Group {
    Communicator* comm = nullptr;  // nullptr: nobody else holds these tensors
    Bf16Vector values, grads;      // whole: at stage 2 grads lives from zero_grad to the sum
    std::size_t numel = 0;
    std::size_t shard_begin = 0, shard_size = 0;  // Part 9.2's; the whole group unsharded
    MixedPrecisionStep adam;                      // of the shard
  };
  bool sharded(const Group& group) const { return zero_stage_ > 0 && group.comm; }
  // The group's gradients summed (its shard, sharded; unless `summed`), rounded, into the
  // optimizer's step.
  void sum_and_step(Group& group, float lr, bool summed);
  struct Place {
    int group;
    std::size_t offset;  // in the group's vectors
    std::size_t rows, cols;
  };
  int piece_index(const std::vector<Parameter<T>*>& piece) const;

  std::vector<std::vector<Parameter<T>*>> pieces_;
  std::map<const Parameter<T>*, int> piece_of_;  // its first parameter's
  std::map<const Parameter<T>*, Place> place_;
  std::vector<Group> groups_;
  Bf16Rounding round_;
  int zero_stage_;
  ZeroCollectives<T> zero_;
  std::size_t largest_piece_ = 0;  // values
};

}  // namespace dtk::gpt
