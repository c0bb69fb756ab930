#include "dtk/planning/cluster_config.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace dtk {

namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& problem) {
  throw std::runtime_error("cluster config \"" + path + "\": " + problem);
}

}  // namespace

ClusterConfig load_cluster_config(const std::string& path) {
  auto fail = [&](const std::string& problem) { refuse(path, problem); };
  std::ifstream file(path);
  if (!file || std::filesystem::is_directory(path)) fail("cannot be read (no such file?)");
  const nlohmann::json keys = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (!keys.is_object()) fail("is not a JSON object");
  const std::set<std::string> known = {"about",           "gpus",        "gpus_per_node",
                                       "peak_tflops",     "memory_gb",   "intra_node_gbps",
                                       "inter_node_gbps", "gemm_tflops", "intra_node_us",
                                       "inter_node_us",   "value_bytes", "expert_gemm_tflops"};
  for (const auto& [key, value] : keys.items()) {
    if (!known.count(key)) fail("unknown key \"" + key + "\" (a typo?)");
  }
  // A number > 0; a key with a default may be left out.
  auto positive = [&](const std::string& key, double fallback) {
    if (!keys.contains(key)) {
      if (fallback == 0) fail("missing key \"" + key + "\"");
      return fallback;
    }
    if (!keys[key].is_number() || !(keys[key].get<double>() > 0))
      fail("\"" + key + "\" must be a number > 0, not " + keys[key].dump());
    return keys[key].get<double>();
  };
  auto count = [&](const std::string& key, double fallback) {
    const double value = positive(key, fallback);
    if (!keys.value(key, nlohmann::json(1)).is_number_integer())
      fail("\"" + key + "\" must be a whole number, not " + keys[key].dump());
    return static_cast<int>(value);
  };
  ClusterConfig c{
      count("gpus", 0),         count("gpus_per_node", 0),      positive("peak_tflops", 0),
      positive("memory_gb", 0), positive("intra_node_gbps", 0), positive("inter_node_gbps", 0)};
  c.gemm_tflops = positive("gemm_tflops", 0.75 * c.peak_tflops);
  c.expert_gemm_tflops = positive("expert_gemm_tflops", c.gemm_tflops);
  c.intra_node_us = positive("intra_node_us", c.intra_node_us);
  c.inter_node_us = positive("inter_node_us", c.inter_node_us);
  c.value_bytes = count("value_bytes", c.value_bytes);
  if (c.gpus > c.gpus_per_node && c.gpus % c.gpus_per_node != 0)
    fail("gpus (" + std::to_string(c.gpus) + ") must be a multiple of gpus_per_node (" +
         std::to_string(c.gpus_per_node) + "): whole nodes");
  if (c.value_bytes != 2 && c.value_bytes != 4) fail("\"value_bytes\" must be 2 or 4");
  return c;
}

}  // namespace dtk
