// Activations kept as bf16 (Part 16.2, a bf16 run): between a block's forward and its backward,
// the matrices its layers keep are held as bfloat16, 2 bytes a value instead of 4, as an
// accelerator's bf16 tensors are; the backward makes them float again just before it reads them,
// one block at a time. The rounding is Part 16.1's to_bf16, which gpt_train binds: a student's
// rounding is the one their run keeps. Going back is exact (a bf16 is a float with 16 zero bits).
//
// Each layer rounds a matrix it keeps as soon as it has made it (round_in_place), before anything
// reads it: the forward goes on with the values the backward will read, as it would on bf16
// tensors, and a forward computed again (recomputation) makes the same ones. Packing them is
// then exact. What stays in float: the residual stream (a block's input and output, as
// Megatron's fp32 residual connection keeps it: full recomputation keeps it so), the layers'
// per-row statistics (LayerNorm's 1/σ, the attention's log-sum-exp, small beside the rest), the
// router's probabilities and gates, and the block a forward or backward is computing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

#include "dtk/gpt/config.hpp"  // Bf16Rounding
#include "dtk/gpt/matmul.hpp"

namespace dtk::gpt {

// The float a bf16 stands for, exactly: its 16 bits, then 16 zero bits.
inline float bf16_value(std::uint16_t bits) {
  const std::uint32_t wide = std::uint32_t(bits) << 16;
  float x;
  std::memcpy(&x, &wide, sizeof x);
  return x;
}

// A matrix's values as bf16 bits, with its shape.
struct PackedMatrix {
  std::vector<std::uint16_t> bits;
  std::size_t rows = 0, cols = 0;
};

// A bf16 run (`round` given): the values rounded to bf16, in place. A float model's only: a
// double model has no bf16 run (Gpt refuses one).
void round_in_place(float* values, std::size_t count, const Bf16Rounding& round);
void round_in_place(double* values, std::size_t count, const Bf16Rounding& round);
template <class Tensor>
void round_in_place(Tensor& values, const Bf16Rounding& round) {
  round_in_place(values.data(), values.size(), round);
}

// m as bf16; m is freed.
PackedMatrix pack(Matrix<float>& m, const Bf16Rounding& round);
// The floats p stands for, into m; p is freed.
void unpack(PackedMatrix& p, Matrix<float>& m);

// Some matrices of each slot (slots.hpp) held as bf16 between a forward and its backward: a
// block's, or the head's. The matrices are named by pointers, in the same order each time.
class PackedSlots {
 public:
  void pack(int slot, const std::vector<Matrix<float>*>& kept, const Bf16Rounding& round);
  void unpack(int slot, const std::vector<Matrix<float>*>& kept);
  std::size_t bytes() const;  // every slot's bf16 values

 private:
  std::deque<std::vector<PackedMatrix>> slots_;
};

}  // namespace dtk::gpt
