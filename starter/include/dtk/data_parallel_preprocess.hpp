// Part 1: splitting the training set across data-parallel groups.
// You implement split_train in data/data_parallel_preprocess.cpp.
#pragma once

#include <cstdint>
#include <utility>

#include <xtensor/xtensor.hpp>

#include "dtk/not_implemented.hpp"  // what the stubs throw until you write them

namespace dtk {

// The rank layout used throughout the assignment is model-parallel-major. With mp_size model-
// parallel ranks per group and dp_size groups (world size = mp_size * dp_size):
//
//     mp_idx = rank % mp_size        dp_idx = rank / mp_size
//
// e.g. mp_size = 2, dp_size = 4:   rank    0 1 | 2 3 | 4 5 | 6 7
//                                  mp_idx  0 1 | 0 1 | 0 1 | 0 1
//                                  dp_idx  0 0 | 1 1 | 2 2 | 3 3
//
// The ranks sharing a dp_idx form one model-parallel group: together they hold one replica of
// the model. Data parallelism gives each replica its own contiguous block of the training set;
// all the ranks of one replica see the same block.
//
// split_train returns this rank's block of (x_train, y_train):
//   x_train: (n, features), y_train: (n,), one label per row of x_train.
//   Every replica gets m = n / dp_size rows (integer division): the ranks with dp_idx = d get
//   rows [d * m, (d + 1) * m). When dp_size does not divide n, the last n % dp_size rows are
//   left out, so that every replica takes the same number of training steps.
//   Returns (x block of shape (m, features), y block of shape (m,)), as new tensors.
template <class T>
std::pair<xt::xtensor<T, 2>, xt::xtensor<std::int32_t, 1>> split_train(
    const xt::xtensor<T, 2>& x_train, const xt::xtensor<std::int32_t, 1>& y_train, int mp_size,
    int dp_size, int rank);

}  // namespace dtk
