// Kit self-test of the provided MlpStage, the kit's MLP cut into pipeline stages (Part 8). Run by
// the reference run_pipeline_schedule over pipelines of 1 to 4 stages, both schedules and 1 to 8
// micro-batches, the stages' gradients equal those of the whole model on one rank on the same
// batch, and each stage holds as many micro-batches' activations as its schedule says.
//   mpirun -n 4 build/tests/kit/kit_mlp_stage
#include "dtk_test.hpp"

#include <dtk/mlp/mlp_stage.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int kRanks = 4;
constexpr std::size_t kBatch = 24;

struct Batch {
  dtk::Matrix x;
  dtk::Labels labels;
};

// Random images and labels, the same on every rank.
Batch random_batch(std::size_t rows, int in_dim, int classes) {
  std::mt19937 rng(8);
  std::normal_distribution<float> pixel(0.0f, 1.0f);
  Batch batch{dtk::Matrix({rows, static_cast<std::size_t>(in_dim)}),
              dtk::Labels::from_shape({rows})};
  for (float& value : batch.x) value = pixel(rng);
  for (std::int32_t& label : batch.labels) label = static_cast<std::int32_t>(rng() % classes);
  return batch;
}

// The whole model on one rank, the batch in one micro-batch: what every pipeline must match.
struct OneRank {
  dtk::MlpStageLayers model;
  dtk::BatchStats stats;
};

OneRank one_rank_step(const std::vector<int>& widths, const Batch& batch) {
  OneRank one{dtk::MlpStageLayers(widths, 0, static_cast<int>(widths.size()) - 1), {}};
  dtk::MlpStage step(one.model, {batch.x.shape(0), 1, 0, &batch.x, &batch.labels});
  step.forward(0, step.input_microbatch(0));
  step.backward(0, step.loss_grad(0));
  one.stats = step.stats();
  return one;
}

std::vector<double> parameter_counts(const std::vector<int>& widths) {
  std::vector<double> counts;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    counts.push_back(double(widths[l]) * widths[l + 1] + widths[l + 1]);
  }
  return counts;
}

}  // namespace

TEST_CASE("kit | MlpStage: one stage, one micro-batch, is the kit's MLP (784-256-10)", "[kit]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    const Batch batch = random_batch(kBatch, 784, 10);
    const float lr = 0.1f;
    dtk::Communicator world;
    const dtk::Communicator alone = world.Split(/*color=*/world.Get_rank(), /*key=*/0);
    dtk::MLP mlp(alone, dtk::Parallelism{});
    const dtk::BatchStats mlp_stats = mlp.train_step(batch.x, batch.labels, lr);

    OneRank one = one_rank_step({784, 256, 10}, batch);
    one.model.sgd_step(lr);
    const std::vector<dtk::DenseLayer>& layers = one.model.layers();
    check.close("fc1 W after one step", mlp.fc1().weight(), layers[0].weight, 1e-5, 1e-7);
    check.close("fc1 b after one step", mlp.fc1().bias(), layers[0].bias, 1e-5, 1e-7);
    check.close("fc2 W after one step", mlp.fc2().weight(), layers[1].weight, 1e-5, 1e-7);
    check.close("fc2 b after one step", mlp.fc2().bias(), layers[1].bias, 1e-5, 1e-7);
    check.that(std::abs(mlp_stats.loss_sum - one.stats.loss_sum) <= 1e-5 * mlp_stats.loss_sum,
               "loss: the MLP's " + std::to_string(mlp_stats.loss_sum) + ", the stage's " +
                   std::to_string(one.stats.loss_sum));
  });
}

TEST_CASE("kit | MlpStage: pipelines of 1-4 stages, GPipe and 1F1B, give the one-rank gradients",
          "[kit]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    const std::vector<int> widths = {784, 64, 48, 32, 10};
    const Batch batch = random_batch(kBatch, widths.front(), widths.back());
    const OneRank one = one_rank_step(widths, batch);

    dtk::Communicator world;
    const int rank = world.Get_rank();
    for (int p = 1; p <= kRanks; ++p) {
      // Rank r is stage r % p of pipeline r / p; with p = 3, rank 3 is a pipeline of its own.
      dtk::Communicator pp_comm = world.Split(/*color=*/rank / p, /*key=*/rank);
      const int s = pp_comm.Get_rank(), num_stages = pp_comm.Get_size();
      const std::vector<int> b = dtk::partition_layers(parameter_counts(widths), num_stages);
      for (const bool gpipe : {true, false}) {
        for (const int m : {1, 3, 8}) {
          dtk::MlpStageLayers layers(widths, b[s], b[s + 1]);
          dtk::MlpStage step(layers, {kBatch, m, 0, &batch.x, &batch.labels});
          dtk::run_pipeline_schedule(step,
                                     gpipe ? dtk::gpipe_schedule(s, num_stages, m)
                                           : dtk::one_f_one_b_schedule(s, num_stages, m),
                                     pp_comm);

          const std::string run = std::string(gpipe ? "GPipe" : "1F1B") + ", " +
                                  std::to_string(num_stages) + " stage(s), " + std::to_string(m) +
                                  " micro-batch(es), stage " + std::to_string(s) + ": ";
          for (int l = b[s]; l < b[s + 1]; ++l) {
            const dtk::DenseLayer& mine = layers.layers()[l - b[s]];
            const dtk::DenseLayer& whole = one.model.layers()[l];
            const std::string layer = run + "layer " + std::to_string(l);
            check.close(layer + " grad W", whole.grad_weight, mine.grad_weight, 1e-4, 1e-6);
            check.close(layer + " grad b", whole.grad_bias, mine.grad_bias, 1e-4, 1e-6);
          }
          if (step.is_last()) {
            check.that(
                std::abs(step.stats().loss_sum - one.stats.loss_sum) <= 1e-5 * one.stats.loss_sum,
                run + "loss " + std::to_string(step.stats().loss_sum) + ", one rank's " +
                    std::to_string(one.stats.loss_sum));
          }
          // GPipe keeps every micro-batch until the backwards start; 1F1B at most p - s.
          const int held = gpipe ? m : std::min(num_stages - s, m);
          check.equal(run + "most micro-batches stashed at once", held,
                      static_cast<long long>(step.peak_stashed_microbatches()));
        }
      }
    }
  });
}

TEST_CASE("kit | MlpStage: bad layer ranges and micro-batch counts throw std::invalid_argument",
          "[kit]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    const auto throws = [&check](const std::string& what, auto make) {
      try {
        make();
        check.that(false, what + ": no exception");
      } catch (const std::invalid_argument&) {
      }
    };
    throws("layers [1, 1)", [] { dtk::MlpStageLayers({784, 10}, 1, 1); });
    throws("layers [0, 2) of 1", [] { dtk::MlpStageLayers({784, 10}, 0, 2); });
    throws("one width", [] { dtk::MlpStageLayers({784}, 0, 1); });
    const Batch batch = random_batch(4, 784, 10);
    dtk::MlpStageLayers layers({784, 10}, 0, 1);
    throws("5 micro-batches of 4 rows", [&] {
      dtk::MlpStage(layers, {4, 5, 0, &batch.x, &batch.labels});
    });
    throws("first stage without x", [&] {
      dtk::MlpStage(layers, {4, 2, 0, nullptr, &batch.labels});
    });
  });
}
