// The students' functions of Part 9 (assignment 2) bound to gpt_train: --zero 1 and 2 sum each
// group's gradients with 9.3's zero1_grad_shard (an all-reduce, then the shard kept) or 9.4's
// zero2_grad_shard (one reduce-scatter), and gather the updated shards back with 9.5's
// zero_gather_params (dtk/gpt/model_states.hpp says which ranks and which shards). Built where
// the tree has Part 9 (programs/gpt_train.cmake).
#include <dtk/zero.hpp>

#include "gpt_train.hpp"

namespace dtk::gpt_train {

template <class T>
void bind_zero(gpt::GptParallelism<T>& p) {
  p.zero1_grad_shard = [](const xt::xtensor<T, 1>& flat_grad, Communicator& comm) {
    return zero1_grad_shard(flat_grad, comm);
  };
  p.zero2_grad_shard = [](const xt::xtensor<T, 1>& flat_grad, Communicator& comm) {
    return zero2_grad_shard(flat_grad, comm);
  };
  p.zero_gather_params = [](const xt::xtensor<T, 1>& shard, std::size_t numel, Communicator& comm) {
    return zero_gather_params(shard, numel, comm);
  };
}

template void bind_zero(gpt::GptParallelism<float>&);
template void bind_zero(gpt::GptParallelism<double>&);

}  // namespace dtk::gpt_train
