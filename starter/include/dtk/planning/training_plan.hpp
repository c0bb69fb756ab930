// Part 13 (provided): a training run's layout, what plan_training chooses and
// simulate_training_step judges.
//
// The GPUs form a grid of tp × cp × pp × dp, placed tensor-parallel fastest, then context,
// then data, then pipeline parallel slowest (rank = tp_idx + tp · (cp_idx + cp · (dp_idx + dp ·
// pp_idx)), Megatron-LM's order): the tp ranks of a group are neighbours on one node, a
// pipeline's stages are farthest apart. Expert parallelism is carved out of data parallelism:
// the experts of each layer are split over ep consecutive data-parallel ranks (ep divides dp
// and the number of experts), as gpt_train does.
#pragma once

#include <string>

namespace dtk {

struct TrainingPlan {
  int tp = 1, cp = 1, pp = 1, dp = 1, ep = 1;
  int microbatches = 1;  // per data-parallel replica and step: b = sequences / (dp · microbatches)
  int zero_stage = 0;    // Part 9: 0 (plain data parallelism) to 3
  bool sequence_parallel = false;  // Part 10.4 (with tp > 1)
  bool recompute = false;          // keep each layer's input only, recompute the rest
  std::string schedule = "1f1b";   // Part 8: "1f1b" or "gpipe"
};

// "tp=8 cp=1 pp=2 dp=4 ep=1 microbatches=16 zero=1 sp recompute 1f1b": every field, in this
// order ("sp" and "recompute" only when on).
std::string plan_text(const TrainingPlan& plan);

}  // namespace dtk
