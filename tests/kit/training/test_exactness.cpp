// Kit self-test: the parallel decomposition changes nothing but where the work runs.
//
// Training k steps at (mp, dp) = (2, 1), (1, 2) and (2, 2), naive and Megatron, on the same
// global batches, must end with the weights (1, 1) ends with: relative error at most 1e-5 on
// the weights and 1e-4 on what training changed in them. The second bound catches mistakes that
// only nudge the weights (Megatron's fc2 bias added on every rank of the group, say).
//   mpirun -n 4 ./build/tests/kit/kit_training_exactness
#include "dtk_test.hpp"

#include <dtk/mlp/mlp.hpp>

#include <cmath>
#include <random>

#include <xtensor/xview.hpp>

namespace {

using dtk::Matrix;

constexpr int kRanks = 4;
constexpr int kSteps = 4;
constexpr std::size_t kGlobalBatch = 8;
constexpr float kLearningRate = 0.5f;

struct Weights {
  Matrix w1, b1, w2, b2;
};

// kSteps global batches of random images (pixels in [0, 1)) and labels, the same on every rank.
struct DataSet {
  Matrix images;
  dtk::Labels labels;
};

DataSet make_data() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<int> label(0, 9);
  const std::size_t images = kSteps * kGlobalBatch;
  DataSet data{xt::empty<float>({images, std::size_t{784}}), xt::empty<std::int32_t>({images})};
  for (float& p : data.images) p = pixel(rng);
  for (auto& l : data.labels) l = label(rng);
  return data;
}

// How a layer's matrix is shared out in its model-parallel group.
enum class Split { columns, rows, none };

// The full (unsplit) matrix of which every rank of `layer`'s model-parallel group holds
// `slice`: its column block, its row block, or all of it.
Matrix gather_full(const Matrix& slice, const dtk::FCLayer& layer, Split split) {
  if (split == Split::none) return slice;
  const MPI_Comm mp_comm = layer.info().mp_comm.handle();
  const int parts = layer.info().mp_comm.Get_size();
  const std::size_t rows = slice.shape(0), cols = slice.shape(1);
  xt::xtensor<float, 3> blocks({static_cast<std::size_t>(parts), rows, cols});
  MPI_Allgather(slice.data(), static_cast<int>(slice.size()), MPI_FLOAT, blocks.data(),
                static_cast<int>(slice.size()), MPI_FLOAT, mp_comm);
  if (split == Split::rows) return xt::reshape_view(blocks, {parts * rows, cols});
  Matrix full({rows, parts * cols});
  for (int r = 0; r < parts; ++r) {
    xt::view(full, xt::all(), xt::range(r * cols, (r + 1) * cols)) = xt::view(blocks, r);
  }
  return full;
}

// fc1 and naive fc2 are split by columns; Megatron's fc2 by rows of W, its b on every rank.
Weights full_weights(const dtk::MLP& model) {
  const bool megatron = model.parallelism().megatron;
  return {gather_full(model.fc1().weight(), model.fc1(), Split::columns),
          gather_full(model.fc1().bias(), model.fc1(), Split::columns),
          gather_full(model.fc2().weight(), model.fc2(), megatron ? Split::rows : Split::columns),
          gather_full(model.fc2().bias(), model.fc2(), megatron ? Split::none : Split::columns)};
}

// Trains on the ranks of `comm` (mp_size * dp_size of them): at step s, replica d (the ranks
// with dp_idx d) takes rows [d * b, (d + 1) * b) of global batch s, b = kGlobalBatch / dp_size.
Weights train(const dtk::Communicator& comm, const dtk::Parallelism& parallelism,
              const DataSet& data) {
  dtk::MLP model(comm, parallelism);
  const std::size_t b = kGlobalBatch / parallelism.dp_size;
  const std::size_t replica = comm.Get_rank() / parallelism.mp_size;
  for (std::size_t step = 0; step < kSteps; ++step) {
    const std::size_t first = step * kGlobalBatch + replica * b;
    const Matrix x = xt::view(data.images, xt::range(first, first + b), xt::all());
    const dtk::Labels labels = xt::view(data.labels, xt::range(first, first + b));
    model.train_step(x, labels, kLearningRate);
  }
  return full_weights(model);
}

double relative_error(const Matrix& actual, const Matrix& expected) {
  return xt::sqrt(xt::sum(xt::square(actual - expected)))() /
         xt::sqrt(xt::sum(xt::square(expected)))();
}

void check_same(dtk::testing::Checks& check, const std::string& name, const Matrix& initial,
                const Matrix& reference, const Matrix& actual) {
  const bool same_shape = actual.shape() == reference.shape();
  check.that(same_shape, name + ": shape differs from the (1, 1) run");
  if (!same_shape) return;
  const double weight_error = relative_error(actual, reference);
  const double change_error = relative_error(actual - initial, reference - initial);
  check.that(weight_error <= 1e-5,
             name + ": relative error " + std::to_string(weight_error) + " > 1e-5");
  check.that(change_error <= 1e-4, name + ": relative error of the change made by training " +
                                       std::to_string(change_error) + " > 1e-4");
}

void check_layout(int mp_size, int dp_size, bool megatron) {
  dtk::testing::on_every_rank(kRanks, [&](dtk::testing::Checks& check) {
    const DataSet data = make_data();
    dtk::Communicator world;
    const int rank = world.Get_rank();

    // The reference: every rank alone, at (1, 1), on the whole of every global batch.
    const dtk::Communicator alone = world.Split(/*color=*/rank, /*key=*/0);
    const Weights initial = full_weights(dtk::MLP(alone, {1, 1, false}));
    const Weights reference = train(alone, {1, 1, false}, data);

    // The layout under test, on sub-communicators of mp_size * dp_size ranks.
    const int ranks = mp_size * dp_size;
    const dtk::Communicator layout = world.Split(/*color=*/rank / ranks, /*key=*/rank % ranks);
    const Weights actual = train(layout, {mp_size, dp_size, megatron}, data);

    check_same(check, "fc1 W", initial.w1, reference.w1, actual.w1);
    check_same(check, "fc1 b", initial.b1, reference.b1, actual.b1);
    check_same(check, "fc2 W", initial.w2, reference.w2, actual.w2);
    check_same(check, "fc2 b", initial.b2, reference.b2, actual.b2);
  });
}

}  // namespace

TEST_CASE("kit | training: naive mp=2, dp=1 ends with the weights of mp=1, dp=1", "[training]") {
  check_layout(2, 1, false);
}

TEST_CASE("kit | training: naive mp=1, dp=2 ends with the weights of mp=1, dp=1", "[training]") {
  check_layout(1, 2, false);
}

TEST_CASE("kit | training: naive mp=2, dp=2 ends with the weights of mp=1, dp=1", "[training]") {
  check_layout(2, 2, false);
}

TEST_CASE("kit | training: Megatron mp=2, dp=1 ends with the weights of mp=1, dp=1", "[training]") {
  check_layout(2, 1, true);
}

TEST_CASE("kit | training: Megatron mp=1, dp=2 ends with the weights of mp=1, dp=1", "[training]") {
  check_layout(1, 2, true);
}

TEST_CASE("kit | training: Megatron mp=2, dp=2 ends with the weights of mp=1, dp=1", "[training]") {
  check_layout(2, 2, true);
}
