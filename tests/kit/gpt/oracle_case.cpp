// One batch through the kit's GPT, written as JSON for check_oracle.py to replay in PyTorch:
// the configuration, the batch, every parameter's value and gradient, the logits and the loss.
//
// usage: kit_gpt_oracle_case float|double gpt2|llama KV_HEADS EXPERTS TOP_K OUT.json
// (KV_HEADS: a Llama's key/value heads, 0 for as many as the 4 heads.) Every parameter is drawn
// at random (norm weights around 1) rather than left at its starting value, so that no term of
// the model is hidden by a zero or a one.
#include <dtk/gpt/gpt.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

namespace {

using dtk::gpt::Gpt;
using dtk::gpt::GptBatch;
using dtk::gpt::GptConfig;

template <class M>
nlohmann::json values(const M& m) {
  return nlohmann::json(std::vector<double>(m.begin(), m.end()));
}

template <class T>
nlohmann::json run(const GptConfig& config) {
  Gpt<T> model(config, dtk::gpt::one_rank_layout(config), 1234);
  std::mt19937 rng(99);
  std::normal_distribution<double> normal(0.0, 0.3);
  for (dtk::gpt::Parameter<T>* p : model.parameters()) {
    const bool norm_weight =
        p->name.find("ln") != std::string::npos && p->name.find(".weight") != std::string::npos;
    for (T& v : p->value) v = T((norm_weight ? 1.0 : 0.0) + normal(rng));
  }
  GptBatch batch;
  batch.batch = 3;
  const int seq = config.seq_len - 4;  // fewer positions than the model knows
  for (int s = 0; s < seq; ++s) batch.positions.push_back(s);
  batch.tokens.resize({std::size_t(batch.batch * seq)});
  batch.targets.resize({std::size_t(batch.batch * seq)});
  std::uniform_int_distribution<int> token(0, config.vocab_size - 1);
  for (auto& t : batch.tokens) t = token(rng);
  for (auto& t : batch.targets) t = token(rng);
  batch.loss_tokens = batch.batch * seq;

  const dtk::gpt::GptLoss loss = model.forward(batch);
  model.zero_grad();
  model.backward();

  nlohmann::json out;
  out["config"] = {{"arch", dtk::gpt::architecture_name(config.arch)},
                   {"kv_heads", config.key_value_heads()},
                   {"rope_theta", config.rope_theta},
                   {"vocab_size", config.vocab_size},
                   {"seq_len", config.seq_len},
                   {"layers", config.layers},
                   {"hidden", config.hidden},
                   {"heads", config.heads},
                   {"experts", config.experts},
                   {"top_k", config.top_k},
                   {"aux_loss_coef", config.aux_loss_coef},
                   {"layer_norm_eps", config.layer_norm_eps}};
  out["batch"] = batch.batch;
  out["positions"] = batch.positions;
  out["tokens"] = std::vector<int>(batch.tokens.begin(), batch.tokens.end());
  out["targets"] = std::vector<int>(batch.targets.begin(), batch.targets.end());
  out["loss"] = loss.cross_entropy_sum / batch.loss_tokens + loss.aux_loss;
  out["logits"] = values(model.logits());
  for (dtk::gpt::Parameter<T>* p : model.parameters()) {
    out["parameters"][p->name] = {{"shape", {p->value.shape(0), p->value.shape(1)}},
                                  {"value", values(p->value)},
                                  {"grad", values(p->grad)}};
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::cerr << "usage: kit_gpt_oracle_case float|double gpt2|llama KV_HEADS EXPERTS TOP_K "
                 "OUT.json\n";
    return 2;
  }
  GptConfig config;
  config.vocab_size = 64;
  config.seq_len = 12;
  config.layers = 2;
  config.hidden = 32;
  config.heads = 4;
  config.arch = std::string(argv[2]) == "llama" ? dtk::gpt::Architecture::Llama
                                                : dtk::gpt::Architecture::Gpt2;
  config.kv_heads = std::stoi(argv[3]);
  config.experts = std::stoi(argv[4]);
  config.top_k = std::stoi(argv[5]);
  config.aux_loss_coef = 0.05;
  const std::string dtype = argv[1];
  const nlohmann::json out = dtype == "double" ? run<double>(config) : run<float>(config);
  std::ofstream(argv[6]) << out.dump() << "\n";
  return 0;
}
