// Parts 4 and 5 public tests: the cost of Llama-7B and the compute-optimal N and D. One rank:
//   ./build/tests/test_cost_analysis
#include "dtk_test.hpp"

#include <dtk/model_training_cost_analysis.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>

#include <unistd.h>  // getpid

namespace {

constexpr int kRanks = 1;  // serial; tests/public/CMakeLists.txt reads the rank count here

const std::string kLlama7bConfig = std::string(DTK_STARTER_DIR) + "/llama_7b_config.json";
constexpr double kRtol = 1e-3;  // 0.1%

// Records a failure unless |actual - expected| <= kRtol * |expected|.
void check_close(dtk::testing::Checks& check, const std::string& what, double expected,
                 double actual) {
  if (std::abs(actual - expected) <= kRtol * std::abs(expected)) return;
  std::ostringstream text;
  text << std::setprecision(12) << what << ": expected " << expected << " (within 0.1%), got "
       << actual;
  check.that(false, text.str());
}

// Writes `text` to a fresh file in the temporary directory; removes it when it goes.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text)
      : path_(std::filesystem::temp_directory_path() /
              ("dtk_" + std::to_string(getpid()) + "_" + name)) {
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// The scaling law of Part 5.
double loss(double N, double D) {
  return 406.4 / std::pow(N, 0.34) + 410.7 / std::pow(D, 0.29) + 1.69;
}

}  // namespace

TEST_CASE("Part 4 | Llama-7B: number of parameters", "[part4]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    const dtk::TrainingCost cost = dtk::model_training_cost_analysis(kLlama7bConfig);
    check.equal("num_parameters of Llama-7B", 6'738'415'616LL, cost.num_parameters);
  });
}

TEST_CASE("Part 4 | Llama-7B: TFLOPs of one layer's forward pass", "[part4]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    const dtk::TrainingCost cost = dtk::model_training_cost_analysis(kLlama7bConfig);
    check_close(check, "num_tflops of Llama-7B", 0.897648164864, cost.num_tflops);
  });
}

TEST_CASE("Part 4 | Llama-7B: peak memory of one layer's forward pass", "[part4]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    const dtk::TrainingCost cost = dtk::model_training_cost_analysis(kLlama7bConfig);
    check_close(check, "peak_memory_gb of Llama-7B", 0.942686208, cost.peak_memory_gb);
  });
}

TEST_CASE("Part 4 | GPT-2 small: number of parameters (biases, LayerNorm, tied head)", "[part4]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // GPT-2 small's config.json as Hugging Face publishes it (n_inner null: 4 * n_embd).
    const TempFile config("gpt2_config.json", R"({
      "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
      "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768,
      "n_head": 12, "n_inner": null, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257
    })");
    const dtk::TrainingCost cost = dtk::model_training_cost_analysis(config.path());
    check.equal("num_parameters of GPT-2 small", 124'439'808LL, cost.num_parameters);
  });
}

TEST_CASE("Part 4 | a missing file or malformed JSON throws std::runtime_error", "[part4]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    const TempFile malformed("malformed_config.json", R"({"hidden_size": 4096,})");
    const std::string missing = kLlama7bConfig + ".does-not-exist";
    for (const std::string& path : {missing, malformed.path()}) {
      try {
        dtk::model_training_cost_analysis(path);
        check.that(false, "model_training_cost_analysis(\"" + path +
                              "\") returned instead of throwing std::runtime_error");
      } catch (const std::runtime_error&) {
        // expected (its message should name the problem)
      }
    }
  });
}

TEST_CASE("Part 5 | the compute-optimal N and D for a budget of 1.23e22 FLOPs", "[part5]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    const dtk::OptimalND optimum = dtk::get_optimal_N_D(1.23e22);
    check_close(check, "N for 1.23e22 FLOPs", 8.1765e9, optimum.N);
    check_close(check, "D for 1.23e22 FLOPs", 2.5072e11, optimum.D);
  });
}

TEST_CASE("Part 5 | the optimum spends the whole budget: 6 N D = C", "[part5]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    for (const double budget : {1e18, 1e20, 1.23e22, 5.76e23, 1e25}) {
      const dtk::OptimalND optimum = dtk::get_optimal_N_D(budget);
      std::ostringstream what;
      what << "6 * N * D for a budget of " << budget << " FLOPs";
      check_close(check, what.str(), budget, 6 * optimum.N * optimum.D);
    }
  });
}

TEST_CASE("Part 5 | the optimum beats its neighbours on the budget curve", "[part5]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    for (const double budget : {1e20, 1.23e22, 1e25}) {
      const dtk::OptimalND optimum = dtk::get_optimal_N_D(budget);
      const double best = loss(optimum.N, optimum.D);
      // Move N by a factor, D by its inverse: 6 N D stays equal to the budget.
      for (const double factor : {0.5, 0.9, 0.99, 1.01, 1.1, 2.0}) {
        const double N = optimum.N * factor, D = budget / (6 * N);
        std::ostringstream what;
        what << std::setprecision(10) << "budget " << budget << ": L(N, D) = " << best
             << " at your optimum, but L = " << loss(N, D) << " at N * " << factor
             << " (D following 6 N D = C)";
        check.that(loss(N, D) > best, what.str());
      }
    }
  });
}
