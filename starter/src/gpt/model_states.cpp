#include "dtk/gpt/model_states.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <mpi.h>
#include <xtensor/xview.hpp>

#include "dtk/gpt/bytes.hpp"
#include "dtk/gpt/trainer.hpp"

namespace dtk::gpt {

namespace {

// What the Communicator needs of a container: a segment of a flat vector, summed in place.
template <class T>
struct Span {
  using value_type = T;
  T* ptr;
  std::size_t n;
  T* data() const { return ptr; }
  std::size_t size() const { return n; }
};

}  // namespace

std::array<Communicator*, kGradientGroups> gradient_groups(GptGrid& g) {
  return {&g.expert_replica_comm, &g.stage_comm, &g.replica_comm, &g.key_value_replica_comm};
}

template <class T>
ModelStates<T>::ModelStates(std::vector<Parameter<T>*> params, GptGrid& g, Update update,
                            int zero_stage, ZeroCollectives<T> zero)
    : update_kind_(update), stage_(zero_stage), zero_(std::move(zero)) {
  if (stage_ < 0 || stage_ > 2) {
    throw std::invalid_argument("ModelStates: ZeRO stage " + std::to_string(stage_) +
                                " (0, 1 or 2: stage 3 shards the parameters in the model)");
  }
  if (stage_ > 0 && (!zero_.grad_shard || !zero_.gather_params)) {
    throw std::invalid_argument("ModelStates: ZeRO stage " + std::to_string(stage_) +
                                " needs Part 9's functions");
  }
  const auto comms = gradient_groups(g);
  const auto group = [&](const Parameter<T>* p) {
    return gradient_group(p->sharing, g.sequence_parallel);
  };
  std::stable_sort(params.begin(), params.end(),
                   [&](auto* a, auto* b) { return group(a) < group(b); });
  std::size_t begin = 0;
  for (int c = 0; c < kGradientGroups; ++c) {
    std::size_t size = 0;
    for (const Parameter<T>* p : params) size += group(p) == c ? p->value.size() : 0;
    if (size == 0) continue;
    Communicator* comm = comms[c]->Get_size() > 1 ? comms[c] : nullptr;
    // Part 9.2's shard of the segment: s = ceil(n / p) values from r · s (padding past n).
    const std::size_t ranks = comm ? comm->Get_size() : 1, rank = comm ? comm->Get_rank() : 0;
    const std::size_t shard = stage_ > 0 ? (size + ranks - 1) / ranks : size;
    segments_.push_back({comm, begin, size, stage_ > 0 ? rank * shard : 0, shard});
    if (update_kind_ == Update::Adam) adam_.push_back(std::make_unique<Adam<T>>(shard));
    if (stage_ == 2) gradient_shard_values_ += shard;
    begin += size;
  }
  params_ = std::move(params);
  flat_grads_ = xt::zeros<T>({begin});
  flat_values_ = xt::zeros<T>({begin});
}

template <class T>
void ModelStates<T>::zero_grad() {
  for (Parameter<T>* p : params_) {
    if (p->grad.size() == p->value.size()) {
      p->grad.fill(T(0));
    } else {  // stage 2 freed it after the last step's sum
      p->grad = xt::zeros<T>(p->value.shape());
    }
  }
}

template <class T>
double ModelStates<T>::step(double lr, bool summed) {
  if (summed && stage_ > 0) {
    throw std::logic_error("ModelStates::step: gradients summed already, at ZeRO stage " +
                           std::to_string(stage_) + " (which sums them itself)");
  }
  gather_flat(params_, &Parameter<T>::grad, flat_grads_.data());
  gather_flat(params_, &Parameter<T>::value, flat_values_.data());
  // At stage 2 nothing reads the whole gradients again: the memory goes back now.
  if (stage_ == 2) {
    for (Parameter<T>* p : params_) p->grad = Matrix<T>();
  }
  double seconds = 0;
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    const Segment& s = segments_[i];
    const double begin = MPI_Wtime();
    xt::xtensor<T, 1> grad_shard;
    if (stage_ == 0 || !s.comm) {  // the whole segment, summed in place
      Span<T> part{flat_grads_.data() + s.begin, s.size};
      if (s.comm && !summed) s.comm->Allreduce(part, part);
      grad_shard = xt::xtensor<T, 1>::from_shape({s.size});
      std::copy_n(part.data(), s.size, grad_shard.begin());
    } else {
      xt::xtensor<T, 1> segment = xt::xtensor<T, 1>::from_shape({s.size});
      std::copy_n(flat_grads_.data() + s.begin, s.size, segment.begin());
      grad_shard = zero_.grad_shard(segment, *s.comm);
      if (grad_shard.size() != s.shard_size) {
        throw std::runtime_error("ZeRO: the gradient's shard holds " +
                                 std::to_string(grad_shard.size()) + " values, expected " +
                                 std::to_string(s.shard_size) + " (ceil(numel / p))");
      }
    }
    seconds += MPI_Wtime() - begin;
    update(i, grad_shard, lr);
  }
  scatter_flat(flat_values_.data(), &Parameter<T>::value, params_);
  return seconds;
}

// This rank's shard of segment s updated with its summed gradient, then every rank's shard
// gathered back into the flat values (stages 1 and 2).
template <class T>
void ModelStates<T>::update(std::size_t i, xt::xtensor<T, 1>& grad_shard, double lr) {
  const Segment& s = segments_[i];
  const auto step = [&](xt::xtensor<T, 1>& values, std::size_t offset) {
    if (update_kind_ == Update::Adam) {
      adam_[i]->step(values, offset, grad_shard, T(lr));
    } else {
      auto part = xt::view(values, xt::range(offset, offset + grad_shard.size()));
      part -= T(lr) * grad_shard;
    }
  };
  if (stage_ == 0 || !s.comm) {  // the whole segment, in place
    step(flat_values_, s.begin);
    return;
  }
  xt::xtensor<T, 1> values = xt::zeros<T>({s.shard_size});  // padding past the segment: 0
  const std::size_t held = std::min(s.shard_size, s.size - std::min(s.shard_begin, s.size));
  std::copy_n(flat_values_.data() + s.begin + s.shard_begin, held, values.begin());
  step(values, 0);
  const xt::xtensor<T, 1> whole = zero_.gather_params(values, s.size, *s.comm);
  if (whole.size() != s.size) {
    throw std::runtime_error("ZeRO: the gathered parameters hold " + std::to_string(whole.size()) +
                             " values, expected " + std::to_string(s.size) + " (numel)");
  }
  std::copy(whole.begin(), whole.end(), flat_values_.data() + s.begin);
}

template <class T>
typename ModelStates<T>::Bytes ModelStates<T>::bytes() const {
  Bytes b;
  std::size_t whole_gradients = 0, segment_values = 0;
  for (const Parameter<T>* p : params_) {
    b.parameters += bytes_of(p->value);
    whole_gradients += p->value.size() * sizeof(T);
  }
  // One segment's buffers at a time: its gradient (whole, or copied out and a shard), and where
  // it is sharded the shard of its values and the whole segment gathered back.
  for (const Segment& s : segments_) {
    const bool sharded = stage_ > 0 && s.comm;
    segment_values = std::max(segment_values, sharded ? 2 * s.shard_size + 2 * s.size : s.size);
  }
  b.gradients = stage_ == 2 ? gradient_shard_values_ * sizeof(T) : whole_gradients;
  for (const auto& adam : adam_) b.optimizer += adam->state_bytes();
  // And the flat vectors; at stage 2 the whole gradients, from the backward to the sum.
  b.transient = bytes_of(flat_grads_, flat_values_) + segment_values * sizeof(T) +
                (stage_ == 2 ? whole_gradients : 0);
  return b;
}

template class ModelStates<float>;
template class ModelStates<double>;

}  // namespace dtk::gpt
