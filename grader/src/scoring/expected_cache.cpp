#include "scoring/expected_cache.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

namespace dtk::grade {

namespace {

using nlohmann::json;

json to_json(const Value& v) {
  return {{"kind", static_cast<int>(v.kind)},
          {"dtype", v.dtype},
          {"shape", v.shape},
          {"values", v.values},
          {"integer", v.integer},
          {"part", v.part}};
}

Value value_of(const json& j) {
  Value v;
  v.kind = static_cast<Value::Kind>(j.at("kind").get<int>());
  v.dtype = j.at("dtype").get<std::string>();
  v.shape = j.at("shape").get<std::vector<std::size_t>>();
  v.values = j.at("values").get<std::vector<double>>();
  v.integer = j.at("integer").get<long long>();
  v.part = j.at("part").get<std::string>();
  return v;
}

json to_json(const TestOutput& o) {
  json values = json::array(), mistakes = json::array();
  for (const auto& [name, value] : o.values) values.push_back({name, to_json(value)});
  for (const Mistake& m : o.mistakes)
    mistakes.push_back(
        {{"value", m.value}, {"description", m.description}, {"wrong", to_json(m.wrong)}});
  json evidence = json::array();
  for (const auto& [name, value] : o.evidence) evidence.push_back({name, to_json(value)});
  return {{"complete", o.complete},
          {"timed_out", o.timed_out},
          {"crash_signal", o.crash_signal},
          {"exited", o.exited},
          {"tampered", o.tampered},
          {"restart_after", o.restart_after},
          {"notes", o.notes},
          {"outcomes", o.outcomes},
          {"values", values},
          {"errors", o.errors},
          {"forbidden", o.forbidden},
          {"mistakes", mistakes},
          {"evidence", evidence},
          {"moved", o.moved},
          {"received", o.received},
          {"least_received", o.least_received}};
}

TestOutput output_of(const json& j) {
  TestOutput o;
  o.complete = j.at("complete").get<bool>();
  o.timed_out = j.at("timed_out").get<bool>();
  o.crash_signal = j.at("crash_signal").get<int>();
  o.exited = j.at("exited").get<bool>();
  o.tampered = j.at("tampered").get<bool>();
  o.restart_after = j.at("restart_after").get<bool>();
  o.notes = j.at("notes").get<std::vector<std::string>>();
  o.outcomes = j.at("outcomes").get<std::vector<std::string>>();
  for (const json& pair : j.at("values"))
    o.values.emplace_back(pair.at(0).get<std::string>(), value_of(pair.at(1)));
  for (const json& pair : j.at("evidence"))
    o.evidence.emplace_back(pair.at(0).get<std::string>(), value_of(pair.at(1)));
  o.errors = j.at("errors").get<std::vector<std::string>>();
  o.forbidden = j.at("forbidden").get<std::vector<std::string>>();
  for (const json& m : j.at("mistakes")) {
    o.mistakes.push_back({m.at("value").get<std::string>(), m.at("description").get<std::string>(),
                          value_of(m.at("wrong"))});
  }
  o.moved = j.at("moved").get<long long>();
  o.received = j.at("received").get<long long>();
  o.least_received = j.at("least_received").get<long long>();
  return o;
}

std::string path_of(const std::string& dir, const std::string& key) {
  return dir + "/expected-" + key + ".json";
}

}  // namespace

std::map<std::string, TestRun> load_expected(const std::string& dir, const std::string& key) {
  std::ifstream file(path_of(dir, key));
  if (!file) return {};
  try {
    const json saved = json::parse(file);
    std::map<std::string, TestRun> runs;
    for (const auto& [id, run] : saved.items()) {
      TestRun& loaded = runs[id];
      loaded.finished = run.at("finished").get<bool>();
      loaded.problem = run.at("problem").get<std::string>();
      loaded.rerun = run.at("rerun").get<std::string>();
      for (const json& rank : run.at("ranks")) loaded.ranks.push_back(output_of(rank));
    }
    return runs;
  } catch (const json::exception&) {
    return {};  // half-written or from another version: computed again
  }
}

void save_expected(const std::string& dir, const std::string& key,
                   const std::map<std::string, TestRun>& runs) {
  json saved = json::object();
  for (const auto& [id, run] : runs) {
    json ranks = json::array();
    for (const TestOutput& rank : run.ranks) ranks.push_back(to_json(rank));
    saved[id] = {{"finished", run.finished},
                 {"problem", run.problem},
                 {"rerun", run.rerun},
                 {"ranks", ranks}};
  }
  const std::string path = path_of(dir, key);
  const std::string temporary = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream file(temporary, std::ios::trunc);
    file << saved.dump(-1, ' ', false, json::error_handler_t::replace);
    if (!file.flush()) return;  // not saved: the next grading computes them again
  }
  std::rename(temporary.c_str(), path.c_str());
}

}  // namespace dtk::grade
