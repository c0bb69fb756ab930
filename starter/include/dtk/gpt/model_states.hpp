// A GPT rank's model states (Part 9.1: parameters, gradients, optimizer states) from one step to
// the next: the gradients summed over the ranks that hold other tokens of the same tensors, and
// the optimizer's step. At ZeRO stage 0 every rank keeps all of them; at stage 1 each rank keeps
// the optimizer's states of its shard only and updates that shard; at stage 2 it keeps only its
// shard of the summed gradients too (Part 9, Rajbhandari et al. 2020). Stage 3, the parameters
// sharded too, is the model's own business (Part 16.3): the parameters are gathered block by block
// while the model runs.
//
// Who sums a gradient (parameter.hpp's Sharing): an expert's replicas (expert_replica_comm);
// under sequence parallelism the whole stage, for a replicated tensor (stage_comm); a replicated
// key/value head's K and V columns over every rank holding them (key_value_replica_comm); else
// the dp · cp ranks of the same tp_idx (replica_comm). The flat vectors hold the parameters grouped
// so, in the model's order inside each group: each group is one contiguous segment, summed over
// its communicator, and at stages 1 and 2 cut into Part 9.2's shards over it (rank r of p holds
// elements [r · s, (r + 1) · s) of the segment, s = ceil(n / p)). A segment whose communicator
// has one rank is its own sum and its own shard.
//
// The communication of stages 1 and 2 is the students' Part 9 (zero1_grad_shard,
// zero2_grad_shard, zero_gather_params), bound by gpt_train.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "dtk/communicator.hpp"
#include "dtk/gpt/parameter.hpp"
#include "dtk/training/adam.hpp"

namespace dtk::gpt {

struct GptGrid;

// The group of ranks that sums a gradient, by the parameter's Sharing: 0 an expert's replicas,
// 1 the whole stage (a replicated tensor under sequence parallelism), 2 the dp · cp ranks of
// its tensor-parallel slice, 3 the ranks holding a replicated key/value head; and the
// communicators of the four, in that order.
inline int gradient_group(Sharing sharing, bool sequence_parallel) {
  if (sharing == Sharing::Expert) return 0;
  if (sharing == Sharing::KeyValueReplicas) return 3;
  return sharing == Sharing::Replicated && sequence_parallel ? 1 : 2;
}
inline constexpr int kGradientGroups = 4;
std::array<Communicator*, kGradientGroups> gradient_groups(GptGrid& g);

// Part 9.3-9.5's functions, as the model states call them (dtk/zero.hpp has their contracts).
template <class T>
struct ZeroCollectives {
  // The summed gradient's shard of this rank: zero1_grad_shard (stage 1) or zero2_grad_shard
  // (stage 2).
  std::function<xt::xtensor<T, 1>(const xt::xtensor<T, 1>& flat_grad, Communicator& comm)>
      grad_shard;
  // zero_gather_params: every rank's shard, the whole segment back.
  std::function<xt::xtensor<T, 1>(const xt::xtensor<T, 1>& shard, std::size_t numel,
                                  Communicator& comm)>
      gather_params;
};

template <class T>
class ModelStates {
 public:
  enum class Update { Sgd, Adam };

  // What a rank holds, in bytes, as ZeRO counts it.
  struct Bytes {
    std::size_t parameters = 0;  // every parameter's value
    std::size_t gradients = 0;   // the gradients the update reads: all, or at stage 2 a shard
    std::size_t optimizer = 0;   // Adam's m and v, of all values or of this rank's shards
    // Inside a step only: the flat vectors of the sum and of the update, and at stage 2 the
    // whole gradients the backward writes before they are reduce-scattered.
    std::size_t transient = 0;
  };

  // The states of `params` (all of this rank's, every chunk's) on grid `g`, which must outlive
  // this object. Stages 1 and 2 need `zero`'s functions; stage 0 calls none.
  ModelStates(std::vector<Parameter<T>*> params, GptGrid& g, Update update, int zero_stage,
              ZeroCollectives<T> zero = {});
  ModelStates(const ModelStates&) = delete;
  ModelStates& operator=(const ModelStates&) = delete;

  // In the flat vectors' order (grouped by the communicator that sums them).
  const std::vector<Parameter<T>*>& parameters() const { return params_; }

  // Before a step's backwards: every gradient zero (at stage 2 allocated again: it lives only
  // inside a step).
  void zero_grad();
  // After the step's last backward: the gradients summed over their groups (unless `summed`:
  // Part 15's buckets have summed them already, into the parameters' grad), then the update
  // with learning rate lr, and every parameter's new value. Returns the seconds spent summing.
  double step(double lr, bool summed = false);

  Bytes bytes() const;

 private:
  struct Segment {
    Communicator* comm;  // nullptr: nobody else holds these tensors
    std::size_t begin, size;
    std::size_t shard_begin, shard_size;  // this rank's shard (in the segment), s values
  };
  // Segment i's shard updated, and every rank's shard gathered back into the flat values.
  void update(std::size_t i, xt::xtensor<T, 1>& grad_shard, double lr);

  std::vector<Parameter<T>*> params_;
  std::vector<Segment> segments_;
  Update update_kind_;
  int stage_;
  ZeroCollectives<T> zero_;
  xt::xtensor<T, 1> flat_grads_, flat_values_;  // whole: numel values each
  std::vector<std::unique_ptr<Adam<T>>> adam_;  // one per segment, for its shard (or all of it)
  std::size_t gradient_shard_values_ = 0;       // stage 2: the shards the update reads
};

}  // namespace dtk::gpt
