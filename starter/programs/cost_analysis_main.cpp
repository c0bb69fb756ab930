// Parts 4 and 5 from the command line: prints what your dtk::model_training_cost_analysis and
// dtk::get_optimal_N_D return. It uses no MPI: run it directly, without mpirun.
//
//   ./build/model_training_cost_analysis --model_config starter/llama_7b_config.json
//   ./build/model_training_cost_analysis --training_budget 1.23e22
//
// Exit status: 0 on success; 2 for a bad command line or a bad config (one line on stderr
// names the problem); 1 if a function is not implemented yet.
#include <dtk/model_training_cost_analysis.hpp>

#include <cmath>
#include <iomanip>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

namespace {

constexpr const char* kProgram = "model_training_cost_analysis";

constexpr const char* kUsage =
    "usage: model_training_cost_analysis [--model_config PATH] [--training_budget FLOPS]\n"
    "  --model_config PATH      a Hugging Face config.json (llama or gpt2): prints the number of\n"
    "                           parameters, and the TFLOPs and peak memory of one layer's\n"
    "                           forward pass\n"
    "  --training_budget FLOPS  a training budget in FLOPs, e.g. 1.23e22: prints the\n"
    "                           compute-optimal model size N and number of tokens D\n"
    "Give one option or both.\n";

// A mistake on the command line: reported in one line, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  bool help = false;
  std::optional<std::string> model_config;
  std::optional<double> training_budget;
};

// The whole of `text` must be a positive, finite number ("1.23e22", "5e21", "100").
double parse_budget(const std::string& text) {
  const std::string problem = "--training_budget: \"" + text + "\" is ";
  double value = 0;
  std::size_t used = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::out_of_range&) {
    throw UsageError(problem + "out of range");
  } catch (const std::invalid_argument&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    throw UsageError(problem + "not a number (write FLOPs, e.g. 1.23e22)");
  }
  if (!std::isfinite(value) || value <= 0) {
    throw UsageError(problem + "not a positive number of FLOPs");
  }
  return value;
}

Options parse_arguments(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      options.help = true;
      continue;
    }
    if (flag != "--model_config" && flag != "--training_budget") {
      throw UsageError("unknown argument \"" + flag + "\" (try --help)");
    }
    if (i + 1 == argc || std::string(argv[i + 1]).rfind("--", 0) == 0) {
      throw UsageError(flag + " needs a value");
    }
    const std::string value = argv[++i];
    if (flag == "--model_config") {
      options.model_config = value;
    } else {
      options.training_budget = parse_budget(value);
    }
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = parse_arguments(argc, argv);
    if (options.help) {
      std::cout << kUsage;
      return 0;
    }
    if (!options.model_config && !options.training_budget) {
      std::cerr << kUsage;
      return 2;
    }

    // Compute everything first, so that an error leaves no partial output behind.
    std::optional<dtk::TrainingCost> cost;
    std::optional<dtk::OptimalND> optimum;
    if (options.model_config) cost = dtk::model_training_cost_analysis(*options.model_config);
    if (options.training_budget) optimum = dtk::get_optimal_N_D(*options.training_budget);

    if (cost) {
      std::cout << std::setprecision(12) << "Number of parameters: " << cost->num_parameters
                << "\nNumber of TFLOPs: " << cost->num_tflops
                << "\nPeak memory cost: " << cost->peak_memory_gb << " GBs\n";
    }
    if (optimum) {
      std::cout << std::setprecision(6) << "Optimal N: " << optimum->N
                << "\nOptimal D: " << optimum->D << "\n";
    }
    return 0;
  } catch (const dtk::NotImplemented& error) {
    std::cerr << kProgram << ": " << error.what() << "\n";
    return 1;
  } catch (const std::exception& error) {
    // UsageError, or std::runtime_error from a missing file, malformed JSON, a missing key...
    std::cerr << kProgram << ": " << error.what() << "\n";
    return 2;
  } catch (...) {
    std::cerr << kProgram << ": unexpected exception (not a std::exception)\n";
    return 1;
  }
}
