#include "manifest.hpp"

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

namespace dtk::grade {

namespace {

using nlohmann::json;

// Reads one JSON object, refusing keys it does not know (a typo must not pass silently).
class Reader {
 public:
  Reader(const json& object, std::string where, std::set<std::string> known)
      : object_(object), where_(std::move(where)) {
    if (!object.is_object()) fail("must be a JSON object");
    for (const auto& [key, value] : object.items()) {
      if (!known.count(key)) fail("unknown key \"" + key + "\"");
    }
  }

  bool has(const std::string& key) const { return object_.contains(key); }

  const json& get(const std::string& key) const {
    if (!has(key)) fail("missing key \"" + key + "\"");
    return object_.at(key);
  }

  template <class T>
  T value(const std::string& key, T fallback) const {
    if (!has(key)) return fallback;
    try {
      return object_.at(key).get<T>();
    } catch (const json::exception&) {
      fail("\"" + key + "\" has the wrong type: " + object_.at(key).dump());
    }
  }

  int positive(const std::string& key, int fallback) const {
    const int v = value<int>(key, fallback);
    if (v <= 0) fail("\"" + key + "\" must be positive");
    return v;
  }

  std::vector<std::string> strings(const std::string& key) const {
    const std::vector<std::string> none;
    return value<std::vector<std::string>>(key, none);
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw ManifestError(where_ + ": " + problem);
  }

 private:
  const json& object_;
  std::string where_;
};

void read_tests(const json& entries, const std::string& where, Part& part) {
  if (!entries.is_array() || entries.empty()) {
    throw ManifestError(where + ": \"tests\" must be a non-empty list");
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Reader entry(entries[i], where + ", tests[" + std::to_string(i) + "]",
                       {"function", "cases", "public"});
    const std::string function = entry.value<std::string>("function", "");
    const std::vector<std::string> cases = entry.strings("cases");
    const std::vector<std::string> public_cases = entry.strings("public");
    if (cases.empty()) entry.fail("\"cases\" must list at least one case");
    std::set<std::string> seen;
    for (const std::string& text : cases) {
      PlannedTest planned;
      try {
        planned.test = parse_test_case(function, text);
      } catch (const std::invalid_argument& error) {
        entry.fail(error.what());
      }
      if (!seen.insert(planned.test.id()).second)
        entry.fail("case \"" + text + "\" is listed twice");
      for (const std::string& p : public_cases) planned.is_public |= p == text;
      part.tests.push_back(planned);
    }
    for (const std::string& p : public_cases) {
      bool listed = false;
      for (const std::string& text : cases) listed |= p == text;
      if (!listed) entry.fail("public case \"" + p + "\" is not one of its \"cases\"");
    }
    part.functions.push_back(function);
  }
}

}  // namespace

Manifest load_manifest(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw ManifestError(path + ": cannot be read");
  json root;
  try {
    root = json::parse(file);
  } catch (const json::parse_error& error) {
    throw ManifestError(path + ": not valid JSON: " + error.what());
  }
  const Reader top(root, path,
                   {"about", "max_ranks", "timeouts", "limits", "tolerances", "visibility",
                    "allowed_mpi", "forbidden_symbols", "parts"});
  Manifest manifest;
  manifest.max_ranks = top.positive("max_ranks", manifest.max_ranks);
  manifest.visibility = top.value<std::string>("visibility", manifest.visibility);
  const std::set<std::string> visibilities = {"visible", "hidden", "after_due_date",
                                              "after_published"};
  if (!visibilities.count(manifest.visibility)) {
    top.fail("\"visibility\" must be visible, hidden, after_due_date or after_published");
  }
  if (top.has("timeouts")) {
    const Reader t(top.get("timeouts"), path + ", timeouts",
                   {"group_seconds", "test_seconds", "compile_seconds"});
    manifest.group_seconds = t.positive("group_seconds", manifest.group_seconds);
    manifest.test_seconds = t.positive("test_seconds", manifest.test_seconds);
    manifest.compile_seconds = t.positive("compile_seconds", manifest.compile_seconds);
  }
  if (top.has("limits")) {
    const Reader l(top.get("limits"), path + ", limits",
                   {"address_space_mb", "file_size_mb", "processes", "output_kb",
                    "compiler_address_space_mb", "compilers_at_once", "audit_output_mb"});
    manifest.address_space_mb = l.positive("address_space_mb", manifest.address_space_mb);
    manifest.file_size_mb = l.positive("file_size_mb", manifest.file_size_mb);
    manifest.processes = l.positive("processes", manifest.processes);
    manifest.output_kb = l.positive("output_kb", manifest.output_kb);
    manifest.compiler_address_space_mb =
        l.positive("compiler_address_space_mb", manifest.compiler_address_space_mb);
    manifest.compilers_at_once = l.positive("compilers_at_once", manifest.compilers_at_once);
    manifest.audit_output_mb = l.positive("audit_output_mb", manifest.audit_output_mb);
  }
  if (top.has("tolerances")) {
    const Reader t(top.get("tolerances"), path + ", tolerances", {"float", "double", "real"});
    manifest.float_rtol = t.value<double>("float", manifest.float_rtol);
    manifest.double_rtol = t.value<double>("double", manifest.double_rtol);
    manifest.real_rtol = t.value<double>("real", manifest.real_rtol);
  }
  for (const std::string& call : top.strings("allowed_mpi")) manifest.allowed_mpi.insert(call);
  for (const std::string& s : top.strings("forbidden_symbols"))
    manifest.forbidden_symbols.insert(s);

  const json& parts = top.get("parts");
  if (!parts.is_array() || parts.empty()) top.fail("\"parts\" must be a non-empty list");
  std::set<int> numbers;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string where = path + ", parts[" + std::to_string(i) + "]";
    const Reader p(parts[i], where,
                   {"part", "title", "points", "file", "optional", "enabled", "tests"});
    Part part;
    part.number = p.positive("part", 0);
    if (!numbers.insert(part.number).second)
      p.fail("part " + std::to_string(part.number) + " twice");
    part.title = p.value<std::string>("title", "");
    part.points = p.value<double>("points", -1);
    if (part.points < 0) p.fail("\"points\" must be a number >= 0");
    part.file = p.value<std::string>("file", "");
    part.optional = p.value<bool>("optional", false);
    read_tests(p.get("tests"), where, part);
    if (p.value<bool>("enabled", true)) manifest.parts.push_back(std::move(part));
  }
  return manifest;
}

}  // namespace dtk::grade
