#include "dtk/gpt/serial_blas.hpp"

// OpenBLAS's own functions, declared weak: with another BLAS they are simply absent (null), and
// that BLAS keeps its own threading.
extern "C" void openblas_set_num_threads(int threads) __attribute__((weak));
extern "C" int openblas_get_num_threads() __attribute__((weak));

namespace dtk::gpt {

SerialBlas::SerialBlas()
    : previous_threads_(openblas_get_num_threads ? openblas_get_num_threads() : 1) {
  if (openblas_set_num_threads) openblas_set_num_threads(1);
}

SerialBlas::~SerialBlas() {
  if (openblas_set_num_threads) openblas_set_num_threads(previous_threads_);
}

}  // namespace dtk::gpt
