// Parts 4 and 5: the cost analysis of a model config and the compute-optimal N and D.
// Named configs come from grader/configs; "random llama" / "random gpt2" configs are drawn from
// the seed and written to the work directory.
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

using nlohmann::json;

// A Llama-style config; sometimes leaves out the keys that have Hugging Face defaults.
json random_llama(Rng& rng) {
  const int heads = 4 << rng.uniform_int(0, 3), head_dim = 32 << rng.uniform_int(0, 2);
  const int kv_choices[] = {1, 2, 4, heads};
  const int kv_heads = kv_choices[rng.uniform_int(0, 3)];
  json config = {{"model_type", "llama"},
                 {"hidden_size", heads * head_dim},
                 {"intermediate_size", 256 * rng.uniform_int(4, 60)},
                 {"num_hidden_layers", rng.uniform_int(2, 48)},
                 {"num_attention_heads", heads},
                 {"vocab_size", rng.uniform_int(1000, 150000)},
                 {"max_position_embeddings", 256 << rng.uniform_int(0, 4)}};
  if (kv_heads != heads || rng.uniform_int(0, 1)) config["num_key_value_heads"] = kv_heads;
  if (rng.uniform_int(0, 1))
    config["tie_word_embeddings"] = static_cast<bool>(rng.uniform_int(0, 1));
  return config;
}

json random_gpt2(Rng& rng) {
  const int heads = 4 * rng.uniform_int(1, 4), positions = 256 << rng.uniform_int(0, 3);
  json config = {{"model_type", "gpt2"},
                 {"n_embd", 64 * heads},
                 {"n_layer", rng.uniform_int(2, 36)},
                 {"n_head", heads},
                 {"n_positions", positions},
                 {"vocab_size", rng.uniform_int(1000, 60000)}};
  switch (rng.uniform_int(0, 2)) {  // n_inner: absent, null or given
    case 1:
      config["n_inner"] = nullptr;
      break;
    case 2:
      config["n_inner"] = 256 * rng.uniform_int(2, 16);
      break;
  }
  if (rng.uniform_int(0, 1)) config["n_ctx"] = positions;
  if (rng.uniform_int(0, 2) == 0)
    config["tie_word_embeddings"] = static_cast<bool>(rng.uniform_int(0, 1));
  return config;
}

std::string config_path(CheckContext& context) {
  const std::string& name = context.test.arg;
  if (name.rfind("random ", 0) != 0) {
    context.out.note("config " + name + ".json");
    return context.configs_dir + "/" + name + ".json";
  }
  Rng rng = context.rng("config");
  const bool llama = name.rfind("random llama", 0) == 0;
  const json config = llama ? random_llama(rng) : random_gpt2(rng);
  context.out.note("config " + config.dump());
  std::string file = name;
  for (char& c : file) c = c == ' ' ? '_' : c;
  const std::string path = context.work_dir + "/" + file + "_config.json";
  std::ofstream(path) << config.dump(2) << "\n";
  return path;
}

std::string budget_text(double budget) {
  std::ostringstream text;
  text.precision(6);
  text << budget;
  return text.str();
}

}  // namespace

void check_model_training_cost_analysis(CheckContext& context) {
  const TrainingCost cost = model_training_cost_analysis(config_path(context));
  context.out.integer("num_parameters", cost.num_parameters);
  context.out.real("num_tflops", cost.num_tflops);
  context.out.real("peak_memory_gb", cost.peak_memory_gb);
}

void check_get_optimal_N_D(CheckContext& context) {
  double budget = 0;
  if (context.test.arg.rfind("random", 0) == 0) {
    Rng rng = context.rng("budget");
    budget = std::pow(10.0, rng.uniform(18, 26));
  } else {
    budget = std::stod(context.test.arg);
  }
  context.out.note("training budget C = " + budget_text(budget) + " FLOPs");
  const OptimalND optimum = get_optimal_N_D(budget);
  context.out.real("N", optimum.N);
  context.out.real("D", optimum.D);
}

}  // namespace dtk::grade
