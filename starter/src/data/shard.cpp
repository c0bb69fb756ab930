#include "dtk/data/shard.hpp"

#include <algorithm>
#include <numeric>
#include <string>

namespace dtk {

Shard::Shard(const ImageSet& set, std::vector<std::size_t> rows)
    : set_(&set), rows_(std::move(rows)) {}

void Shard::batch(std::size_t first, std::size_t count, Matrix& x, Labels& labels) const {
  set_->wait_for(*std::max_element(rows_.begin() + first, rows_.begin() + first + count) + 1);
  const std::size_t pixels = set_->pixels;
  ensure_shape(x, count, pixels);
  if (labels.size() != count) labels.resize({count});
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t row = rows_[first + i];
    const std::uint8_t* image = set_->images.data() + row * pixels;
    float* out = x.data() + i * pixels;
    for (std::size_t j = 0; j < pixels; ++j) out[j] = image[j] * (1.0f / 255.0f);
    labels(i) = set_->labels[row];
  }
}

Shard contiguous_part(const ImageSet& set, std::size_t part, std::size_t parts) {
  const std::size_t begin = set.count * part / parts, end = set.count * (part + 1) / parts;
  std::vector<std::size_t> rows(end - begin);
  std::iota(rows.begin(), rows.end(), begin);
  return Shard(set, std::move(rows));
}

}  // namespace dtk
