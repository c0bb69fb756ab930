// Part 13 from the command line: the program plan_training. It uses no MPI: run it directly.
//
//   ./build/plan_training --model starter/src/planning/configs/llama3_8b.json \
//       --cluster starter/src/planning/configs/h100_80gb_x64.json --tokens 4194304 --seq 8192
// prints the plan your dtk::plan_training chooses and what the simulator says of it;
//   ... --tp 8 --pp 2 --microbatches 32 --zero 1 --sp
// simulates that plan instead (dp: the GPUs left); and
//   ... --plans plans.txt
// simulates every plan of a file (one per line, as plan_text writes them: "tp=8 cp=1 pp=2 dp=4
// ep=1 microbatches=32 zero=1 sp 1f1b", fields left out take TrainingPlan's defaults, dp the
// GPUs left) and prints one CSV row per plan, for scripts (its columns: kCsvColumns); and
//   ... --json plan.json
// also writes the plan simulated as JSON (plan_json), for gpt_train --plan plan.json to run.
//
// Exit status: 0 on success; 2 for a bad command line, config or plan file (one line on stderr
// names the problem); 1 if plan_training is not implemented yet.
#include <dtk/planner.hpp>
#include <dtk/planning/plan_json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "command_line.hpp"

namespace {

using dtk::command_line::UsageError;

constexpr const char* kProgram = "plan_training";

constexpr const char* kUsage =
    "usage: plan_training --model FILE --cluster FILE --tokens N --seq S [PLAN | --plans FILE]\n"
    "  --model FILE     a Hugging Face config.json (Part 4's keys; a mixture of experts adds\n"
    "                   num_local_experts and num_experts_per_tok)\n"
    "  --cluster FILE   a cluster's JSON (include/dtk/planning/cluster_config.hpp)\n"
    "  --tokens N       the global batch, in tokens (a multiple of --seq)\n"
    "  --seq S          the sequence length\n"
    "Without PLAN: the plan your plan_training chooses, simulated. PLAN simulates a plan of your\n"
    "own (each flag defaults to TrainingPlan's value; --dp to the GPUs left):\n"
    "  --tp N --cp N --pp N --dp N --ep N --microbatches M --zero Z (0 to 3) --sp --recompute\n"
    "  --schedule 1f1b|gpipe\n"
    "  --json FILE      also write the plan simulated to FILE as JSON, for gpt_train --plan\n"
    "                   FILE to run (on this machine, a core stands for a GPU)\n"
    "  --plans FILE     simulate every plan in FILE (one per line, e.g. \"tp=8 pp=2\n"
    "                   microbatches=32 zero=1 sp 1f1b\": the fields left out take\n"
    "                   TrainingPlan's defaults, dp the GPUs left; blank lines and lines\n"
    "                   starting with # are skipped; '-' reads stdin) and print a CSV table,\n"
    "                   a header line, then one row per plan, of these columns (a plan that\n"
    "                   breaks a rule of the layout is not simulated: its numbers are 0):\n";

// The columns of --plans' CSV table, in order, and what each holds (--help prints them).
constexpr std::pair<const char*, const char*> kCsvColumns[] = {
    {"plan", "the plan, in plan_text's words"},
    {"valid", "1 if it can run; 0 if it breaks a rule or exceeds the memory"},
    {"step_seconds", "the simulated training step, seconds"},
    {"peak_memory_gb", "the fullest GPU's memory, GB"},
    {"mfu", "the MFU (over the memory: what it would reach)"},
    {"compute", "seconds of the step in matrix products (Part 4)"},
    {"tensor_parallel", "... in Megatron's f and g (Part 10)"},
    {"context_parallel", "... passing K and V round the ring (Part 11)"},
    {"expert_parallel", "... in dispatch and combine (Part 12)"},
    {"pipeline", "... sending activations between stages (Part 8)"},
    {"bubble", "... in the pipeline's bubble (Part 8)"},
    {"data_parallel", "... summing gradients, ZeRO's gathers (Parts 6, 9)"},
    {"parameters_gb", "the fullest GPU's memory of parameters, GB (Part 9)"},
    {"gradients_gb", "... of gradients"},
    {"optimizer_gb", "... of the optimizer's states"},
    {"activations_gb", "... of activations kept for the backward (Part 4)"},
    {"transient_gb", "... of transient buffers (the logits, ZeRO-3's gathered layers)"},
    {"why_invalid", "the simulator's reason, quoted (\"\" when valid)"}};

struct Options {
  bool help = false;
  std::string model, cluster, plans, json;
  double tokens = 0;
  long seq = 0;
  std::string plan;  // the plan's flags as a line of a plans file ("tp=8 sp"), "" if none
};

// The flags of a plan's integer fields, each the key of a plans file's line.
const std::set<std::string> kPlanCounts = {"--tp", "--cp",           "--pp",  "--dp",
                                           "--ep", "--microbatches", "--zero"};

Options parse_arguments(int argc, char** argv) {
  using namespace dtk::command_line;
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      o.help = true;
    } else if (flag == "--sp" || flag == "--recompute") {
      o.plan += " " + flag.substr(2);
    } else {
      if (i + 1 == argc) throw UsageError(flag + " needs a value (try --help)");
      const std::string value = argv[++i];
      if (flag == "--model") {
        o.model = value;
      } else if (flag == "--cluster") {
        o.cluster = value;
      } else if (flag == "--plans") {
        o.plans = value;
      } else if (flag == "--json") {
        o.json = value;
      } else if (flag == "--tokens") {
        o.tokens = parse_positive_number(flag, value);
      } else if (flag == "--seq") {
        o.seq = parse_positive(flag, value);
      } else if (kPlanCounts.count(flag)) {
        parse_integer(flag, value, flag == "--zero" ? 0 : 1);  // refused here with its flag
        o.plan += " " + flag.substr(2) + "=" + value;
      } else if (flag == "--schedule") {
        o.plan +=
            " " + parse_choice<std::string>(flag, value, {{"1f1b", "1f1b"}, {"gpipe", "gpipe"}});
      } else {
        throw UsageError("unknown argument \"" + flag + "\" (try --help)");
      }
    }
  }
  if (o.help) return o;
  for (const auto& [flag, missing] : {std::pair{"--model", o.model.empty()},
                                      {"--cluster", o.cluster.empty()},
                                      {"--tokens", o.tokens == 0},
                                      {"--seq", o.seq == 0}}) {
    if (missing) throw UsageError(std::string(flag) + " is required (try --help)");
  }
  if (!o.plan.empty() && !o.plans.empty())
    throw UsageError("give a plan's flags or --plans, not both");
  if (!o.json.empty() && !o.plans.empty())
    throw UsageError("--json writes one plan: not with --plans");
  return o;
}

// One line of a plans file, "tp=8 cp=1 pp=2 dp=4 ep=1 microbatches=32 zero=1 sp recompute 1f1b":
// the fields it leaves out keep TrainingPlan's defaults, but dp, which takes the GPUs that tp,
// cp and pp leave.
dtk::TrainingPlan parse_plan_line(const std::string& line, const dtk::ClusterConfig& cluster) {
  dtk::TrainingPlan plan;
  bool dp_given = false;
  std::istringstream words(line);
  for (std::string word; words >> word;) {
    const std::size_t equals = word.find('=');
    const std::string key = word.substr(0, equals);
    if (equals == std::string::npos) {
      if (word == "sp") {
        plan.sequence_parallel = true;
      } else if (word == "recompute") {
        plan.recompute = true;
      } else if (word == "1f1b" || word == "gpipe") {
        plan.schedule = word;
      } else {
        throw UsageError("plan \"" + line + "\": unknown word \"" + word + "\"");
      }
      continue;
    }
    const int value =
        static_cast<int>(dtk::command_line::parse_integer(key, word.substr(equals + 1), 0));
    if (key == "tp") {
      plan.tp = value;
    } else if (key == "cp") {
      plan.cp = value;
    } else if (key == "pp") {
      plan.pp = value;
    } else if (key == "dp") {
      plan.dp = value;
      dp_given = true;
    } else if (key == "ep") {
      plan.ep = value;
    } else if (key == "microbatches") {
      plan.microbatches = value;
    } else if (key == "zero") {
      plan.zero_stage = value;
    } else {
      throw UsageError("plan \"" + line + "\": unknown key \"" + key + "\"");
    }
  }
  if (!dp_given) plan.dp = std::max(1, cluster.gpus / std::max(1, plan.tp * plan.cp * plan.pp));
  return plan;
}

// A figure as the CSV and the summary print it: four significant digits.
std::string four_digits(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

// A CSV field: quoted, its quotes doubled.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void print_csv(std::istream& plans, const dtk::ModelConfig& model,
               const dtk::ClusterConfig& cluster, const Options& o) {
  const char* separator = "";
  for (const auto& [column, meaning] : kCsvColumns) {
    std::cout << separator << column;
    separator = ",";
  }
  std::cout << "\n";
  for (std::string line; std::getline(plans, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[0] == '#') continue;
    const dtk::TrainingPlan plan = parse_plan_line(line, cluster);
    const dtk::SimulatedStep step =
        dtk::simulate_training_step(model, cluster, plan, o.tokens, static_cast<int>(o.seq));
    const dtk::StepTime& t = step.time;
    std::cout << dtk::plan_text(plan) << "," << step.valid << "," << four_digits(step.step_seconds)
              << "," << four_digits(step.peak_memory_gb) << "," << four_digits(step.mfu);
    for (double term : {t.compute, t.tensor_parallel, t.context_parallel, t.expert_parallel,
                        t.pipeline, t.bubble, t.data_parallel}) {
      std::cout << "," << four_digits(term);
    }
    const dtk::StepMemory& m = step.memory;
    for (double gigabytes : {m.parameters, m.gradients, m.optimizer, m.activations, m.transient}) {
      std::cout << "," << four_digits(gigabytes);
    }
    std::cout << "," << quoted(step.why_invalid) << "\n";
  }
}

void print_simulation(const dtk::TrainingPlan& plan, const dtk::SimulatedStep& step,
                      const dtk::ModelConfig& model, const dtk::ClusterConfig& cluster,
                      const Options& o) {
  const dtk::ParameterCounts params = dtk::parameter_counts(model);
  std::printf(
      "Model %s: %.3g B parameters (%.3g B active per token), %lld layers, hidden %lld, "
      "%lld heads (%lld key/value)",
      model.name.c_str(), params.total / 1e9, params.active / 1e9,
      static_cast<long long>(model.layers), static_cast<long long>(model.hidden),
      static_cast<long long>(model.heads), static_cast<long long>(model.kv_heads));
  if (model.mixture_of_experts())
    std::printf(", %lld experts (top %lld)", static_cast<long long>(model.experts),
                static_cast<long long>(model.experts_per_token));
  std::printf(
      "\nCluster: %d GPUs (%d per node) of %g TFLOP/s peak (GEMMs at %g) and %g GB; "
      "%g GB/s within a node, %g GB/s between nodes\n",
      cluster.gpus, cluster.gpus_per_node, cluster.peak_tflops, cluster.gemm_rate() / 1e12,
      cluster.memory_gb, cluster.intra_node_gbps, cluster.inter_node_gbps);
  std::printf("Batch: %.0f tokens = %.0f sequences of %ld\n", o.tokens, o.tokens / o.seq, o.seq);
  std::printf("Plan: %s\n  %s\n", dtk::plan_text(plan).c_str(),
              dtk::step_summary(step, cluster).c_str());
  if (step.step_seconds == 0) return;  // a rule broken: nothing was simulated
  const dtk::StepTime& t = step.time;
  std::printf(
      "  time per step, s: compute %s, tensor parallel %s, context parallel %s, expert "
      "parallel %s, pipeline sends %s, bubble %s, data parallel %s\n",
      four_digits(t.compute).c_str(), four_digits(t.tensor_parallel).c_str(),
      four_digits(t.context_parallel).c_str(), four_digits(t.expert_parallel).c_str(),
      four_digits(t.pipeline).c_str(), four_digits(t.bubble).c_str(),
      four_digits(t.data_parallel).c_str());
  const dtk::StepMemory& m = step.memory;
  std::printf(
      "  memory of the fullest GPU, GB: parameters %.2f, gradients %.2f, optimizer %.2f, "
      "activations %.2f, transient %.2f\n",
      m.parameters, m.gradients, m.optimizer, m.activations, m.transient);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse_arguments(argc, argv);
    if (o.help) {
      std::cout << kUsage;
      for (const auto& [column, meaning] : kCsvColumns) {
        std::printf("    %-17s %s\n", column, meaning);
      }
      return 0;
    }
    const dtk::ModelConfig model = dtk::load_model_config(o.model);
    const dtk::ClusterConfig cluster = dtk::load_cluster_config(o.cluster);
    const int seq = static_cast<int>(o.seq);
    if (!o.plans.empty()) {
      if (o.plans == "-") {
        print_csv(std::cin, model, cluster, o);
      } else {
        std::ifstream plans(o.plans);
        if (!plans) throw UsageError("--plans: cannot read \"" + o.plans + "\"");
        print_csv(plans, model, cluster, o);
      }
      return 0;
    }
    const dtk::TrainingPlan plan = o.plan.empty()
                                       ? dtk::plan_training(o.model, o.cluster, o.tokens, seq)
                                       : parse_plan_line(o.plan, cluster);
    const dtk::SimulatedStep step =
        dtk::simulate_training_step(model, cluster, plan, o.tokens, seq);
    if (!o.json.empty()) {
      std::ofstream json(o.json);
      if (!(json << dtk::plan_json(plan) << "\n") || !json.flush())
        throw UsageError("--json: cannot write \"" + o.json + "\"");
    }
    print_simulation(plan, step, model, cluster, o);
    return 0;
  } catch (const dtk::NotImplemented& error) {
    std::cerr << kProgram << ": " << error.what() << "\n";
    return 1;
  } catch (const std::exception& error) {  // usage, configs, a batch no plan can train
    std::cerr << kProgram << ": " << error.what() << "\n";
    return 2;
  }
}
