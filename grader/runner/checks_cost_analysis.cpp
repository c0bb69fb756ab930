// Parts 4 and 5: the cost analysis of a model config and the compute-optimal N and D.
// Named configs come from grader/configs; "random llama" / "random gpt2" configs are drawn from
// the seed and written to the work directory, and so are the broken configs the function must
// refuse with std::runtime_error (the public test's error contract).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

using nlohmann::json;

// The random configs have a fixed structure (which keys, which features) and sizes drawn from
// the seed: every grading checks the same features.

// A Llama-style config with grouped-query attention and untied embeddings (the default).
json random_llama(Rng& rng) {
  const int heads = 8 << rng.uniform_int(0, 2), head_dim = 32 << rng.uniform_int(0, 2);
  return {{"model_type", "llama"},
          {"hidden_size", heads * head_dim},
          {"intermediate_size", 256 * rng.uniform_int(4, 60)},
          {"num_hidden_layers", rng.uniform_int(2, 48)},
          {"num_attention_heads", heads},
          {"num_key_value_heads", heads / (2 << rng.uniform_int(0, 1))},
          {"vocab_size", rng.uniform_int(1000, 150000)},
          {"max_position_embeddings", 256 << rng.uniform_int(0, 4)}};
}

// A GPT-2 config with n_inner null (4 n_embd) and tied embeddings (the default).
json random_gpt2(Rng& rng) {
  const int heads = 4 * rng.uniform_int(1, 4), positions = 256 << rng.uniform_int(0, 3);
  return {{"model_type", "gpt2"},
          {"n_embd", 64 * heads},
          {"n_layer", rng.uniform_int(2, 36)},
          {"n_head", heads},
          {"n_positions", positions},
          {"n_ctx", positions},
          {"n_inner", nullptr},
          {"vocab_size", rng.uniform_int(1000, 60000)}};
}

std::string write_config(CheckContext& context, const std::string& text) {
  std::string file = context.test.arg;
  for (char& c : file) c = c == ' ' ? '_' : c;
  const std::string path = context.work_dir + "/" + file + "_config.json";
  std::ofstream(path) << text << "\n";
  return path;
}

// The keys of a named config that the cost analysis reads, as they are in the file (a missing
// one takes its Hugging Face default): the feedback shows them rather than just a file name.
std::string key_values(const std::string& path) {
  std::ifstream file(path);
  const json config = json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) return "(unreadable)";
  json keys = json::object();
  for (const char* key :
       {"model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
        "num_attention_heads", "num_key_value_heads", "vocab_size", "max_position_embeddings",
        "tie_word_embeddings", "n_embd", "n_inner", "n_layer", "n_head", "n_positions", "n_ctx"}) {
    if (config.contains(key)) keys[key] = config[key];
  }
  return keys.dump();
}

std::string config_path(CheckContext& context) {
  const std::string& name = context.test.arg;
  if (name.rfind("random ", 0) != 0) {
    const std::string path = context.configs_dir + "/" + name + ".json";
    context.out.note("config " + name + ".json: " + key_values(path));
    return path;
  }
  Rng rng = context.rng("config");
  const bool llama = name.rfind("random llama", 0) == 0;
  const json config = llama ? random_llama(rng) : random_gpt2(rng);
  context.out.note("config " + config.dump());
  return write_config(context, config.dump(2));
}

// A config the function must refuse, written to the work directory (or not: "missing file").
std::string broken_config_path(CheckContext& context) {
  const std::string& broken = context.test.arg;
  if (broken == "missing file") {
    context.out.note("a config path that does not exist");
    return context.work_dir + "/no_such_config.json";
  }
  const std::string text = broken == "malformed JSON"
                               ? R"({"model_type": "llama", "hidden_size": 4096,})"
                               : R"({"model_type": "llama", "hidden_size": 4096, )"
                                 R"("intermediate_size": 11008, "num_attention_heads": 32, )"
                                 R"("vocab_size": 32000, "max_position_embeddings": 2048})";
  context.out.note("a config file holding " + text +
                   (broken == "missing key" ? " (no num_hidden_layers)" : ""));
  return write_config(context, text);
}

void check_broken_config(CheckContext& context) {
  const std::string path = broken_config_path(context);
  int outcome = 0;
  try {
    context.call([&] { model_training_cost_analysis(path); });
  } catch (const std::runtime_error&) {
    outcome = 1;
  } catch (const std::exception&) {
    outcome = 2;
  }
  context.out.part("broken configs: std::runtime_error");
  context.out.integer("throws std::runtime_error (1: it does, 0: returns, 2: throws another type)",
                      outcome);
}

std::string budget_text(double budget) {
  std::ostringstream text;
  text.precision(6);
  text << budget;
  return text.str();
}

void check_model_training_cost_analysis(CheckContext& context) {
  const std::vector<std::string>& broken = broken_configs();
  if (std::find(broken.begin(), broken.end(), context.test.arg) != broken.end()) {
    check_broken_config(context);
    return;
  }
  const std::string path = config_path(context);
  const TrainingCost cost = context.call([&] { return model_training_cost_analysis(path); });
  context.out.part("number of parameters");
  context.out.integer("num_parameters", cost.num_parameters);
  context.out.part("TFLOPs");
  context.out.real("num_tflops", cost.num_tflops);
  context.out.part("peak memory");
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
  const OptimalND optimum = context.call([&] { return get_optimal_N_D(budget); });
  context.out.part("optimal N");
  context.out.real("N", optimum.N);
  context.out.part("optimal D");
  context.out.real("D", optimum.D);
}

}  // namespace

DTK_GRADE_CHECK(check_model_training_cost_analysis,
                {"model_training_cost_analysis",
                 CaseKind::config,
                 /*collective=*/false,
                 /*typed=*/false,
                 {"number of parameters", "TFLOPs", "peak memory",
                  "broken configs: std::runtime_error"}});
DTK_GRADE_CHECK(check_get_optimal_N_D, {"get_optimal_N_D",
                                        CaseKind::budget,
                                        /*collective=*/false,
                                        /*typed=*/false,
                                        {"optimal N", "optimal D"}});

}  // namespace dtk::grade
