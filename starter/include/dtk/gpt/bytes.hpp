// The bytes of data some tensors hold: what the layers report of their memory.
#pragma once

#include <cstddef>

namespace dtk::gpt {

template <class... Tensors>
std::size_t bytes_of(const Tensors&... tensors) {
  return (std::size_t(0) + ... + (tensors.size() * sizeof(typename Tensors::value_type)));
}

}  // namespace dtk::gpt
