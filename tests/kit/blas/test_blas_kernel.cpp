// Kit self-test of the BLAS kernel choice (include/dtk/blas_kernel.hpp): dtk asks OpenBLAS for
// the processor's fastest kernels only when OpenBLAS runs older ones of its own accord; a kernel
// named in the environment, one dtk does not know (a newer OpenBLAS's) and an unknown processor
// are left alone. What this machine runs is checked end to end by kit_gpt_train_blas.
//   build/tests/kit/kit_blas_kernel
#include "dtk_test.hpp"

#include <dtk/blas_kernel.hpp>

TEST_CASE("kit | kernel_to_choose: the processor's fastest, over OpenBLAS's older choice only",
          "[kit]") {
  // OpenBLAS took a current Xeon for a Pentium 4, or an AVX-512 processor for an AVX2 one.
  CHECK(dtk::kernel_to_choose("Prescott", "Cooperlake", "") == "Cooperlake");
  CHECK(dtk::kernel_to_choose("Haswell", "SkylakeX", "") == "SkylakeX");
  CHECK(dtk::kernel_to_choose("Sandybridge", "Haswell", "") == "Haswell");
  // Already the fastest, or newer than dtk's guess: nothing to do.
  CHECK(dtk::kernel_to_choose("Cooperlake", "Cooperlake", "").empty());
  CHECK(dtk::kernel_to_choose("Zen", "Haswell", "").empty());  // both AVX2 with FMA
  CHECK(dtk::kernel_to_choose("SkylakeX", "Haswell", "").empty());
  // The environment named the kernels: its choice, even an older one.
  CHECK(dtk::kernel_to_choose("Haswell", "Cooperlake", "Haswell").empty());
  // Names dtk does not know, an unknown processor, no OpenBLAS: left alone.
  CHECK(dtk::kernel_to_choose("SapphireRapids", "Cooperlake", "").empty());
  CHECK(dtk::kernel_to_choose("Prescott", "", "").empty());
  CHECK(dtk::kernel_to_choose("", "Cooperlake", "").empty());
}

TEST_CASE("kit | BlasKernel: slower than the processor, said in one line with what to do",
          "[kit]") {
  const dtk::BlasKernel forced{"OpenBLAS 0.3.21", "Haswell", "Cooperlake", "OPENBLAS_CORETYPE"};
  CHECK(forced.slower_than_processor());
  CHECK(forced.describe() == "OpenBLAS 0.3.21, Haswell kernels (chosen by OPENBLAS_CORETYPE)");
  CHECK(forced.advice().find("unset OPENBLAS_CORETYPE") != std::string::npos);
  CHECK(forced.advice().find("Cooperlake") != std::string::npos);
  CHECK(forced.advice().find('\n') == std::string::npos);
  const dtk::BlasKernel fastest{"OpenBLAS 0.3.21", "SkylakeX", "SkylakeX", "dtk"};
  CHECK_FALSE(fastest.slower_than_processor());
  CHECK(fastest.advice().empty());
  const dtk::BlasKernel other{"", "", "Cooperlake", "OpenBLAS"};
  CHECK(other.describe() == "a BLAS other than OpenBLAS");
  CHECK(other.advice().empty());
}
