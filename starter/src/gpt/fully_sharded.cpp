#include "dtk/gpt/fully_sharded.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "dtk/gpt/bf16_store.hpp"
#include "dtk/gpt/bytes.hpp"
#include "dtk/gpt/trainer.hpp"

namespace dtk::gpt {

template <class T>
FullyShardedStates<T>::FullyShardedStates(std::vector<std::vector<Parameter<T>*>> pieces,
                                          GptGrid& g, typename ModelStates<T>::Update update,
                                          MakeShardedBlocks<T> make, Bf16Rounding bf16)
    : pieces_(std::move(pieces)), update_(update), make_(std::move(make)), bf16_(std::move(bf16)) {
  if (!make_) {
    throw std::invalid_argument("FullyShardedStates: ZeRO-3 needs Part 16.3's FullyShardedBlocks");
  }
  const auto comms = gradient_groups(g);
  groups_.resize(comms.size());
  for (std::size_t c = 0; c < comms.size(); ++c) groups_[c].comm = comms[c];
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    piece_of_[pieces_[i].front()] = static_cast<int>(i);
    std::size_t piece_values = 0;
    for (Group& group : groups_) group.block_of_piece.push_back(-1);
    for (Parameter<T>* p : pieces_[i]) {
      round_in_place(p->value, bf16_);  // bf16: the model, and its master copy, start rounded
      shape_[p] = {p->value.shape(0), p->value.shape(1)};
      piece_values += p->value.size();
      Group& group = groups_[gradient_group(p->sharing, g.sequence_parallel)];
      if (group.block_of_piece[i] < 0) {
        group.block_of_piece[i] = static_cast<int>(group.parameters.size());
        group.parameters.emplace_back();
        group.numel.push_back(0);
      }
      group.parameters.back().push_back(p);
      group.numel.back() += p->value.size();
    }
    largest_piece_ = std::max(largest_piece_, piece_values);
  }
  // This rank's shard of each block (Part 9.2's: s = ceil(n / p) values from r · s, zero padding),
  // then every value freed.
  for (Group& group : groups_) {
    const std::size_t ranks = group.comm->Get_size(), rank = group.comm->Get_rank();
    for (std::size_t b = 0; b < group.numel.size(); ++b) {
      const std::size_t s = (group.numel[b] + ranks - 1) / ranks;
      xt::xtensor<T, 1> block = xt::zeros<T>({ranks * s});  // padded to p shards
      gather_flat(group.parameters[b], &Parameter<T>::value, block.data());
      group.shards.push_back(xt::xtensor<T, 1>::from_shape({s}));
      std::copy_n(block.data() + rank * s, s, group.shards.back().begin());
      if (update_ == ModelStates<T>::Update::Adam)
        group.adam.push_back(std::make_unique<Adam<T>>(s));
    }
  }
  for (const auto& piece : pieces_) {
    for (Parameter<T>* p : piece) p->value = p->grad = Matrix<T>();
  }
  make_blocks();
}

template <class T>
void FullyShardedStates<T>::make_blocks() {
  for (Group& group : groups_) {
    if (group.numel.empty()) continue;
    std::vector<xt::xtensor<T, 1>> shards = group.shards;  // in bf16, the master's rounded
    for (xt::xtensor<T, 1>& shard : shards) round_in_place(shard, bf16_);
    group.blocks = make_(std::move(shards), group.numel, *group.comm);
  }
}

template <class T>
int FullyShardedStates<T>::piece_index(const std::vector<Parameter<T>*>& piece) const {
  const auto found = piece_of_.find(piece.front());
  if (found == piece_of_.end()) throw std::logic_error("FullyShardedStates: a piece it never had");
  return found->second;
}

template <class T>
void FullyShardedStates<T>::piece_starts(const std::vector<Parameter<T>*>& piece, bool backward) {
  const int i = piece_index(piece);
  for (Group& group : groups_) {  // every rank in the same order of groups
    const int b = group.block_of_piece[i];
    if (b < 0) continue;
    for (Parameter<T>* p : group.parameters[b]) {
      const auto [rows, cols] = shape_.at(p);
      p->value = Matrix<T>::from_shape({rows, cols});
      if (backward) p->grad = xt::zeros<T>({rows, cols});
    }
    scatter_flat(group.blocks.gather(b).data(), &Parameter<T>::value, group.parameters[b]);
    group.blocks.release(b);  // the model's tensors hold the block now
    held_bytes_ += group.numel[b] * sizeof(T);
  }
  peak_held_bytes_ = std::max(peak_held_bytes_, held_bytes_);
}

template <class T>
void FullyShardedStates<T>::piece_ends(const std::vector<Parameter<T>*>& piece, bool backward) {
  const int i = piece_index(piece);
  for (Group& group : groups_) {
    const int b = group.block_of_piece[i];
    if (b < 0) continue;
    if (backward) {
      for (Parameter<T>* p : group.parameters[b]) round_in_place(p->grad, bf16_);
      xt::xtensor<T, 1> gradient = xt::xtensor<T, 1>::from_shape({group.numel[b]});
      gather_flat(group.parameters[b], &Parameter<T>::grad, gradient.data());
      group.blocks.reduce_gradient(b, gradient);
    }
    for (Parameter<T>* p : group.parameters[b]) p->value = p->grad = Matrix<T>();
    held_bytes_ -= group.numel[b] * sizeof(T);
  }
}

template <class T>
void FullyShardedStates<T>::step(double lr) {
  for (Group& group : groups_) {
    for (std::size_t b = 0; b < group.shards.size(); ++b) {
      const xt::xtensor<T, 1>& grad = group.blocks.gradient_shard(static_cast<int>(b));
      if (update_ == ModelStates<T>::Update::Adam) {
        group.adam[b]->step(group.shards[b], 0, grad, T(lr));
      } else {
        group.shards[b] -= T(lr) * grad;
      }
    }
  }
  make_blocks();  // with the new shards, and gradient shards of zero
}

template <class T>
void FullyShardedStates<T>::gather_all() {
  for (const auto& piece : pieces_) piece_starts(piece, false);
}

template <class T>
void FullyShardedStates<T>::release_all() {
  for (const auto& piece : pieces_) piece_ends(piece, false);
}

template <class T>
typename ModelStates<T>::Bytes FullyShardedStates<T>::bytes() const {
  typename ModelStates<T>::Bytes b;
  std::size_t shards = 0;
  for (const Group& group : groups_) {
    for (const auto& shard : group.shards) shards += bytes_of(shard);
    for (const auto& adam : group.adam) b.optimizer += adam->state_bytes();
  }
  b.parameters = shards + peak_held_bytes_;
  b.gradients = shards;
  b.optimizer += shards;
  b.transient = 3 * largest_piece_ * sizeof(T);
  return b;
}

template class FullyShardedStates<float>;
template class FullyShardedStates<double>;

}  // namespace dtk::gpt
