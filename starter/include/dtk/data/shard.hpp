// Shard: the images of a data set that one rank trains or tests on, cut into batches.
#pragma once

#include <cstddef>
#include <vector>

#include "dtk/data/mnist.hpp"
#include "dtk/mlp/fc_layer.hpp"
#include "dtk/mlp/loss.hpp"

namespace dtk {

class Shard {
 public:
  // The images `rows` of `set` (which must outlive the shard), in that order.
  Shard(const ImageSet& set, std::vector<std::size_t> rows);

  std::size_t size() const { return rows_.size(); }

  // Images [first, first + count) of the shard as a (count, pixels) matrix of floats in [0, 1],
  // and their labels. Reshapes x and labels, reusing their memory when the shape is unchanged.
  void batch(std::size_t first, std::size_t count, Matrix& x, Labels& labels) const;

 private:
  const ImageSet* set_;
  std::vector<std::size_t> rows_;
};

// This rank's training images, chosen by your split_train (Part 1): its replica's contiguous
// block of the training set. split_train is given the row numbers rather than the
// pixels, so that no rank needs a float copy of the whole training set.
Shard training_shard(const ImageSet& train, const Parallelism& parallelism, int rank);

// Part `part` of `set` cut into `parts` contiguous parts that together hold every image:
// images [count * part / parts, count * (part + 1) / parts).
Shard contiguous_part(const ImageSet& set, std::size_t part, std::size_t parts);

// This rank's test images: its replica's part of the test set, cut into dp_size
// contiguous parts that together hold every test image.
Shard test_shard(const ImageSet& test, const Parallelism& parallelism, int rank);

}  // namespace dtk
