#include "dtk/planning/plan_json.hpp"

#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace dtk {

namespace {

using nlohmann::json;

int count_field(const json& value, const std::string& name, int least, int most) {
  if (!value.is_number_integer() || value.get<long long>() < least ||
      value.get<long long>() > most) {
    throw std::invalid_argument("plan field \"" + name + "\" must be an integer from " +
                                std::to_string(least) + " to " + std::to_string(most) + ", not " +
                                value.dump());
  }
  return value.get<int>();
}

bool flag_field(const json& value, const std::string& name) {
  if (!value.is_boolean()) {
    throw std::invalid_argument("plan field \"" + name + "\" must be true or false, not " +
                                value.dump());
  }
  return value.get<bool>();
}

}  // namespace

std::string plan_json(const TrainingPlan& p) {
  return nlohmann::ordered_json{{"tp", p.tp},
                                {"cp", p.cp},
                                {"pp", p.pp},
                                {"dp", p.dp},
                                {"ep", p.ep},
                                {"microbatches", p.microbatches},
                                {"zero_stage", p.zero_stage},
                                {"sequence_parallel", p.sequence_parallel},
                                {"recompute", p.recompute},
                                {"schedule", p.schedule}}
      .dump(2);
}

TrainingPlan plan_from_json(const std::string& text) {
  const json plan = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (plan.is_discarded()) throw std::invalid_argument("the plan is not valid JSON");
  if (!plan.is_object()) throw std::invalid_argument("the plan is not a JSON object");
  const std::map<std::string, int TrainingPlan::*> counts = {
      {"tp", &TrainingPlan::tp}, {"cp", &TrainingPlan::cp},
      {"pp", &TrainingPlan::pp}, {"dp", &TrainingPlan::dp},
      {"ep", &TrainingPlan::ep}, {"microbatches", &TrainingPlan::microbatches}};
  const std::map<std::string, bool TrainingPlan::*> flags = {
      {"sequence_parallel", &TrainingPlan::sequence_parallel},
      {"recompute", &TrainingPlan::recompute}};
  constexpr int kMost = 1 << 20;  // more ranks or micro-batches than any run has
  TrainingPlan p;
  for (const auto& [name, value] : plan.items()) {
    if (name == "zero_stage") {
      p.zero_stage = count_field(value, name, 0, 3);
    } else if (counts.count(name)) {
      p.*counts.at(name) = count_field(value, name, 1, kMost);
    } else if (flags.count(name)) {
      p.*flags.at(name) = flag_field(value, name);
    } else if (name == "schedule") {
      if (value != "1f1b" && value != "gpipe") {
        throw std::invalid_argument("plan field \"schedule\" must be \"1f1b\" or \"gpipe\", not " +
                                    value.dump());
      }
      p.schedule = value.get<std::string>();
    } else {
      throw std::invalid_argument("the plan has an unknown field " + json(name).dump());
    }
  }
  return p;
}

}  // namespace dtk
