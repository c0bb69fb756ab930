#include "manifest.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "text.hpp"

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

  template <class T>
  T required(const std::string& key) const {
    get(key);  // says which key is missing
    return value<T>(key, T{});
  }

  int positive(const std::string& key, int fallback) const {
    const int v = value<int>(key, fallback);
    if (v <= 0) fail("\"" + key + "\" must be positive");
    return v;
  }

  int required_positive(const std::string& key) const {
    get(key);
    return positive(key, 0);
  }

  double required_fraction(const std::string& key) const {
    const double v = required<double>(key);
    if (!(v > 0 && v < 1)) fail("\"" + key + "\" must be a number between 0 and 1");
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

// Adds the case `text` of `function` to the part's tests (once) and returns its id.
std::string add_case(const Reader& entry, const std::string& function, const std::string& text,
                     Part& part) {
  PlannedTest planned;
  try {
    planned.test = parse_test_case(function, text);
  } catch (const std::invalid_argument& error) {
    entry.fail(error.what());
  }
  const std::string id = planned.test.id();
  for (const PlannedTest& known : part.tests) {
    if (known.test.id() == id) return id;
  }
  part.tests.push_back(planned);
  return id;
}

void read_rubric(const Reader& entry, const std::string& function,
                 const std::vector<std::string>& cases, const std::string& where, Part& part) {
  const CheckInfo& check = *find_check(function);
  if (!entry.has("rubric"))
    entry.fail("\"rubric\" is missing: list what " + function +
               " must get right, each with a weight");
  const json& items = entry.get("rubric");
  if (!items.is_array() || items.empty()) entry.fail("\"rubric\" must be a non-empty list");
  std::set<std::string> names;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Reader r(items[i], where + ", rubric[" + std::to_string(i) + "]",
                   {"item", "weight", "cases"});
    RubricItem item;
    item.function = function;
    item.name = r.value<std::string>("item", "");
    if (item.name.empty()) r.fail("\"item\" must name what is checked");
    if (!names.insert(item.name).second) r.fail("item \"" + item.name + "\" is listed twice");
    item.weight = r.value<double>("weight", -1);
    if (!(item.weight > 0)) r.fail("\"weight\" must be a number > 0");
    const std::vector<std::string> own = r.strings("cases");
    for (const std::string& text : r.has("cases") ? own : cases)
      item.cases.push_back(add_case(r, function, text, part));
    if (item.cases.empty()) r.fail("\"cases\" must list at least one case");
    for (const std::string& result_part : check.result_parts)
      item.whole_result &= item.name != result_part;
    part.rubric.push_back(item);
  }
  for (const std::string& result_part : check.result_parts) {
    if (!names.count(result_part))
      entry.fail("the rubric has no item \"" + result_part + "\" (every part of " + function +
                 "'s result needs one)");
  }
}

Tiers read_tiers(const json& object, const std::string& where) {
  const Reader r(object, where, {"value", "levels", "leaderboard"});
  Tiers tiers;
  tiers.value = r.required<std::string>("value");
  if (tiers.value.empty()) r.fail("\"value\" must name the value the check records");
  const json& levels = r.get("levels");
  if (!levels.is_array() || levels.empty()) r.fail("\"levels\" must be a non-empty list");
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const Reader l(levels[i], where + ", levels[" + std::to_string(i) + "]", {"at_least", "share"});
    const TierLevel level{l.required<double>("at_least"), l.required<double>("share")};
    if (!(level.at_least > 0)) l.fail("\"at_least\" must be a ratio > 0");
    if (!(level.share > 0 && level.share <= 1)) l.fail("\"share\" must be in (0, 1]");
    if (!tiers.levels.empty() &&
        !(level.at_least < tiers.levels.back().at_least && level.share < tiers.levels.back().share))
      l.fail("levels must be listed best first (\"at_least\" and \"share\" decreasing)");
    tiers.levels.push_back(level);
  }
  tiers.leaderboard = r.required<std::string>("leaderboard");
  return tiers;
}

void read_tests(const json& entries, const std::string& where, Part& part) {
  if (!entries.is_array() || entries.empty()) {
    throw ManifestError(where + ": \"tests\" must be a non-empty list");
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string entry_where = where + ", tests[" + std::to_string(i) + "]";
    const Reader entry(entries[i], entry_where, {"function", "cases", "public", "rubric", "tiers"});
    const std::string function = entry.value<std::string>("function", "");
    if (!find_check(function)) entry.fail("no hidden test checks \"" + function + "\"");
    const std::vector<std::string> cases = entry.strings("cases");
    if (cases.empty()) entry.fail("\"cases\" must list at least one case");
    std::set<std::string> seen;
    for (const std::string& text : cases) {
      if (!seen.insert(add_case(entry, function, text, part)).second)
        entry.fail("case \"" + text + "\" is listed twice");
    }
    read_rubric(entry, function, cases, entry_where, part);
    if (entry.has("tiers"))
      part.tiers[function] = read_tiers(entry.get("tiers"), entry_where + ", tiers");
    for (const std::string& text : entry.strings("public")) {
      bool listed = false;
      for (PlannedTest& planned : part.tests) {
        if (planned.test.function == function && planned.test.case_text() == text)
          listed = planned.is_public = true;
      }
      if (!listed) entry.fail("public case \"" + text + "\" is not one of its cases");
    }
    part.functions.push_back(function);
  }
}

std::set<std::string> string_set(const Reader& reader, const std::string& key) {
  const std::vector<std::string> list = reader.strings(key);
  return {list.begin(), list.end()};
}

SpeedBonus read_speed_bonus(const json& object, const std::string& where, const Part& part) {
  const Reader r(object, where,
                 {"functions", "bytes", "ranks", "repetitions", "max_spread", "max_busy", "tiers",
                  "leaderboard"});
  SpeedBonus bonus;
  bonus.functions = r.strings("functions");
  if (bonus.functions.empty()) r.fail("\"functions\" must list the functions timed");
  for (const std::string& function : bonus.functions) {
    const CheckInfo* check = find_check(function);
    if (check == nullptr || check->timed_against.empty())
      r.fail("\"" + function + "\" cannot be timed (only functions with an MPI counterpart)");
    bool graded = false;
    for (const std::string& f : part.functions) graded |= f == function;
    if (!graded) r.fail("\"" + function + "\" is not one of this part's functions");
  }
  bonus.bytes = static_cast<std::size_t>(r.required_positive("bytes"));
  bonus.ranks = r.required_positive("ranks");
  if (bonus.ranks < 2) r.fail("\"ranks\" must be at least 2");
  bonus.repetitions = r.required_positive("repetitions");
  bonus.max_spread = r.required<double>("max_spread");
  if (!(bonus.max_spread > 0)) r.fail("\"max_spread\" must be a number > 0");
  bonus.max_busy = r.required<double>("max_busy");
  if (!(bonus.max_busy > 0 && bonus.max_busy <= 1))
    r.fail(
        "\"max_busy\" must be a share of the machine's CPU time, in (0, 1] (1: never "
        "deferred)");
  const json& tiers = r.get("tiers");
  if (!tiers.is_array() || tiers.empty()) r.fail("\"tiers\" must be a non-empty list");
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    const Reader t(tiers[i], where + ", tiers[" + std::to_string(i) + "]", {"within", "points"});
    SpeedTier tier{t.required<double>("within"), t.required<double>("points")};
    if (!(tier.within >= 1)) t.fail("\"within\" must be a time ratio >= 1");
    if (!(tier.points > 0)) t.fail("\"points\" must be > 0");
    if (!bonus.tiers.empty() && !(tier.within > bonus.tiers.back().within))
      t.fail("tiers must be listed best first (\"within\" increasing)");
    bonus.tiers.push_back(tier);
  }
  bonus.leaderboard = r.required<bool>("leaderboard");
  return bonus;
}

json read_json(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw ManifestError(path + ": cannot be read");
  try {
    return json::parse(file);
  } catch (const json::parse_error& error) {
    throw ManifestError(path + ": not valid JSON: " + error.what());
  }
}

// A manifest with the file it includes ("include": a path relative to the manifest's directory,
// e.g. the kit's common.json) merged in: the keys of both, each defined once, and the file each
// top-level key comes from (for the messages).
struct MergedManifest {
  json root;
  std::map<std::string, std::string> file_of;
};

MergedManifest read_merged(const std::string& path) {
  MergedManifest merged{read_json(path), {}};
  if (!merged.root.is_object()) throw ManifestError(path + ": must be a JSON object");
  for (const auto& [key, value] : merged.root.items()) merged.file_of[key] = path;
  if (!merged.root.contains("include")) return merged;
  const json& include = merged.root["include"];
  if (!include.is_string() || include.get<std::string>().empty())
    throw ManifestError(path + ": \"include\" must name a file, e.g. \"common.json\"");
  const std::filesystem::path named = include.get<std::string>();
  const std::string included =
      (named.is_absolute() ? named : std::filesystem::path(path).parent_path() / named).string();
  if (!std::filesystem::exists(included))
    throw ManifestError(included + ": cannot be read (" + path + " includes it: a copy of a " +
                        "manifest needs the file it includes beside it)");
  const json base = read_json(included);
  if (!base.is_object()) throw ManifestError(included + ": must be a JSON object");
  for (const auto& [key, value] : base.items()) {
    if (key == "include") throw ManifestError(included + ": an included file includes no other");
    if (key == "about") continue;  // each file says what it is
    if (merged.root.contains(key)) {
      throw ManifestError("\"" + key + "\" is defined in both " + path + " and " + included +
                          ": keep one");
    }
    merged.root[key] = value;
    merged.file_of[key] = included;
  }
  merged.root.erase("include");
  return merged;
}

}  // namespace

Manifest load_manifest(const std::string& path) {
  const MergedManifest merged = read_merged(path);
  const json& root = merged.root;
  // Where a key's value is: its file, for the messages.
  auto in = [&](const std::string& key) {
    const auto found = merged.file_of.find(key);
    return (found == merged.file_of.end() ? path : found->second) + ", " + key;
  };
  const Reader top(root, path,
                   {"about", "assignment", "max_ranks", "timeouts", "limits", "tolerances",
                    "visibility", "allowed_mpi", "allowed_communicator", "forbidden_symbols",
                    "forbidden_call_costs", "parts"});
  Manifest manifest;
  manifest.assignment = top.required_positive("assignment");
  manifest.max_ranks = top.required_positive("max_ranks");
  manifest.visibility = top.required<std::string>("visibility");
  const std::set<std::string> visibilities = {"visible", "hidden", "after_due_date",
                                              "after_published"};
  if (!visibilities.count(manifest.visibility)) {
    top.fail("\"visibility\" must be visible, hidden, after_due_date or after_published");
  }
  const Reader t(top.get("timeouts"), in("timeouts"),
                 {"group_seconds", "test_seconds", "retry_test_seconds", "compile_seconds"});
  manifest.timeouts.group_seconds = t.required_positive("group_seconds");
  manifest.timeouts.test_seconds = t.required_positive("test_seconds");
  manifest.timeouts.retry_test_seconds = t.required_positive("retry_test_seconds");
  if (manifest.timeouts.retry_test_seconds < manifest.timeouts.test_seconds)
    t.fail(
        "\"retry_test_seconds\" must be at least \"test_seconds\": a test run again alone "
        "gets more time, never less");
  manifest.timeouts.compile_seconds = t.required_positive("compile_seconds");
  const Reader l(top.get("limits"), in("limits"),
                 {"address_space_mb", "file_size_mb", "processes", "output_kb", "total_memory_mb",
                  "disk_mb", "compiler_address_space_mb", "compilers_at_once", "audit_output_mb"});
  manifest.limits.address_space_mb = l.required_positive("address_space_mb");
  manifest.limits.file_size_mb = l.required_positive("file_size_mb");
  manifest.limits.processes = l.required_positive("processes");
  manifest.limits.output_kb = l.required_positive("output_kb");
  manifest.limits.total_memory_mb = l.required_positive("total_memory_mb");
  manifest.limits.disk_mb = l.required_positive("disk_mb");
  manifest.build.compiler_address_space_mb = l.required_positive("compiler_address_space_mb");
  manifest.build.compilers_at_once = l.required_positive("compilers_at_once");
  manifest.build.audit_output_mb = l.required_positive("audit_output_mb");
  const Reader tol(top.get("tolerances"), in("tolerances"), {"float", "double", "real"});
  manifest.tolerances.float_rtol = tol.required_fraction("float");
  manifest.tolerances.double_rtol = tol.required_fraction("double");
  manifest.tolerances.real_rtol = tol.required_fraction("real");
  // An empty list is a choice; a missing one is a mistake.
  top.get("allowed_mpi");
  top.get("allowed_communicator");
  top.get("forbidden_symbols");
  const std::set<std::string> allowed_mpi = string_set(top, "allowed_mpi");
  const std::set<std::string> allowed_communicator = string_set(top, "allowed_communicator");
  manifest.forbidden_symbols = string_set(top, "forbidden_symbols");
  manifest.forbidden_call_costs = top.required<std::string>("forbidden_call_costs");
  if (manifest.forbidden_call_costs != "part" && manifest.forbidden_call_costs != "function")
    top.fail("\"forbidden_call_costs\" must be \"part\" or \"function\"");

  const json& parts = top.get("parts");
  if (!parts.is_array() || parts.empty()) top.fail("\"parts\" must be a non-empty list");
  std::set<int> numbers;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string where = path + ", parts[" + std::to_string(i) + "]";
    const Reader p(parts[i], where,
                   {"part", "title", "points", "file", "optional", "enabled", "tests",
                    "allowed_mpi", "allowed_communicator", "speed_bonus"});
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
    part.allowed_mpi = p.has("allowed_mpi") ? string_set(p, "allowed_mpi") : allowed_mpi;
    part.allowed_communicator = p.has("allowed_communicator")
                                    ? string_set(p, "allowed_communicator")
                                    : allowed_communicator;
    if (p.has("speed_bonus"))
      part.speed_bonus = read_speed_bonus(p.get("speed_bonus"), where + ", speed_bonus", part);
    if (p.value<bool>("enabled", true)) {
      manifest.parts.push_back(std::move(part));
    } else {
      manifest.disabled_parts.push_back(part.number);
    }
  }
  return manifest;
}

void keep_only_parts(Manifest& manifest, const std::set<int>& numbers) {
  std::vector<int> graded;
  for (const Part& part : manifest.parts) graded.push_back(part.number);
  for (const int number : numbers) {
    if (std::find(graded.begin(), graded.end(), number) != graded.end()) continue;
    const std::string assignment = "assignment " + std::to_string(manifest.assignment);
    const bool disabled = std::find(manifest.disabled_parts.begin(), manifest.disabled_parts.end(),
                                    number) != manifest.disabled_parts.end();
    throw std::invalid_argument((disabled
                                     ? "Part " + std::to_string(number) + " of " + assignment +
                                           " is not assigned (\"enabled\": false in its manifest)"
                                     : assignment + " has no Part " + std::to_string(number)) +
                                "; its graded parts are " + spoken_list(graded));
  }
  std::vector<Part> kept;
  for (Part& part : manifest.parts) {
    if (numbers.count(part.number)) kept.push_back(std::move(part));
  }
  manifest.parts = std::move(kept);
}

}  // namespace dtk::grade
