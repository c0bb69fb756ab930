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

namespace {

using nlohmann::json;

// A parsed config.json plus its path, so that every error can name the file.
class Config {
 public:
  // Throws std::runtime_error if the file is missing, unreadable or not a JSON object.
  explicit Config(const std::string& path) : path_(path) {
    if (std::filesystem::is_directory(path)) fail("is a directory, not a config file");
    if (!std::filesystem::exists(path)) fail("no such file");
    std::ifstream file(path);
    if (!file) fail("cannot be read");
    try {
      values_ = json::parse(file);
    } catch (const json::parse_error& error) {
      // what() starts with nlohmann's id, "[json.exception.parse_error.101] ": drop it.
      const std::string what = error.what();
      fail("not valid JSON: " + what.substr(what.find("] ") + 2));
    }
    if (!values_.is_object()) fail("not valid JSON: expected an object { ... } at the top level");
  }

  // Hugging Face writes an unset optional key as null ("n_inner": null): same as absent.
  bool has(const std::string& key) const {
    return values_.contains(key) && !values_.at(key).is_null();
  }

  // A size: a JSON integer > 0. A string, a fraction, zero or a negative value is malformed.
  std::int64_t positive_integer(const std::string& key) const {
    if (!has(key)) fail("missing key \"" + key + "\"");
    const json& value = values_.at(key);
    if (!value.is_number_integer() || value.get<std::int64_t>() <= 0) {
      fail("key \"" + key + "\" must be a positive integer, not " + value.dump());
    }
    return value.get<std::int64_t>();
  }

  std::int64_t positive_integer_or(const std::string& key, std::int64_t fallback) const {
    return has(key) ? positive_integer(key) : fallback;
  }

  bool boolean_or(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& value = values_.at(key);
    if (!value.is_boolean()) fail("key \"" + key + "\" must be true or false, not " + value.dump());
    return value.get<bool>();
  }

  std::string string_or(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    const json& value = values_.at(key);
    if (!value.is_string()) fail("key \"" + key + "\" must be a string, not " + value.dump());
    return value.get<std::string>();
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw std::runtime_error("model config \"" + path_ + "\": " + problem);
  }

 private:
  std::string path_;
  json values_;
};

// What the cost analysis needs to know about a decoder-only transformer.
struct Architecture {
  bool gpt2;                  // GPT-2 (LayerNorm, biases, GELU MLP) or Llama (RMSNorm, gated MLP)
  std::int64_t vocab;         // V
  std::int64_t hidden;        // h
  std::int64_t intermediate;  // i
  std::int64_t layers;        // L
  std::int64_t heads;         // a
  std::int64_t kv_dim;        // kvd = kv_heads * (h / a): the width of K and of V
  std::int64_t context;       // s
  std::int64_t positions;     // rows of the learned position table (Llama: 0, rotary)
  bool tied;                  // the output head reuses the token embedding
};

Architecture read_architecture(const Config& config) {
  Architecture m{};
  std::int64_t kv_heads = 0;
  const std::string type = config.string_or("model_type", "llama");
  if (type == "gpt2") {
    m.gpt2 = true;
    m.vocab = config.positive_integer("vocab_size");
    m.hidden = config.positive_integer("n_embd");
    m.intermediate = config.positive_integer_or("n_inner", 4 * m.hidden);
    m.layers = config.positive_integer("n_layer");
    m.heads = config.positive_integer("n_head");
    kv_heads = m.heads;
    m.positions = config.positive_integer("n_positions");
    m.context = config.positive_integer_or("n_ctx", m.positions);
    m.tied = config.boolean_or("tie_word_embeddings", true);
  } else {  // "llama", or any model that uses Llama's keys (Mistral, Qwen2, ...)
    m.gpt2 = false;
    m.vocab = config.positive_integer("vocab_size");
    m.hidden = config.positive_integer("hidden_size");
    m.intermediate = config.positive_integer("intermediate_size");
    m.layers = config.positive_integer("num_hidden_layers");
    m.heads = config.positive_integer("num_attention_heads");
    kv_heads = config.positive_integer_or("num_key_value_heads", m.heads);
    m.positions = 0;  // rotary: Q and K are rotated by angles fixed by position, no weights
    m.context = config.positive_integer("max_position_embeddings");
    m.tied = config.boolean_or("tie_word_embeddings", false);
  }
  if (m.hidden % m.heads != 0) {
    config.fail("the hidden size, " + std::to_string(m.hidden) +
                ", is not a multiple of the number of attention heads, " + std::to_string(m.heads));
  }
  m.kv_dim = kv_heads * (m.hidden / m.heads);  // a "head_dim" key is ignored: heads are h / a wide
  return m;
}

// Entries of the attention's weight matrices: Q and O are h x h, K and V are h x kvd.
std::int64_t attention_weights(const Architecture& m) {
  return 2 * m.hidden * m.hidden + 2 * m.hidden * m.kv_dim;
}

// Entries of the MLP's weight matrices: Llama's gate, up and down; GPT-2's up and down.
std::int64_t mlp_weights(const Architecture& m) {
  return (m.gpt2 ? 2 : 3) * m.hidden * m.intermediate;
}

// One norm: RMSNorm has a scale per feature; LayerNorm a scale and a shift.
std::int64_t norm_parameters(const Architecture& m) { return (m.gpt2 ? 2 : 1) * m.hidden; }

std::int64_t layer_parameters(const Architecture& m) {
  // GPT-2's linear layers have a bias per output: Q, K, V, O, MLP up and down.
  const std::int64_t biases =
      m.gpt2 ? m.hidden + 2 * m.kv_dim + m.hidden + m.intermediate + m.hidden : 0;
  return attention_weights(m) + mlp_weights(m) + biases + 2 * norm_parameters(m);
}

std::int64_t model_parameters(const Architecture& m) {
  const std::int64_t embeddings = (m.vocab + m.positions) * m.hidden;
  const std::int64_t head = m.tied ? 0 : m.vocab * m.hidden;
  return embeddings + m.layers * layer_parameters(m) + norm_parameters(m) + head;
}

// One layer's forward pass over s tokens, 2 FLOPs per multiply-add, matrix products only.
std::int64_t layer_forward_flops(const Architecture& m) {
  const std::int64_t s = m.context;
  // Every token meets every weight of a projection once: one multiply-add per weight.
  const std::int64_t projections = 2 * s * (attention_weights(m) + mlp_weights(m));
  // Q Kᵀ and probabilities · V: per head an (s x d) by (d x s) product with d = h / a, so
  // 2 s² h FLOPs each over the a heads (whatever the number of K/V heads).
  const std::int64_t attention = 2 * (2 * s * s * m.hidden);
  return projections + attention;
}

// Elements one layer keeps from its forward pass for its backward pass, over s tokens.
std::int64_t layer_saved_activations(const Architecture& m) {
  const std::int64_t h = m.hidden, i = m.intermediate, s = m.context;
  const std::int64_t probabilities = m.heads * s;  // per token: one row of s per head
  std::int64_t per_token = 0;
  if (m.gpt2) {
    // input, ln_1 output, Q, K, V, context, ln_2 output; up output, GELU output (down's input).
    per_token = 7 * h + probabilities + 2 * i;
  } else {
    // input, norm output, Q, context, residual, MLP-norm output (6h); K and V (2 kvd);
    // gate output, up output, down's input (3i).
    per_token = 6 * h + 2 * m.kv_dim + probabilities + 3 * i;
  }
  return s * per_token;
}

constexpr double kBytesPerElement = 2;  // fp16
constexpr double kTera = 1e12, kGiga = 1e9;

}  // namespace

TrainingCost model_training_cost_analysis(const std::string& model_config_path) {
  const Architecture model = read_architecture(Config(model_config_path));
  const std::int64_t peak_elements = layer_parameters(model) + layer_saved_activations(model);
  return TrainingCost{model_parameters(model),
                      static_cast<double>(layer_forward_flops(model)) / kTera,
                      kBytesPerElement * static_cast<double>(peak_elements) / kGiga};
}

OptimalND get_optimal_N_D(double training_budget_flops) {
  // L(N, D) = A / N^alpha + B / D^beta + E, minimised on the curve 6 N D = C.
  constexpr double A = 406.4, alpha = 0.34, B = 410.7, beta = 0.29;
  // Substituting D = C / (6N) and setting dL/dN = 0 gives alpha A / N^alpha = beta B / D^beta,
  // hence N = G (C/6)^(beta / (alpha + beta)) with G = (alpha A / (beta B))^(1 / (alpha + beta)).
  const double N_times_D = training_budget_flops / 6;
  const double G = std::pow(alpha * A / (beta * B), 1 / (alpha + beta));
  const double N = G * std::pow(N_times_D, beta / (alpha + beta));
  return OptimalND{N, N_times_D / N};
}

}  // namespace dtk
