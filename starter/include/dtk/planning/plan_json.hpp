// A TrainingPlan (training_plan.hpp) as JSON: what plan_training --json writes and gpt_train
// --plan reads, so that a plan chosen for this machine (a core standing for a GPU) can be run.
//
//   {"tp": 2, "cp": 1, "pp": 2, "dp": 1, "ep": 1, "microbatches": 4, "zero_stage": 0,
//    "sequence_parallel": true, "recompute": false, "schedule": "1f1b"}
#pragma once

#include <string>

#include "dtk/planning/training_plan.hpp"

namespace dtk {

// The plan as one JSON object, every field by its name in TrainingPlan.
std::string plan_json(const TrainingPlan& plan);

// A plan from such an object; the fields it leaves out keep TrainingPlan's defaults. Throws
// std::invalid_argument with one sentence naming the field (or the JSON's problem): not an
// object, an unknown field, a count below 1 (zero_stage: outside 0 to 3), a flag that is not
// true or false, a schedule but "1f1b" or "gpipe".
TrainingPlan plan_from_json(const std::string& text);

}  // namespace dtk
