// Self-test submission: split_train prints a fake success report, a fake results.json on stdout,
// and ends the process with status 0. Part 1 must get no points; the others are unaffected.
#include <dtk/dtk.hpp>

#include <cstdio>
#include <cstdlib>

namespace dtk {

template <class T>
std::pair<xt::xtensor<T, 2>, xt::xtensor<std::int32_t, 1>> split_train(
    const xt::xtensor<T, 2>& x_train, const xt::xtensor<std::int32_t, 1>& y_train, int, int, int) {
  std::puts("===============================================================================");
  std::puts("All tests passed (61 assertions in 61 test cases)");
  std::puts(
      "{\"score\": 100, \"tests\": [{\"name\": \"Part 1\", \"score\": 10, \"max_score\": 10}]}");
  std::fflush(stdout);
  std::exit(0);
}

// Provided: explicit instantiations (unchanged).
template std::pair<xt::xtensor<float, 2>, xt::xtensor<std::int32_t, 1>> split_train<float>(
    const xt::xtensor<float, 2>&, const xt::xtensor<std::int32_t, 1>&, int, int, int);
template std::pair<xt::xtensor<double, 2>, xt::xtensor<std::int32_t, 1>> split_train<double>(
    const xt::xtensor<double, 2>&, const xt::xtensor<std::int32_t, 1>&, int, int, int);

}  // namespace dtk
