#include "check_registry.hpp"

#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace dtk::grade {

namespace {

std::vector<CheckInfo>& registry() {
  static std::vector<CheckInfo> checks;
  return checks;
}

constexpr CaseKind kKinds[] = {CaseKind::layout, CaseKind::config,   CaseKind::budget,
                               CaseKind::buffer, CaseKind::pipeline, CaseKind::zero,
                               CaseKind::fields, CaseKind::plan};

CaseKind kind_named(const std::string& name) {
  for (CaseKind kind : kKinds) {
    if (name == kind_name(kind)) return kind;
  }
  throw std::runtime_error("unknown kind of check \"" + name + "\"");
}

}  // namespace

void register_check(CheckInfo check) {
  if (find_check(check.function))
    throw std::logic_error("two checks registered for \"" + check.function + "\"");
  registry().push_back(std::move(check));
}

const std::vector<CheckInfo>& all_checks() { return registry(); }

const CheckInfo* find_check(const std::string& function) {
  for (const CheckInfo& check : registry()) {
    if (function == check.function) return &check;
  }
  return nullptr;
}

const char* kind_name(CaseKind kind) {
  switch (kind) {
    case CaseKind::layout:
      return "layout";
    case CaseKind::config:
      return "config";
    case CaseKind::budget:
      return "budget";
    case CaseKind::buffer:
      return "buffer";
    case CaseKind::pipeline:
      return "pipeline";
    case CaseKind::zero:
      return "zero";
    case CaseKind::fields:
      return "fields";
    case CaseKind::plan:
      return "plan";
  }
  return "?";
}

std::string checks_json() {
  nlohmann::json checks = nlohmann::json::array();
  for (const CheckInfo& check : all_checks()) {
    checks.push_back({{"function", check.function},
                      {"kind", kind_name(check.kind)},
                      {"collective", check.collective},
                      {"typed", check.typed},
                      {"result_parts", check.result_parts},
                      {"reduces", check.reduces},
                      {"timed_against", check.timed_against},
                      {"case_words", check.case_words},
                      {"sending_shared", check.sending_shared},
                      {"derived", check.derived}});
  }
  return checks.dump(2) + "\n";
}

void load_checks_json(const std::string& path) {
  static std::string loaded;  // dtk-grade reads its toolchain, and so this file, more than once
  if (path == loaded) return;
  std::ifstream file(path);
  if (!file) throw std::runtime_error(path + " is missing: build the kit first (make)");
  try {
    for (const nlohmann::json& entry : nlohmann::json::parse(file)) {
      register_check({entry.at("function").get<std::string>(),
                      kind_named(entry.at("kind").get<std::string>()),
                      entry.at("collective").get<bool>(), entry.at("typed").get<bool>(),
                      entry.at("result_parts").get<std::vector<std::string>>(),
                      entry.at("reduces").get<bool>(), entry.at("timed_against").get<std::string>(),
                      entry.at("case_words").get<std::vector<std::string>>(),
                      entry.at("sending_shared").get<bool>(), entry.at("derived").get<bool>()});
    }
  } catch (const std::exception& error) {
    throw std::runtime_error(path + " is malformed (" + error.what() + "): rebuild the kit");
  }
  loaded = path;
}

}  // namespace dtk::grade
