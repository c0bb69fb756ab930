#include "compile/toolchain.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "check_registry.hpp"

namespace dtk::grade {

namespace {

std::vector<std::string> non_empty(const std::vector<std::string>& items) {
  std::vector<std::string> kept;
  for (const std::string& item : items) {
    if (!item.empty()) kept.push_back(item);
  }
  return kept;
}

}  // namespace

Toolchain load_toolchain(const std::string& data_dir) {
  const std::string path = data_dir + "/toolchain.json";
  std::ifstream file(path);
  if (!file) {
    throw std::runtime_error(path +
                             " is missing: build the kit first (make, or cmake --build "
                             "<build> --target dtk-grade)");
  }
  Toolchain toolchain;
  try {
    const nlohmann::json json = nlohmann::json::parse(file);
    toolchain.compiler = json.at("compiler").get<std::string>();
    toolchain.flags = non_empty(json.at("flags").get<std::vector<std::string>>());
    toolchain.defines = non_empty(json.at("defines").get<std::vector<std::string>>());
    toolchain.include_dirs = non_empty(json.at("include_dirs").get<std::vector<std::string>>());
    toolchain.dtk_include_dir = json.at("dtk_include_dir").get<std::string>();
    toolchain.pch = json.at("pch").get<std::string>();
    toolchain.student_files = json.at("student_files").get<std::vector<std::string>>();
    toolchain.optimized_files = json.at("optimized_files").get<std::vector<std::string>>();
    toolchain.optimized_flags = json.at("optimized_flags").get<std::vector<std::string>>();
    for (const auto& [assignment, files] : json.at("assignments").items())
      toolchain.assignment_files[std::stoi(assignment)] = files.get<std::vector<std::string>>();
    toolchain.starter_dir = json.at("starter_dir").get<std::string>();
    toolchain.reference_dir = json.at("reference_dir").get<std::string>();
    const auto starter = json.at("starter_objects").get<std::vector<std::string>>();
    const auto reference = json.at("reference_objects").get<std::vector<std::string>>();
    if (starter.size() != toolchain.student_files.size() || reference.size() != starter.size()) {
      throw std::runtime_error("one prebuilt object per student file expected");
    }
    for (std::size_t i = 0; i < starter.size(); ++i) {
      toolchain.starter_objects[toolchain.student_files[i]] = starter[i];
      toolchain.reference_objects[toolchain.student_files[i]] = reference[i];
    }
    for (const auto& provided : json.at("provided_parts")) {
      toolchain.provided_parts[provided.at("part").get<int>()].push_back(
          provided.at("object").get<std::string>());
    }
    toolchain.runner = json.at("runner").get<std::string>();
    toolchain.source_dir = json.at("source_dir").get<std::string>();
    toolchain.binary_dir = json.at("binary_dir").get<std::string>();
  } catch (const std::exception& error) {
    throw std::runtime_error(path + " is malformed (" + error.what() + "): rebuild the kit");
  }
  load_checks_json(data_dir + "/checks.json");  // the hidden checks the runner registers
  toolchain.configs_dir = data_dir + "/configs";
  toolchain.manifests_dir = data_dir + "/manifests";
  for (const auto& [file_name, object] : toolchain.starter_objects) {
    if (!std::filesystem::exists(object) || !std::filesystem::exists(toolchain.runner)) {
      throw std::runtime_error(
          object + " or " + toolchain.runner +
          " is missing: build the kit first (cmake --build <build> --target dtk-grade)");
    }
  }
  return toolchain;
}

std::string Toolchain::manifest(int assignment) const {
  return manifests_dir + "/assignment" + std::to_string(assignment) + ".json";
}

}  // namespace dtk::grade
