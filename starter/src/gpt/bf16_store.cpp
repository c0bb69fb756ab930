#include "dtk/gpt/bf16_store.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dtk::gpt {

void round_in_place(float* values, std::size_t count, const Bf16Rounding& round) {
  if (!round) return;
  constexpr std::size_t kChunk = 4096;  // values rounded at a time, through a small buffer
  std::uint16_t bits[kChunk];
  for (std::size_t begin = 0; begin < count; begin += kChunk) {
    const std::size_t n = std::min(kChunk, count - begin);
    round(values + begin, n, bits);
    std::transform(bits, bits + n, values + begin, bf16_value);
  }
}

void round_in_place(double*, std::size_t, const Bf16Rounding& round) {
  if (round) throw std::logic_error("round_in_place: bf16 values are a float model's");
}

PackedMatrix pack(Matrix<float>& m, const Bf16Rounding& round) {
  PackedMatrix p;
  p.rows = m.shape(0);
  p.cols = m.shape(1);
  p.bits.resize(m.size());
  round(m.data(), m.size(), p.bits.data());
  m = Matrix<float>();
  return p;
}

void unpack(PackedMatrix& p, Matrix<float>& m) {
  m = Matrix<float>::from_shape({p.rows, p.cols});
  std::transform(p.bits.begin(), p.bits.end(), m.begin(), bf16_value);
  p = PackedMatrix();
}

void PackedSlots::pack(int slot, const std::vector<Matrix<float>*>& kept,
                       const Bf16Rounding& round) {
  if (slot < 0) throw std::invalid_argument("PackedSlots: slot " + std::to_string(slot) + " < 0");
  while (slots_.size() <= std::size_t(slot)) slots_.emplace_back();
  std::vector<PackedMatrix>& packed = slots_[slot];
  packed.clear();
  for (Matrix<float>* m : kept) packed.push_back(dtk::gpt::pack(*m, round));
}

void PackedSlots::unpack(int slot, const std::vector<Matrix<float>*>& kept) {
  if (slot < 0 || std::size_t(slot) >= slots_.size() || slots_[slot].size() != kept.size()) {
    throw std::logic_error("PackedSlots: slot " + std::to_string(slot) +
                           " unpacked before a forward packed it");
  }
  for (std::size_t i = 0; i < kept.size(); ++i) dtk::gpt::unpack(slots_[slot][i], *kept[i]);
  slots_[slot].clear();
}

std::size_t PackedSlots::bytes() const {
  std::size_t total = 0;
  for (const std::vector<PackedMatrix>& packed : slots_) {
    for (const PackedMatrix& p : packed) total += p.bits.size() * sizeof(std::uint16_t);
  }
  return total;
}

}  // namespace dtk::gpt
