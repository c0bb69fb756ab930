// Parts 4 and 5: the training cost of a Llama-class model and the compute-optimal N and D.
// You implement these functions in model_training_cost_analysis.cpp; handout.md, Parts 4–5,
// states the counting conventions exactly (follow them: every answer is then unique).
#pragma once

#include <cstdint>
#include <string>

#include "dtk/not_implemented.hpp"  // what the stubs throw until you write them

namespace dtk {

// Part 4
struct TrainingCost {
  // Every trainable parameter of the model, exact.
  std::int64_t num_parameters;
  // FLOPs of the forward pass of ONE transformer layer (batch 1, full context), in 10^12.
  double num_tflops;
  // That layer's fp16 weights + the activations it saves for its backward pass, in 10^9 bytes.
  double peak_memory_gb;
};

// Reads a Hugging Face config.json and returns the model's cost. A config with model_type
// "gpt2" is read with GPT-2's keys; any other (or none) with Llama's keys, so Llama and the
// models that share its keys (Mistral, Qwen2, ...) are all supported. Optional keys fall back
// as Hugging Face does (num_key_value_heads = heads; tie_word_embeddings = false for llama, true
// for gpt2; n_inner = 4 * n_embd; gpt2's n_ctx = n_positions).
// The head width is h / a (h must be a multiple of a); a "head_dim" key is ignored.
// Throws std::runtime_error, with one line naming the file and the problem, for a missing
// file, malformed JSON, a missing key, a malformed key (a size that is not a JSON integer > 0:
// a string, a fraction, zero or negative; a tie_word_embeddings that is not true/false; a
// model_type that is not a string), or a hidden size that is not a multiple of the heads.
// Llama-7B (starter/llama_7b_config.json): 6738415616 parameters, 0.897648164864 TFLOPs,
// 0.942686208 GB.
TrainingCost model_training_cost_analysis(const std::string& model_config_path);

// Part 5
struct OptimalND {
  double N;  // parameters
  double D;  // training tokens
};

// The compute-optimal model size and data size for a training budget of C FLOPs (C > 0):
// minimises L(N, D) = 406.4 / N^0.34 + 410.7 / D^0.29 + 1.69 subject to 6 * N * D = C.
// For C = 1.23e22: N ≈ 8.1765e9, D ≈ 2.5072e11.
OptimalND get_optimal_N_D(double training_budget_flops);

}  // namespace dtk
