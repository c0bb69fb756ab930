// Parts 4 and 5: the training cost of a Llama-class model and the compute-optimal N and D.
// Declared in include/dtk/model_training_cost_analysis.hpp; handout.md, Parts 4–5, gives the
// counting conventions.
#include <dtk/model_training_cost_analysis.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace dtk {

TrainingCost model_training_cost_analysis(const std::string& model_config_path) {
  // TODO (Part 4): read a Hugging Face config.json and count, following handout.md Part 4
  // exactly (its conventions make every answer unique; the table there breaks Llama-7B down).
  //  1. Read the file: std::ifstream, then nlohmann::json::parse(file). When something is wrong
  //     throw std::runtime_error with one line naming the problem and the path: no such file,
  //     not valid JSON (parse throws nlohmann::json::parse_error), a missing or malformed key
  //     (handout 4.1 defines malformed), or a hidden size that is not a multiple of the heads.
  //     model_type "gpt2" means GPT-2's keys; any other model_type string, or none, Llama's.
  //  2. Read the shape: config.contains("key") tests for a key, and
  //     config.at("key").get<std::int64_t>() reads one. Llama and GPT-2 name their keys
  //     differently; optional keys fall back as Hugging Face does (the handout lists them),
  //     and a key set to null counts as absent.
  //  3. num_parameters: embeddings + num_hidden_layers * (one layer) + final norm + output head.
  //     Count in std::int64_t: 7e9 does not fit in an int. Rotary position embeddings have no
  //     parameters; a tied output head reuses the embedding matrix and adds nothing.
  //  4. num_tflops: the forward pass of ONE layer at batch 1 over the full context s. Only
  //     matrix products count, 2 FLOPs per multiply-add. Hint: a token passing through a weight
  //     matrix with k entries costs 2k FLOPs. Divide by 1e12.
  //  5. peak_memory_gb: that layer's weights plus the activations it saves for the backward
  //     pass (the handout lists them), 2 bytes each (fp16), divided by 1e9.
  throw NotImplemented("model_training_cost_analysis", "model_training_cost_analysis.cpp");
}

OptimalND get_optimal_N_D(double training_budget_flops) {
  // TODO (Part 5): minimise L(N, D) = 406.4 / N^0.34 + 410.7 / D^0.29 + 1.69 over the curve
  // 6 * N * D = training_budget_flops. Use the constraint to write D in terms of N, so that L
  // depends on N alone; set dL/dN = 0 and solve on paper: N comes out as a constant times a
  // power of the budget. No numerical search is needed (std::pow is enough).
  // Check yourself: 6 * N * D must equal the budget, and moving N a little either way (with D
  // following the constraint) must make L larger.
  throw NotImplemented("get_optimal_N_D", "model_training_cost_analysis.cpp");
}

}  // namespace dtk
