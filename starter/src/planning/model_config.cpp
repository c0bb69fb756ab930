#include "dtk/planning/model_config.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace dtk {

namespace {

using nlohmann::json;

// The keys of one config file, each read with the file's name in every error.
class ConfigKeys {
 public:
  explicit ConfigKeys(const std::string& path) : path_(path) {
    std::ifstream file(path);
    if (!file || std::filesystem::is_directory(path)) fail("cannot be read (no such file?)");
    keys_ = json::parse(file, nullptr, /*allow_exceptions=*/false);
    if (!keys_.is_object()) fail("is not a JSON object");
  }

  // A size: a JSON integer > 0; absent or null gives `fallback` (0: the key is required).
  std::int64_t size(const std::string& key, std::int64_t fallback = 0) const {
    if (!keys_.contains(key) || keys_[key].is_null()) {
      if (fallback == 0) fail("missing key \"" + key + "\"");
      return fallback;
    }
    const json& value = keys_[key];
    if (!value.is_number_integer() || value.get<std::int64_t>() <= 0)
      fail("\"" + key + "\" must be a positive integer, not " + value.dump());
    return value.get<std::int64_t>();
  }

  bool flag(const std::string& key, bool fallback) const {
    if (!keys_.contains(key) || keys_[key].is_null()) return fallback;
    if (!keys_[key].is_boolean()) fail("\"" + key + "\" must be true or false");
    return keys_[key].get<bool>();
  }

  // A factor: a JSON number >= 1; absent or null gives 1.
  double factor(const std::string& key) const {
    if (!keys_.contains(key) || keys_[key].is_null()) return 1;
    const json& value = keys_[key];
    if (!value.is_number() || value.get<double>() < 1)
      fail("\"" + key + "\" must be a number of at least 1, not " + value.dump());
    return value.get<double>();
  }

  std::string text(const std::string& key, const std::string& fallback) const {
    if (!keys_.contains(key) || keys_[key].is_null()) return fallback;
    if (!keys_[key].is_string()) fail("\"" + key + "\" must be a string");
    return keys_[key].get<std::string>();
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw std::runtime_error("model config \"" + path_ + "\": " + problem);
  }

 private:
  std::string path_;
  json keys_;
};

}  // namespace

ModelConfig load_model_config(const std::string& path) {
  const ConfigKeys keys(path);
  ModelConfig m;
  m.name = std::filesystem::path(path).stem().string();
  m.gpt2 = keys.text("model_type", "llama") == "gpt2";
  m.vocab = keys.size("vocab_size");
  if (m.gpt2) {  // Part 4's table: GPT-2's keys and defaults
    m.hidden = keys.size("n_embd");
    m.intermediate = keys.size("n_inner", 4 * m.hidden);
    m.layers = keys.size("n_layer");
    m.heads = keys.size("n_head");
    m.kv_heads = m.heads;
    m.positions = keys.size("n_positions");
    m.tied = keys.flag("tie_word_embeddings", true);
  } else {
    m.hidden = keys.size("hidden_size");
    m.intermediate = keys.size("intermediate_size");
    m.layers = keys.size("num_hidden_layers");
    m.heads = keys.size("num_attention_heads");
    m.kv_heads = keys.size("num_key_value_heads", m.heads);
    m.tied = keys.flag("tie_word_embeddings", false);
  }
  m.experts = keys.size("num_local_experts", 1);
  m.experts_per_token = keys.size("num_experts_per_tok", 1);
  m.capacity_factor = keys.factor("capacity_factor");
  if (m.hidden % m.heads != 0)
    keys.fail("the hidden size is not a multiple of the number of attention heads");
  if (m.heads % m.kv_heads != 0)
    keys.fail("the attention heads are not a multiple of the key/value heads");
  if (m.experts_per_token > m.experts)
    keys.fail("num_experts_per_tok is larger than num_local_experts");
  return m;
}

ParameterCounts parameter_counts(const ModelConfig& m) {
  const double h = m.hidden, i = m.intermediate, kvd = m.kv_dim(), V = m.vocab;
  // Part 4.2: Q and O are h × h, K and V h × kvd; Llama's MLP has three h × i matrices,
  // GPT-2's two; an RMSNorm has h weights, a LayerNorm 2h; GPT-2's linear layers have biases.
  const double attention = 2 * h * h + 2 * h * kvd + (m.gpt2 ? 2 * h + 2 * kvd : 0);
  const double expert = m.gpt2 ? 2 * h * i + i + h : 3 * h * i;
  const double norm = m.gpt2 ? 2 * h : h;
  const double router = m.mixture_of_experts() ? h * m.experts : 0;  // Part 12
  ParameterCounts p;
  p.layer_shared = attention + 2 * norm + router;
  p.layer_experts = m.experts * expert;
  p.embedding = (V + m.positions) * h;
  p.final_norm = norm;
  p.output_head = V * h;
  const double head = p.final_norm + (m.tied ? 0 : p.output_head);
  p.total = p.embedding + m.layers * (p.layer_shared + p.layer_experts) + head;
  p.active = p.embedding + m.layers * (p.layer_shared + m.experts_per_token * expert) + head;
  return p;
}

LayerFlops layer_flops_per_token(const ModelConfig& m, double seq_len) {
  const double h = m.hidden, i = m.intermediate, kvd = m.kv_dim();
  const double mlps = m.experts_per_token * (m.gpt2 ? 2 : 3) * h * i;
  const double matrices =
      2 * h * h + 2 * h * kvd + mlps + (m.mixture_of_experts() ? h * m.experts : 0);
  return {2 * matrices, 4 * seq_len * h, m.mixture_of_experts() ? 2 * mlps : 0};
}

double head_flops_per_token(const ModelConfig& m) { return 2.0 * m.hidden * m.vocab; }

double training_flops(const ModelConfig& m, double tokens, double seq_len) {
  const LayerFlops layer = layer_flops_per_token(m, seq_len);
  const double forward = m.layers * (layer.projections + layer.attention) + head_flops_per_token(m);
  return 3 * forward * tokens;  // the backward pass computes twice the forward's products
}

}  // namespace dtk
