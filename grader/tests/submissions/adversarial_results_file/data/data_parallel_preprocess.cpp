// Self-test submission: split_train is wrong, and writes results.json files claiming full marks
// wherever it can. The grader's results.json must be the grader's: Part 1 gets no points.
#include <dtk/dtk.hpp>

#include <fstream>

namespace dtk {

template <class T>
std::pair<xt::xtensor<T, 2>, xt::xtensor<std::int32_t, 1>> split_train(
    const xt::xtensor<T, 2>& x_train, const xt::xtensor<std::int32_t, 1>& y_train, int, int, int) {
  const char* fake = "{\"score\": 100, \"tests\": []}\n";
  for (const char* path :
       {"results.json", "../results.json", "../../results.json", "../../../results.json",
        "/tmp/results.json", "/autograder/results/results.json", "@DTK_SELFTEST_RESULTS@"}) {
    std::ofstream(path) << fake;
  }
  return {xt::zeros<T>({1, 1}), xt::zeros<std::int32_t>({1})};
}

// Provided: explicit instantiations (unchanged).
template std::pair<xt::xtensor<float, 2>, xt::xtensor<std::int32_t, 1>> split_train<float>(
    const xt::xtensor<float, 2>&, const xt::xtensor<std::int32_t, 1>&, int, int, int);
template std::pair<xt::xtensor<double, 2>, xt::xtensor<std::int32_t, 1>> split_train<double>(
    const xt::xtensor<double, 2>&, const xt::xtensor<std::int32_t, 1>&, int, int, int);

}  // namespace dtk
