// Which kernels the BLAS multiplies matrices with, and the fastest ones this processor runs.
//
// Debian 12's OpenBLAS (0.3.21) chooses its kernels when it loads, from the processor it
// recognises: it takes recent processors it does not know for the oldest x86-64 (a current Xeon
// runs its "Prescott" SSE3 kernels, at a quarter of the AVX-512 ones' speed), and the variable
// OPENBLAS_CORETYPE, read at that moment, overrides it. A program learns of it only in main,
// after OpenBLAS has loaded: start_with_openblas_settings then starts the program again (the same
// process, argv and environment) with OPENBLAS_CORETYPE naming the fastest kernels the processor
// has the instructions for. Results stay the same to rounding (in double, to about 1e-15).
//
// It sets one more thing OpenBLAS reads only as it loads: how long its idle threads spin
// (sched_yield) before they sleep, OPENBLAS_THREAD_TIMEOUT (2^N cycles; by default 28, about a
// tenth of a second). Between two products a spinning thread keeps a core from the loops the GPT
// runs on threads of its own (LayerNorm, GELU, the attention kernels): gpt_train's medium model
// (6 x 384, T 256, B 16) at 2 threads ran 2,742 tokens/s with 4 against 2,311 with the default
// (medians of 3 runs on this project's 2-core machine). The environment's value, if any, stays.
#pragma once

#include <string>

namespace dtk {

struct BlasKernel {
  std::string library;    // "OpenBLAS 0.3.21", or "" for a BLAS that is not OpenBLAS
  std::string kernel;     // OpenBLAS's kernels, as it names them ("Haswell"); "" if not OpenBLAS
  std::string fastest;    // the fastest kernels this processor runs ("Cooperlake"), "" unknown
  std::string chosen_by;  // "OpenBLAS" (it recognised the processor), "dtk", or
                          // "OPENBLAS_CORETYPE" (the environment named them)
  // OPENBLAS_THREAD_TIMEOUT as this process started with it (kBlasThreadTimeout unless the
  // environment named another), or "" when unset (OpenBLAS's default).
  std::string thread_timeout;

  // Kernels older than the processor: its products could run faster.
  bool slower_than_processor() const;
  // "OpenBLAS 0.3.21, Cooperlake kernels (chosen by dtk)", or "a BLAS other than OpenBLAS".
  std::string describe() const;
  // One line saying what to do when the kernels are slower than the processor, else "".
  std::string advice() const;
};

// What this process multiplies with.
BlasKernel blas_kernel();

// The kernels to ask OpenBLAS for, or "" to leave its choice: the fastest the processor runs,
// when what OpenBLAS runs (`current`) is older and nobody named it (`from_environment` is
// OPENBLAS_CORETYPE's value, or "").
std::string kernel_to_choose(const std::string& current, const std::string& fastest,
                             const std::string& from_environment);

// OpenBLAS's idle threads sleep at once (2^4 cycles of spinning), unless the environment says.
constexpr const char* kBlasThreadTimeout = "4";

// First thing in main, before any thread or MPI starts: when kernel_to_choose names kernels, or
// OPENBLAS_THREAD_TIMEOUT is unset, runs this program again with them and kBlasThreadTimeout
// (never returns then); otherwise returns at once.
void start_with_openblas_settings(char** argv);

}  // namespace dtk
