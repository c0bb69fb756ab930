// The students' functions of Part 15 (assignment 4) bound to gpt_train: --bucket_mb X sums the
// data-parallel gradients in buckets of X MB (15.1's assign_buckets, the first bucket as large as
// the others) reduced during the backward by 15.2's GradientBuckets. Built where the tree has
// Part 15 (programs/gpt_train.cmake).
#include <memory>

#include <dtk/overlap.hpp>

#include "gpt_train.hpp"

namespace dtk::gpt_train {

template <class T>
void bind_overlap(gpt::GptParallelism<T>& p) {
  p.bucketed_sum = [](const std::vector<std::size_t>& sizes, std::size_t cap_bytes,
                      Communicator& comm) {
    std::vector<std::size_t> bytes;
    for (std::size_t size : sizes) bytes.push_back(size * sizeof(double));
    auto buckets =
        std::make_shared<GradientBuckets>(assign_buckets(bytes, cap_bytes, cap_bytes), sizes, comm);
    return gpt::BucketedSum{[buckets](int parameter, const xt::xtensor<double, 1>& gradient) {
                              buckets->gradient_ready(parameter, gradient);
                            },
                            [buckets] { buckets->progress(); },
                            [buckets] { return buckets->finish(); }};
  };
}

template void bind_overlap(gpt::GptParallelism<float>&);
template void bind_overlap(gpt::GptParallelism<double>&);

}  // namespace dtk::gpt_train
