// What a layer keeps from a forward pass for its backward, once per micro-batch in flight.
//
// Training without a pipeline runs one forward, then its backward: one slot (slot 0) is all it
// uses. A pipeline stage runs the forwards of several micro-batches before their backwards
// (GPipe all m of them, 1F1B at most p − s on stage s): each forward(…, slot) fills its slot and
// backward(…, slot) reads the same one, so the micro-batches in flight need as many slots. A
// slot keeps its buffers once its backward has run, for the next micro-batch given that slot.
//
//   struct Saved { Matrix<T> normalized; Vector<T> inv_std; };
//   Slots<Saved> saved_;
//   Saved& s = saved_.fill(slot);       // in forward: the slot, made if it is new
//   const Saved& s = saved_.read(slot); // in backward: a slot a forward filled
#pragma once

#include <cstddef>
#include <deque>
#include <stdexcept>
#include <string>

namespace dtk::gpt {

template <class Saved>
class Slots {
 public:
  Saved& fill(int slot) {
    if (slot < 0) throw std::invalid_argument("Slots: slot " + std::to_string(slot) + " < 0");
    while (slots_.size() <= std::size_t(slot)) slots_.emplace_back();
    return slots_[slot];
  }
  Saved& read(int slot) { return slots_[checked(slot)]; }
  const Saved& read(int slot) const { return slots_[checked(slot)]; }
  std::size_t size() const { return slots_.size(); }
  // Gives a slot's buffers back (recomputation: a forward run again fills it anew); a slot no
  // forward filled has none.
  void release(int slot) {
    if (slot >= 0 && std::size_t(slot) < slots_.size()) slots_[slot] = Saved{};
  }

  // Σ over the slots of bytes(saved).
  template <class Bytes>
  std::size_t total(Bytes bytes) const {
    std::size_t sum = 0;
    for (const Saved& saved : slots_) sum += bytes(saved);
    return sum;
  }

 private:
  std::size_t checked(int slot) const {
    if (slot < 0 || std::size_t(slot) >= slots_.size()) {
      throw std::logic_error("slot " + std::to_string(slot) + " read before a forward filled it");
    }
    return slot;
  }

  // A deque: a new slot leaves the others where they are, and a later layer may keep a pointer
  // to an earlier layer's saved output (its input) until the backward.
  std::deque<Saved> slots_;
};

}  // namespace dtk::gpt
