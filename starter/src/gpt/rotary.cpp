#include "dtk/gpt/rotary.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace dtk::gpt {

template <class T>
void rotate(Matrix<T>& m, int heads, const std::vector<int>& positions, double theta,
            bool inverse) {
  const std::size_t width = m.shape(1), per_sequence = positions.size();
  if (heads < 1 || width % heads != 0 || (width / heads) % 2 != 0 || per_sequence == 0 ||
      m.shape(0) % per_sequence != 0) {
    throw std::invalid_argument("rotate: expected (B · " + std::to_string(per_sequence) +
                                ", heads · d) with d even, got (" + std::to_string(m.shape(0)) +
                                ", " + std::to_string(width) + ") for " + std::to_string(heads) +
                                " heads");
  }
  const std::size_t d = width / heads, half = d / 2;
  // cos and sin of each position's angles, computed once in double: (S, d/2) each.
  std::vector<T> cosines(per_sequence * half), sines(per_sequence * half);
  for (std::size_t s = 0; s < per_sequence; ++s) {
    for (std::size_t i = 0; i < half; ++i) {
      const double angle = positions[s] * std::pow(theta, -2.0 * double(i) / double(d));
      cosines[s * half + i] = T(std::cos(angle));
      sines[s * half + i] = T(inverse ? -std::sin(angle) : std::sin(angle));
    }
  }
  for (std::size_t row = 0; row < m.shape(0); ++row) {
    const T* cos = cosines.data() + (row % per_sequence) * half;
    const T* sin = sines.data() + (row % per_sequence) * half;
    for (std::size_t head = 0; head < std::size_t(heads); ++head) {
      T* x = m.data() + row * width + head * d;
      for (std::size_t i = 0; i < half; ++i) {
        const T first = x[i], second = x[i + half];
        x[i] = first * cos[i] - second * sin[i];
        x[i + half] = second * cos[i] + first * sin[i];
      }
    }
  }
}

template void rotate(Matrix<float>&, int, const std::vector<int>&, double, bool);
template void rotate(Matrix<double>&, int, const std::vector<int>&, double, bool);

}  // namespace dtk::gpt
