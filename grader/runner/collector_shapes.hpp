// The shapes of the collectors' checks (Parts 3 and 6): fixed, chosen to expose the known
// mistakes: more than one row (a forgotten rearrangement after Allgather shows), slices wider than
// one column, and rows != columns.
#pragma once

#include <cstddef>
#include <string>

#include <xtensor/xslice.hpp>

namespace dtk::grade::collectors {

constexpr std::size_t kBatch = 3, kWidth = 2;

inline std::string describe(const std::string& what) {
  return "batch " + std::to_string(kBatch) + ", " + what + " " + std::to_string(kWidth);
}

// The columns of block r of a (batch, parts * width) matrix.
inline auto block_columns(std::size_t r) { return xt::range(r * kWidth, (r + 1) * kWidth); }

}  // namespace dtk::grade::collectors
