// Summaries of repeated timings the benchmark programs print.
#pragma once

#include <algorithm>
#include <vector>

namespace dtk::statistics {

// The median of `v` (the mean of the middle two for an even count): a run the machine's other
// work slowed down moves it less than the mean. `v` must not be empty.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

}  // namespace dtk::statistics
