#include "dtk/gpt/mixed_precision.hpp"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include <mpi.h>

#include "dtk/gpt/bf16_store.hpp"
#include "dtk/gpt/trainer.hpp"

namespace dtk::gpt {

namespace {

// `count` values rounded to bf16 into `bits` (a double model's narrowed to float first).
template <class T>
void round_into(const Bf16Rounding& round, const T* values, std::size_t count,
                std::uint16_t* bits) {
  if constexpr (std::is_same_v<T, float>) {
    round(values, count, bits);
  } else {
    const std::vector<float> narrowed(values, values + count);
    round(narrowed.data(), count, bits);
  }
}

}  // namespace

template <class T>
MixedPrecisionStates<T>::MixedPrecisionStates(std::vector<std::vector<Parameter<T>*>> pieces,
                                              GptGrid& g, Bf16Rounding round,
                                              const MakeMixedPrecisionAdam& make_adam)
    : pieces_(std::move(pieces)), round_(std::move(round)) {
  if (!round_ || !make_adam) {
    throw std::invalid_argument(
        "MixedPrecisionStates: a bf16 run needs Part 16's to_bf16 and MixedPrecisionAdam");
  }
  const std::array<Communicator*, 3> comms = gradient_groups(g);
  groups_.resize(comms.size());
  for (std::size_t c = 0; c < comms.size(); ++c) {
    groups_[c].comm = comms[c]->Get_size() > 1 ? comms[c] : nullptr;
  }
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    piece_of_[pieces_[i].front()] = static_cast<int>(i);
    std::size_t piece_values = 0;
    for (Parameter<T>* p : pieces_[i]) {
      const int c = gradient_group(p->sharing, g.sequence_parallel);
      Group& group = groups_[c];
      place_[p] = {c, group.values.size(), p->value.shape(0), p->value.shape(1)};
      group.values.resize(group.values.size() + p->value.size());
      round_into(round_, p->value.data(), p->value.size(), group.values.data() + place_[p].offset);
      piece_values += p->value.size();
      p->value = p->grad = Matrix<T>();
    }
    largest_piece_ = std::max(largest_piece_, piece_values);
  }
  for (Group& group : groups_) {
    group.grads.assign(group.values.size(), 0);
    if (!group.values.empty()) group.adam = make_adam(group.values);
  }
}

template <class T>
int MixedPrecisionStates<T>::piece_index(const std::vector<Parameter<T>*>& piece) const {
  const auto found = piece_of_.find(piece.front());
  if (found == piece_of_.end()) {
    throw std::logic_error("MixedPrecisionStates: a piece it never had");
  }
  return found->second;
}

template <class T>
void MixedPrecisionStates<T>::piece_starts(const std::vector<Parameter<T>*>& piece, bool backward) {
  for (Parameter<T>* p : pieces_[piece_index(piece)]) {
    const Place& at = place_.at(p);
    const std::uint16_t* bits = groups_[at.group].values.data() + at.offset;
    p->value = Matrix<T>::from_shape({at.rows, at.cols});
    std::transform(bits, bits + p->value.size(), p->value.begin(),
                   [](std::uint16_t b) { return T(bf16_value(b)); });
    if (backward) p->grad = xt::zeros<T>({at.rows, at.cols});
  }
}

template <class T>
void MixedPrecisionStates<T>::piece_ends(const std::vector<Parameter<T>*>& piece, bool backward) {
  for (Parameter<T>* p : pieces_[piece_index(piece)]) {
    if (backward) {  // the bf16 gradient += this backward's, rounded
      const Place& at = place_.at(p);
      std::uint16_t* bits = groups_[at.group].grads.data() + at.offset;
      for (std::size_t i = 0; i < p->grad.size(); ++i) p->grad.data()[i] += bf16_value(bits[i]);
      round_into(round_, p->grad.data(), p->grad.size(), bits);
    }
    p->value = p->grad = Matrix<T>();
  }
}

template <class T>
void MixedPrecisionStates<T>::zero_grad() {
  for (Group& group : groups_) std::fill(group.grads.begin(), group.grads.end(), 0);
}

template <class T>
double MixedPrecisionStates<T>::step(double lr) {
  double seconds = 0;
  for (Group& group : groups_) {
    if (group.values.empty()) continue;
    if (group.comm) {  // summed in float, rounded once
      const double begin = MPI_Wtime();
      xt::xtensor<float, 1> sum = xt::xtensor<float, 1>::from_shape({group.grads.size()});
      std::transform(group.grads.begin(), group.grads.end(), sum.begin(), bf16_value);
      group.comm->Allreduce(sum, sum);
      round_(sum.data(), sum.size(), group.grads.data());
      seconds += MPI_Wtime() - begin;
    }
    group.adam(group.values, group.grads, float(lr));
  }
  return seconds;
}

template <class T>
void MixedPrecisionStates<T>::unpack_all() {
  for (const auto& piece : pieces_) piece_starts(piece, false);
}

template <class T>
void MixedPrecisionStates<T>::release_all() {
  for (const auto& piece : pieces_) piece_ends(piece, false);
}

template <class T>
typename ModelStates<T>::Bytes MixedPrecisionStates<T>::bytes() const {
  typename ModelStates<T>::Bytes b;
  std::size_t largest_group = 0;
  for (const Group& group : groups_) {
    b.parameters += group.values.size() * sizeof(std::uint16_t);
    b.gradients += group.grads.size() * sizeof(std::uint16_t);
    // MixedPrecisionAdam's master copy and its Adam<float>'s two moments.
    b.optimizer += 3 * group.values.size() * sizeof(float);
    if (group.comm) largest_group = std::max(largest_group, group.grads.size());
  }
  b.transient = 2 * largest_piece_ * sizeof(T) + largest_group * sizeof(float);
  return b;
}

template class MixedPrecisionStates<float>;
template class MixedPrecisionStates<double>;

}  // namespace dtk::gpt
