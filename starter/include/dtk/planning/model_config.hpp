// Part 13 (provided): the model a training run trains, read from its Hugging Face config.json
// with Part 4's keys and conventions, and what the simulator needs to know of it: its
// parameters (where they live) and its FLOPs.
//
// Two families, as in Part 4: "model_type": "gpt2" (LayerNorm, biases, an MLP of two matrices,
// learned positions) and everything else, Llama's keys (RMSNorm, no biases, the gated MLP of
// three matrices, rotary positions). A mixture of experts adds Mixtral's keys:
// "num_local_experts" (E experts replace each block's MLP) and "num_experts_per_tok" (k of them
// per token), with a router of h · E weights per layer (Part 12), and optionally the router's
// "capacity_factor" (below).
#pragma once

#include <cstdint>
#include <string>

namespace dtk {

struct ModelConfig {
  std::string name;  // the config file's name without ".json", for messages
  bool gpt2 = false;
  std::int64_t vocab = 0;              // V
  std::int64_t hidden = 0;             // h
  std::int64_t intermediate = 0;       // i, the MLP's (each expert's) inner width
  std::int64_t layers = 0;             // L
  std::int64_t heads = 0;              // a
  std::int64_t kv_heads = 0;           // key/value heads (grouped-query attention when < a)
  std::int64_t positions = 0;          // learned position embeddings (GPT-2), 0 for rotary ones
  bool tied = false;                   // the output head reuses the token embedding
  std::int64_t experts = 1;            // E (1: a dense model)
  std::int64_t experts_per_token = 1;  // k
  // Under expert parallelism, the (token, choice) rows of the fullest ep rank over the mean
  // (Switch Transformer's capacity factor): 1, the default, for a router its load-balancing loss
  // keeps even; GShard's 1.25 for a capacity; a router at its start, or a measured run's, more.
  double capacity_factor = 1;

  bool mixture_of_experts() const { return experts > 1; }
  std::int64_t kv_dim() const { return kv_heads * (hidden / heads); }  // width of K and of V
};

// Reads a config.json. Throws std::runtime_error with one line naming the file and the problem
// (missing or unreadable file, not JSON, a missing or malformed key, h not a multiple of a,
// k > E, a capacity_factor below 1).
ModelConfig load_model_config(const std::string& path);

// Part 4's count of parameters, by where they live.
struct ParameterCounts {
  double layer_shared = 0;   // one layer's weights every token uses: attention, norms, biases,
                             // the router (a mixture of experts)
  double layer_experts = 0;  // one layer's MLP weights: E experts (a dense model: its MLP)
  double embedding = 0;      // token (and learned position) embeddings: the first stage's
  double final_norm = 0;     // the last stage's
  double output_head = 0;    // V · h, the last stage's (a tied head is the embedding's matrix:
                             // counted once in total, held twice when they are on two stages)
  double total = 0;          // every parameter of the model, once
  double active = 0;         // those one token computes with (k experts instead of E)
};
ParameterCounts parameter_counts(const ModelConfig& model);

// Part 4's FLOPs (matrix products only, 2 per multiply-add, the full s × s scores without
// causal halving) of one token's forward pass through one layer, in a sequence of seq_len:
// its projections (the k experts and the router), then the scores and the weighted values.
struct LayerFlops {
  double projections = 0;  // 2 · (attention matrices + k expert MLPs + router)
  double attention = 0;    // 4 · seq_len · h: Q Kᵀ and probabilities · V
  double experts = 0;      // of projections, the k expert MLPs' (0 in a dense model)
};
LayerFlops layer_flops_per_token(const ModelConfig& model, double seq_len);
// The output head's 2 · h · V per token (the last stage's).
double head_flops_per_token(const ModelConfig& model);
// The model FLOPs of one training step on `tokens` tokens (forward, and backward twice the
// forward; recomputation is not model work): MFU's numerator.
double training_flops(const ModelConfig& model, double tokens, double seq_len);

}  // namespace dtk
