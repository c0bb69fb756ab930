#include "dtk/planning/training_plan.hpp"

namespace dtk {

std::string plan_text(const TrainingPlan& p) {
  std::string text =
      "tp=" + std::to_string(p.tp) + " cp=" + std::to_string(p.cp) + " pp=" + std::to_string(p.pp) +
      " dp=" + std::to_string(p.dp) + " ep=" + std::to_string(p.ep) +
      " microbatches=" + std::to_string(p.microbatches) + " zero=" + std::to_string(p.zero_stage);
  if (p.sequence_parallel) text += " sp";
  if (p.recompute) text += " recompute";
  return text + " " + p.schedule;
}

}  // namespace dtk
