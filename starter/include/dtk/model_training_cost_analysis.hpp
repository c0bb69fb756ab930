// Parts 4 and 5: the training cost of a Llama-class model and the compute-optimal N and D.
// You implement these functions in model_training_cost_analysis.cpp; handout.md, Parts 4–5,
// states the counting conventions exactly.
#pragma once

#include <cstdint>
#include <string>

namespace dtk {

// Part 4
struct TrainingCost {
  std::int64_t num_parameters;  // every trainable parameter of the model, exact
  double num_tflops;            // forward pass of ONE transformer layer, batch 1, full context, in 10^12 FLOPs
  double peak_memory_gb;        // fp16 weights + saved activations of that layer's forward, in 10^9 bytes
};

// Reads a Hugging Face config.json (model_type "llama" or "gpt2") and returns its cost.
// Throws std::runtime_error naming the problem for a missing file, malformed JSON or a missing
// key.
TrainingCost model_training_cost_analysis(const std::string& model_config_path);

// Part 5
struct OptimalND {
  double N;  // parameters
  double D;  // training tokens
};

// Minimises L(N, D) = 406.4 / N^0.34 + 410.7 / D^0.29 + 1.69 subject to 6 * N * D = budget.
OptimalND get_optimal_N_D(double training_budget_flops);

}  // namespace dtk
