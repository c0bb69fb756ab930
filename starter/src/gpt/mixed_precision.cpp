#include "dtk/gpt/mixed_precision.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <mpi.h>

#include "dtk/gpt/bf16_store.hpp"
#include "dtk/gpt/trainer.hpp"

namespace dtk::gpt {

namespace {

// Values [begin, begin + size) of `whole`, zeros past its end (Part 9.2's padding).
Bf16Vector shard_of(const Bf16Vector& whole, std::size_t begin, std::size_t size) {
  Bf16Vector shard(size, 0);
  const std::size_t end = std::min(whole.size(), begin + size);
  if (begin < end) std::copy(whole.begin() + begin, whole.begin() + end, shard.begin());
  return shard;
}

// `count` bf16 bits as values of T, into `values`.
template <class T>
void widen_into(const std::uint16_t* bits, std::size_t count, T* values) {
  std::transform(bits, bits + count, values, [](std::uint16_t b) { return T(bf16_value(b)); });
}

template <class T>
xt::xtensor<T, 1> widened(const std::uint16_t* bits, std::size_t count) {
  xt::xtensor<T, 1> values = xt::xtensor<T, 1>::from_shape({count});
  widen_into(bits, count, values.data());
  return values;
}

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
                                              const MakeMixedPrecisionAdam& make_adam,
                                              int zero_stage, ZeroCollectives<T> zero)
    : pieces_(std::move(pieces)),
      round_(std::move(round)),
      zero_stage_(zero_stage),
      zero_(std::move(zero)) {
  if (!round_ || !make_adam) {
    throw std::invalid_argument(
        "MixedPrecisionStates: a bf16 run needs Part 16's to_bf16 and MixedPrecisionAdam");
  }
  if (zero_stage_ < 0 || zero_stage_ > 2 ||
      (zero_stage_ > 0 && (!zero_.grad_shard || !zero_.gather_params))) {
    throw std::invalid_argument("MixedPrecisionStates: ZeRO stage " + std::to_string(zero_stage_) +
                                " (0, or 1 and 2 with Part 9's functions)");
  }
  const auto comms = gradient_groups(g);
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
    group.numel = group.values.size();
    group.grads.assign(group.numel, 0);
    if (group.numel == 0) continue;
    // Part 9.2's shard: s = ceil(n / p) values from r · s (zeros past n).
    const std::size_t ranks = sharded(group) ? group.comm->Get_size() : 1,
                      rank = sharded(group) ? group.comm->Get_rank() : 0;
    group.shard_size = (group.numel + ranks - 1) / ranks;
    group.shard_begin = rank * group.shard_size;
    group.adam = make_adam(shard_of(group.values, group.shard_begin, group.shard_size));
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
    p->value = Matrix<T>::from_shape({at.rows, at.cols});
    widen_into(groups_[at.group].values.data() + at.offset, p->value.size(), p->value.data());
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
  for (Group& group : groups_) group.grads.assign(group.numel, 0);  // stage 2 freed them
}

template <class T>
xt::xtensor<double, 1> MixedPrecisionStates<T>::gradient(const Parameter<T>* p) const {
  const Place& at = place_.at(p);
  return widened<double>(groups_[at.group].grads.data() + at.offset, at.rows * at.cols);
}

template <class T>
void MixedPrecisionStates<T>::set_summed_gradient(const Parameter<T>* p,
                                                  const xt::xtensor<double, 1>& sum) {
  const Place& at = place_.at(p);
  if (sum.size() != at.rows * at.cols) {
    throw std::logic_error("MixedPrecisionStates: a summed gradient of " +
                           std::to_string(sum.size()) + " values for a tensor of " +
                           std::to_string(at.rows * at.cols));
  }
  round_into(round_, sum.data(), sum.size(), groups_[at.group].grads.data() + at.offset);
}

template <class T>
double MixedPrecisionStates<T>::step(double lr, bool summed) {
  double seconds = 0;
  for (Group& group : groups_) {
    if (group.numel == 0) continue;
    const double begin = MPI_Wtime();
    sum_and_step(group, float(lr), summed);
    seconds += MPI_Wtime() - begin;
  }
  return seconds;
}

template <class T>
void MixedPrecisionStates<T>::sum_and_step(Group& group, float lr, bool summed) {
  if (!sharded(group)) {  // the whole group, summed in place in float and rounded once
    if (group.comm && !summed) {
      xt::xtensor<T, 1> sum = widened<T>(group.grads.data(), group.numel);
      group.comm->Allreduce(sum, sum);
      round_into(round_, sum.data(), sum.size(), group.grads.data());
    }
    group.adam(group.values, group.grads, lr);
    return;
  }
  const xt::xtensor<T, 1> sum =
      zero_.grad_shard(widened<T>(group.grads.data(), group.numel), *group.comm);
  if (sum.size() != group.shard_size) {
    throw std::runtime_error("ZeRO: the gradient's shard holds " + std::to_string(sum.size()) +
                             " values, expected " + std::to_string(group.shard_size) +
                             " (ceil(numel / p))");
  }
  Bf16Vector grads(group.shard_size);
  round_into(round_, sum.data(), sum.size(), grads.data());
  Bf16Vector values = shard_of(group.values, group.shard_begin, group.shard_size);
  group.adam(values, grads, lr);
  // Every rank's new shard, gathered in float: the same bf16 values back (exactly).
  const xt::xtensor<T, 1> whole =
      zero_.gather_params(widened<T>(values.data(), values.size()), group.numel, *group.comm);
  if (whole.size() != group.numel) {
    throw std::runtime_error("ZeRO: the gathered parameters hold " + std::to_string(whole.size()) +
                             " values, expected " + std::to_string(group.numel) + " (numel)");
  }
  round_into(round_, whole.data(), whole.size(), group.values.data());
  if (zero_stage_ == 2) group.grads = Bf16Vector();  // the whole gradients go back now
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
  std::size_t sum_buffers = 0;  // of the largest group, in values of T
  for (const Group& group : groups_) {
    const bool gradient_shard = zero_stage_ == 2 && sharded(group);
    b.parameters += group.numel * sizeof(std::uint16_t);
    b.gradients += (gradient_shard ? group.shard_size : group.numel) * sizeof(std::uint16_t);
    // MixedPrecisionAdam's master copy and its Adam<float>'s two moments, of the shard.
    b.optimizer += 3 * group.shard_size * sizeof(float);
    if (gradient_shard) b.transient += group.numel * sizeof(std::uint16_t);
    // The whole gradients widened; sharded, the shard's sum and the values gathered too.
    if (group.comm) {
      sum_buffers =
          std::max(sum_buffers, sharded(group) ? 2 * group.numel + group.shard_size : group.numel);
    }
  }
  b.transient += (2 * largest_piece_ + sum_buffers) * sizeof(T);
  return b;
}

template class MixedPrecisionStates<float>;
template class MixedPrecisionStates<double>;

}  // namespace dtk::gpt
