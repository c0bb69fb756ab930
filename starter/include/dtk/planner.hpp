// Part 13 (assignment 3, optional): plan a training run. You implement plan_training in
// planner/planner.cpp.
//
// Given a model (a Hugging Face config.json, Part 4's keys; a mixture of experts adds
// "num_local_experts" and "num_experts_per_tok"), a cluster (a JSON file, see
// dtk/planning/cluster_config.hpp) and a global batch of global_batch_tokens tokens in
// sequences of seq_len, choose the layout of the training run: tensor, context, pipeline, data
// and expert parallelism, the micro-batches, the ZeRO stage, sequence parallelism,
// recomputation and the pipeline schedule (TrainingPlan, dtk/planning/training_plan.hpp).
//
// The judge is the provided simulator, simulate_training_step (dtk/planning/simulator.hpp):
// a plan must be valid (its sizes fit the model and the cluster, its memory the GPU's) and is
// scored by its MFU, the share of the GPUs' peak FLOPs the step's model FLOPs use. Read
// src/planning/simulator.cpp: every term of its cost says which Part it comes from, and that
// is what a good plan trades off.
//
// The grader runs plan_training on models and clusters you have not seen (dense models and
// mixtures of experts of several sizes, 8 to 4,096 GPUs, small and large batches). On each
// case an invalid plan scores 0; a valid one scores by its MFU against the best the kit's own
// search finds, in tiers (handout, Part 13). Each call must return within about a second: the
// grader compiles your file without optimisation (-O0; the simulator is optimised) and stops a
// call after 2 s. Your build compiles it with -O3: `cmake -S . -B build-O0
// -DCMAKE_BUILD_TYPE=Debug` builds everything at -O0 (the simulator too: slower than the grader),
// and build-O0/tests/test_planner times your search there (handout, 13.3).
#pragma once

#include <string>

#include "dtk/not_implemented.hpp"  // what the stubs throw until you write them
#include "dtk/planning/cluster_config.hpp"
#include "dtk/planning/model_config.hpp"
#include "dtk/planning/simulator.hpp"
#include "dtk/planning/training_plan.hpp"

namespace dtk {

// Reads the two files (load_model_config, load_cluster_config: a missing or malformed file
// throws their std::runtime_error), and returns the plan with the highest MFU you can find
// among the valid ones. When no plan fits the GPUs' memory, it still returns a plan, the one
// closest to fitting: of the plans that break no rule of the layout, the one that needs the
// least memory (it scores 0, as every plan would; plan_training, the program, shows what it
// lacks). Throws std::invalid_argument when no plan could train the batch (seq_len < 1,
// global_batch_tokens not a positive multiple of seq_len).
TrainingPlan plan_training(const std::string& model_config_path,
                           const std::string& cluster_config_path, double global_batch_tokens,
                           int seq_len);

}  // namespace dtk
