// Tensors that say where they come from, for the tests of pipeline executors (Part 8.5's stages,
// Part 14.2's model chunks). Every value encodes its kind (activation > 0, gradient < 0), the
// piece of the pipeline that made it (piece -1 is the data, piece P, one past the last, the loss)
// and its micro-batch: ±(1000 · (piece + 2) + mb + (element % 8) / 8). So 2003.5 is element 4
// (or 12, ...) of piece 0's activation of micro-batch 3, and -5001 element 0 of the loss
// gradient of micro-batch 1 in a pipeline of 3 pieces. All values are exact in float.
#pragma once

#include <xtensor/xtensor.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>

namespace dtk::testing {

enum class Kind { Activation, Gradient };

template <class T>
T tag_value(Kind kind, int piece, int mb, std::size_t element) {
  const double value = 1000.0 * (piece + 2) + mb + static_cast<double>(element % 8) / 8;
  return static_cast<T>(kind == Kind::Activation ? value : -value);
}

template <class T>
xt::xtensor<T, 2> tagged(Kind kind, int piece, int mb, const std::array<std::size_t, 2>& shape) {
  xt::xtensor<T, 2> out = xt::xtensor<T, 2>::from_shape(shape);
  for (std::size_t e = 0; e < out.size(); ++e) out.data()[e] = tag_value<T>(kind, piece, mb, e);
  return out;
}

// What a tagged value is, in words, for the failure messages: `piece` names a piece ("stage",
// "model chunk"), `pieces` is P.
inline std::string describe_tag(double value, int pieces, const std::string& piece) {
  const double magnitude = std::abs(value);
  const int index = static_cast<int>(magnitude / 1000) - 2;
  const std::string mb = "micro-batch " + std::to_string(static_cast<int>(magnitude) % 1000);
  if (index < -1 || index > pieces) {
    return "a value no " + piece + " sent (" + std::to_string(value) + ")";
  }
  const std::string of = piece + " " + std::to_string(index) + "'s ";
  if (value > 0) return index == -1 ? mb + " of the data" : of + "activation of " + mb;
  return index == pieces ? "the loss gradient of " + mb : of + "input gradient of " + mb;
}

inline std::string shape_text(const std::array<std::size_t, 2>& shape) {
  std::ostringstream text;
  text << "(" << shape[0] << ", " << shape[1] << ")";
  return text.str();
}

}  // namespace dtk::testing
