#include "dtk/gpt/gemm_peak.hpp"

#include <algorithm>

#include "dtk/gpt/matmul.hpp"

namespace dtk::gpt {

template <class T>
double gemm_peak_flops(const Communicator& world, double seconds) {
  constexpr std::size_t n = 1024;
  const Matrix<T> a = xt::ones<T>({n, n}), b = xt::ones<T>({n, n});
  Matrix<T> c;
  matmul(a, b, c);  // warm-up: threads started, memory touched
  world.Barrier();
  double best = 0;
  const double start = MPI_Wtime();
  do {
    const double begin = MPI_Wtime();
    matmul(a, b, c);
    best = std::max(best, 2.0 * n * n * n / (MPI_Wtime() - begin));
  } while (MPI_Wtime() - start < seconds);
  double total = 0;
  MPI_Allreduce(&best, &total, 1, MPI_DOUBLE, MPI_SUM, world.handle());
  return total;
}

template double gemm_peak_flops<float>(const Communicator&, double);
template double gemm_peak_flops<double>(const Communicator&, double);

}  // namespace dtk::gpt
