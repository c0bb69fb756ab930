// The machine's matrix-product rate, the peak against which gpt_train measures its MFU (model
// FLOPs utilisation: the model's FLOPs per second over this).
//
// Every rank at once multiplies two 1024 × 1024 matrices of T with the same BLAS and threads the
// training uses, again and again for `seconds` (so the ranks share the cores as they do when
// training); a rank's rate is its fastest product's 2 · 1024³ FLOPs over its time, and the peak
// is the sum of the ranks' rates. On a shared machine it moves with the load, as the training
// does. gpt_train measures for a fifth of a second, or as long as its training took if that was
// shorter: a run of a few steps (the kit's tests) gets a rough MFU, not a longer run.
#pragma once

#include "dtk/communicator.hpp"

namespace dtk::gpt {

constexpr double kGemmPeakSeconds = 0.2;

// Collective over world: the FLOPs per second of all its ranks' products together, measured for
// `seconds` (at least one product each).
template <class T>
double gemm_peak_flops(const Communicator& world, double seconds = kGemmPeakSeconds);

}  // namespace dtk::gpt
