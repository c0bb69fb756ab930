// Shape checks on what the Part 2, 3 and 6 functions return, so that a mistake there stops the
// trainer with a message naming the function instead of a crash or a silent broadcast.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include <xtensor/xtensor.hpp>

namespace dtk {

// Throws std::runtime_error "<what>: expected shape (rows, cols), got (r, c)" unless `tensor`
// has the given shape.
template <class T>
void expect_shape(const xt::xtensor<T, 2>& tensor, std::size_t rows, std::size_t cols,
                  const std::string& what) {
  if (tensor.shape(0) == rows && tensor.shape(1) == cols) return;
  throw std::runtime_error(what + ": expected shape (" + std::to_string(rows) + ", " +
                           std::to_string(cols) + "), got (" + std::to_string(tensor.shape(0)) +
                           ", " + std::to_string(tensor.shape(1)) + ")");
}

}  // namespace dtk
