// The machine's matrix-product rate, the peak against which gpt_train measures its MFU (model
// FLOPs utilisation: the model's FLOPs per second over this).
//
// Every rank at once multiplies two 1024 × 1024 matrices of T with the same BLAS and threads the
// training uses, again and again for a fifth of a second (so the ranks share the cores as they
// do when training); a rank's rate is its fastest product's 2 · 1024³ FLOPs over its time, and
// the peak is the sum of the ranks' rates. On a shared machine it moves with the load, as the
// training does.
#pragma once

#include "dtk/communicator.hpp"

namespace dtk::gpt {

// Collective over world: the FLOPs per second of all its ranks' products together.
template <class T>
double gemm_peak_flops(const Communicator& world);

}  // namespace dtk::gpt
