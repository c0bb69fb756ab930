// What a pipeline stage (Part 8) or chunk (Part 14) of the grader's was handed, recorded for the
// judge: the executors' checks compare it with what the reference's stages were handed.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xview.hpp>

#include "check_context.hpp"
#include "keys.hpp"

namespace dtk::grade {

// Tensors up to this size are recorded whole; larger ones (the 1 MB cases) by their shape, a
// hash of every value and the first row's first values.
constexpr std::size_t kRecordedWhole = 256;

// What was handed in calls named `what`, by micro-batch: each tensor whole, or (large) its shape,
// a hash of its values and a few of them. A micro-batch handed twice records both.
template <class T>
void record_received(CheckContext& context, const std::string& what,
                     std::vector<std::pair<int, xt::xtensor<T, 2>>> received) {
  std::stable_sort(received.begin(), received.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  context.out.integer(what + ": calls", static_cast<long long>(received.size()));
  for (const auto& [mb, tensor] : received) {
    const std::string name = what + " of micro-batch " + std::to_string(mb);
    if (tensor.size() <= kRecordedWhole) {
      record_tensor(context.out, name, tensor);
      continue;
    }
    const std::string bytes(reinterpret_cast<const char*>(tensor.data()),
                            tensor.size() * sizeof(T));
    context.out.integer(name + ": rows", static_cast<long long>(tensor.shape(0)));
    context.out.integer(name + ": columns", static_cast<long long>(tensor.shape(1)));
    context.out.integer(name + ": a hash of every value",
                        static_cast<long long>(siphash(0, 0, bytes) >> 1));
    record_tensor(context.out, name + ": the first row's first 8 values",
                  xt::xtensor<T, 1>(xt::view(tensor, 0, xt::range(0, 8))));
  }
}

}  // namespace dtk::grade
