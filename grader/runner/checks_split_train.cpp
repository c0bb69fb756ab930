// Part 1: split_train. One process plays every rank of the (mp, dp) grid.
#include <xtensor/xview.hpp>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

// Rows [dp_idx * per_rank, (dp_idx + 1) * per_rank) of x and y.
template <class T>
auto block(const xt::xtensor<T, 2>& x, const xt::xtensor<std::int32_t, 1>& y, int dp_idx,
           std::size_t per_rank) {
  const std::size_t begin = dp_idx * per_rank, end = begin + per_rank;
  return std::pair{xt::xtensor<T, 2>(xt::view(x, xt::range(begin, end), xt::all())),
                   xt::xtensor<std::int32_t, 1>(xt::view(y, xt::range(begin, end)))};
}

template <class T>
void split_train_case(CheckContext& context) {
  const int mp = context.test.mp, dp = context.test.dp;
  // Three rows per replica and, with dp > 1, dp - 1 leftover rows that must be dropped.
  const std::size_t per_rank = 3, rows = per_rank * dp + (dp - 1), features = 3;
  Rng rng = context.rng("training set");
  const xt::xtensor<T, 2> x = random_matrix<T>(rng, rows, features);
  auto y = xt::xtensor<std::int32_t, 1>::from_shape({rows});
  for (std::int32_t& label : y) label = rng.uniform_int(0, 999999);
  context.out.note("training set of " + std::to_string(rows) + " rows and " +
                   std::to_string(features) +
                   " features, values and labels drawn from the seed; every rank of the grid "
                   "is checked");

  std::vector<std::pair<xt::xtensor<T, 2>, xt::xtensor<std::int32_t, 1>>> blocks;
  for (int rank = 0; rank < mp * dp; ++rank)
    blocks.push_back(context.call([&] { return split_train<T>(x, y, mp, dp, rank); }));
  const char* modulo = "the block of replica rank % dp_size (ranks grouped by modulo)";
  context.out.part("x_train blocks");
  for (int rank = 0; rank < mp * dp; ++rank) {
    const std::string name = "rank " + std::to_string(rank) + ": x block";
    record_tensor(context.out, name, blocks[rank].first);
    context.judge([&](Judgement& judgement) {
      judgement.mistake(name, modulo, block(x, y, rank % dp, per_rank).first);
    });
  }
  context.out.part("y_train blocks");
  for (int rank = 0; rank < mp * dp; ++rank) {
    const std::string name = "rank " + std::to_string(rank) + ": y block";
    record_tensor(context.out, name, blocks[rank].second);
    context.judge([&](Judgement& judgement) {
      judgement.mistake(name, modulo, block(x, y, rank % dp, per_rank).second);
    });
  }
}

void check_split_train(CheckContext& context) {
  run_typed(context, split_train_case<float>, split_train_case<double>);
}

}  // namespace

DTK_GRADE_CHECK(check_split_train, {"split_train",
                                    CaseKind::layout,
                                    /*collective=*/false,
                                    /*typed=*/true,
                                    {"x_train blocks", "y_train blocks"}});

}  // namespace dtk::grade
