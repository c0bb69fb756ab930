// The optimizer step of one pipeline stage's layers, data parallel over dp_comm, at ZeRO stage 0
// to 3 (assignment 2, Part 9). This is where the trainer calls your Part 7 and Part 9 functions:
//
//   stage 0  my_allreduce (Part 7) sums each layer's gradient; every rank updates all of it
//   stage 1  zero1_grad_shard; each rank updates its shard of the parameters, with the
//            optimizer states of that shard only; zero_gather_params gives every rank all of them
//   stage 2  zero2_grad_shard instead (the full gradient is freed once it is reduced), the rest
//            as stage 1
//   stage 3  as stage 2, but a rank keeps only its shard of the parameters: acquire(j) gathers
//            layer j with zero_gather_params right before the stage computes with it, release(j)
//            frees it again (MlpStage calls both, through ParameterGate)
//
// Stage 0 calls nothing of Part 9, so a pipeline trains before Part 9 is written.
// Each layer is sharded on its own: layer j, W then b, is a flat vector of numel_j values
// (flat_parameters(layer)) cut into dp_size shards of s_j = ceil(numel_j / dp_size) values, so
// that ZeRO-3 can gather one layer at a time.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "dtk/communicator.hpp"
#include "dtk/mlp/mlp_stage.hpp"

namespace dtk {

enum class OptimizerKind { Sgd, Adam };

// The bytes of model state one rank keeps from one step to the next: ZeRO's three terms.
struct ModelStateBytes {
  std::size_t parameters = 0, gradients = 0, optimizer = 0;
  std::size_t total() const { return parameters + gradients + optimizer; }
};

class ShardedOptimizer : public ParameterGate {
 public:
  // Collective over dp_comm (every rank with the same layers). `layers` must outlive this object,
  // which becomes their gate. At stage 3 each rank keeps its shards and frees W and b at once.
  // SGD keeps no state; Adam keeps m and v (adam.hpp) for the values it updates.
  ShardedOptimizer(MlpStageLayers& layers, int zero_stage, OptimizerKind kind,
                   const Communicator& dp_comm);
  ~ShardedOptimizer() override;
  ShardedOptimizer(const ShardedOptimizer&) = delete;
  ShardedOptimizer& operator=(const ShardedOptimizer&) = delete;

  // Before a step's first forward: zeroes the gradient accumulators (stages 2 and 3 allocate
  // them again: they live only inside a step).
  void start_step();
  // After the step's last backward: sums the gradients over dp_comm and updates the parameters
  // with learning rate lr.
  void step(float lr);

  void acquire(std::size_t j) override;
  void release(std::size_t j) override;

  // The parameters of the layers, this rank's shards or not: what its data-parallel group
  // shards.
  std::size_t parameter_count() const;
  // What the rank holds between steps, measured from the tensors it keeps now.
  ModelStateBytes state_bytes() const;
  // The most bytes held at once by what lives only inside a step: gathered layers (stage 3), the
  // full gradients of stages 2 and 3, and the flat vectors of the collectives.
  std::size_t peak_transient_bytes() const { return peak_transient_; }

 private:
  struct LayerShard;
  class Update;

  void reduce_and_update(std::size_t j, float lr);
  void allocate_gradients(DenseLayer& layer, std::size_t j) const;
  // A buffer of `values` floats that lives only inside a step is allocated, or freed.
  void hold(std::size_t values);
  void drop(std::size_t values);

  MlpStageLayers& layers_;
  int stage_;
  Communicator dp_comm_;
  std::vector<LayerShard> shards_;
  std::size_t live_transient_ = 0, peak_transient_ = 0;
};

}  // namespace dtk
