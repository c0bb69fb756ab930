// gpt_train: trains a GPT (GPT-2's block or a Llama's, characters as tokens) on the King James
// Bible or on any UTF-8 text, and reports its losses, a sample of what it writes, its speed
// (tokens/s, MFU) and each rank's memory and communication.
//
//   ./gpt_train                                one rank, the default model, 300 steps
//   ./gpt_train --arch llama --kv_heads 2      a Llama: RMSNorm, rotary, SwiGLU, 2 KV heads
//   mpirun -n 4 ./gpt_train --dp 4              data parallel over 4 ranks: the same model
//   ./gpt_train --experts 4 --top_k 2           a mixture of experts in every block
//   mpirun -n 4 ./gpt_train --tp 2 --sp --dp 2  tensor and sequence parallel (Part 10) by 2
//   mpirun -n 4 ./gpt_train --cp 4 --zigzag     ring attention over 4 ranks (Part 11)
//   mpirun -n 4 ./gpt_train --dp 4 --ep 2 --experts 4   experts over pairs of ranks (Part 12)
//   mpirun -n 4 ./gpt_train --pp 2 --dp 2 --microbatches 4   a pipeline of 2 stages (Part 8)
//   mpirun -n 4 ./gpt_train --plan plan.json    the layout of a plan (plan_training --json)
//
// Ranks = tp × cp × dp × pp. --help lists every flag. The layouts of Parts 8 and 10-12 call the
// students' functions (gpt_train_parallelism.cpp, gpt_train_pipeline.cpp).
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <dtk/gpt/corpus.hpp>
#include <dtk/planning/plan_json.hpp>
#include <dtk/training/cores.hpp>

#include "gpt_train.hpp"

namespace dtk::gpt_train {

namespace {

std::string help_text() {
  const Options d;
  const gpt::GptTrainOptions& t = d.train;
  std::ostringstream text;
  text << "usage: mpirun -n N gpt_train [options]\n"
       << "Trains a GPT on the King James Bible (or --corpus FILE) and reports its losses, a\n"
       << "sample, its speed and each rank's memory and communication.\n\n"
       << "Layout (N = tp x cp x dp x pp ranks, tp fastest, then cp, then dp, then pp):\n"
       << "  --dp N             data-parallel ranks, each reading batch_size / dp sequences "
          "(default 1)\n"
       << "  --tp N             tensor parallelism (Part 10): heads, MLP columns and vocabulary\n"
       << "                     split over N ranks (N divides the heads and the vocabulary;\n"
       << "                     with --kv_heads K, N divides K or K divides N)\n"
       << "  --sp               with --tp: sequence parallelism, the residual stream's positions\n"
       << "                     split over the tp ranks (tp divides seq / cp)\n"
       << "  --cp N             context parallelism (Part 11): each sequence's positions split\n"
       << "                     over N ranks, attention by ring (N divides seq)\n"
       << "  --zigzag           with --cp: two chunks per rank, one early and one late (2 N\n"
       << "                     divides seq)\n"
       << "  --ep N             expert parallelism (Part 12): the experts split over N\n"
       << "                     consecutive data-parallel ranks (N divides --dp and --experts;\n"
       << "                     not with --tp)\n"
       << "  --pp N             pipeline parallelism (Part 8): the embedding, the blocks and the\n"
       << "                     head cut into N stages balanced by their FLOPs; only the last\n"
       << "                     stage has a loss\n"
       << "  --microbatches M   the batch cut into M micro-batches, each split over the dp\n"
       << "                     ranks (default: --pp; dp x M divides batch_size)\n"
       << "  --schedule S       the pipeline's schedule: 1f1b, gpipe or interleaved (Part 14:\n"
       << "                     the model cut into pp x V chunks, chunk c on stage c % pp;\n"
       << "                     M a multiple of pp) (default 1f1b)\n"
       << "  --virtual V        with interleaved: model chunks per stage (default 2)\n"
       << "  --plan FILE        the layout of a TrainingPlan as JSON (plan_training --json\n"
       << "                     writes one): its tp, cp, dp, pp, ep, microbatches,\n"
       << "                     sequence_parallel, schedule, zero_stage and recompute (full);\n"
       << "                     the flags beside it override them (and --sp turns sequence\n"
       << "                     parallelism on)\n"
       << "Memory (Part 16):\n"
       << "  --recompute R      what a block keeps for the backward: none (everything), selective\n"
       << "                     (all but the MLP's hidden activation, computed again from its\n"
       << "                     input) or full (its input only: its forward runs again before\n"
       << "                     its backward); the same weights, bit for bit (default none)\n"
       << "  --zero Z           ZeRO (Part 9): 1 shards Adam's states over the ranks that sum\n"
       << "                     each gradient, 2 the summed gradients too, 3 the parameters\n"
       << "                     too, gathered piece by piece while the model runs (Part 16.3:\n"
       << "                     FSDP; not with --bucket_mb) (default 0: none)\n"
       << "  --bucket_mb X      the data-parallel gradient sum in buckets of X MiB of the\n"
       << "                     doubles they sum in, started during the backward (Part 15; not\n"
       << "                     with --pp, --microbatches, --sp or --experts) (default 0: one\n"
       << "                     sum after the backward)\n"
       << "Model:\n"
       << "  --arch A           gpt2 (LayerNorm, learned positions, GELU, biases) or llama\n"
       << "                     (RMSNorm, rotary positions, SwiGLU, no biases) (default gpt2)\n"
       << "  --layers L         blocks (default " << t.model.layers << ")\n"
       << "  --hidden H         hidden width (default " << t.model.hidden << ")\n"
       << "  --heads A          attention heads, dividing the width (default " << t.model.heads
       << ")\n"
       << "  --kv_heads K       with llama: key/value heads, dividing --heads (grouped-query\n"
       << "                     attention; 1: multi-query) (default: as many as --heads)\n"
       << "  --seq T            context: positions per sequence (default " << t.model.seq_len
       << ")\n"
       << "  --experts E        a mixture of E experts in place of each MLP (default: none)\n"
       << "  --top_k K          experts per token (default " << t.model.top_k << ")\n"
       << "  --aux_loss A       the load-balancing loss's coefficient (default "
       << t.model.aux_loss_coef << ")\n"
       << "  --dtype D          float, double or bf16: parameters, gradients and the activations\n"
       << "                     kept in bf16, fp32 master weights and moments (Part 16.2;\n"
       << "                     with adam; at --zero 3 FSDP's fp32 shards) (default float)\n"
       << "Training:\n"
       << "  --corpus FILE      a UTF-8 text (default: the King James Bible, Debian's bible-kjv)\n"
       << "  --batch_size B     sequences per step, over all data-parallel ranks (default "
       << t.batch_size << ")\n"
       << "  --steps S          training steps (default " << t.steps << ")\n"
       << "  --optimizer O      adam or sgd (default adam)\n"
       << "  --lr X             peak learning rate: linear warm-up, then a cosine to a tenth\n"
       << "                     (default " << gpt::kAdamLearningRate << " with adam, "
       << gpt::kSgdLearningRate << " with sgd)\n"
       << "  --seed S           the starting weights and the batches (default " << t.seed << ")\n"
       << "  --eval_every N     steps between validation losses (default: a tenth of the "
          "steps)\n"
       << "  --threads N        threads per rank for the matrix products and the model's loops\n"
       << "                     (default: the machine's cores shared among its ranks)\n"
       << "Output:\n"
       << "  --sample N         write N characters with the trained model (default 0)\n"
       << "  --temperature X    the sample's temperature (default " << t.temperature << ")\n"
       << "  --report FILE      losses, validation, weights_l2, tokens/s, MFU, the BLAS's\n"
       << "                     kernels, each rank's memory and bytes sent, as JSON\n"
       << "  --trace FILE       a Chrome trace of every step: open it in https://ui.perfetto.dev\n"
       << "  --help             show this help\n"
       << "The matrix products use the fastest OpenBLAS kernels this processor runs, unless\n"
       << "OPENBLAS_CORETYPE names others, and OpenBLAS's idle threads sleep at once, unless\n"
       << "OPENBLAS_THREAD_TIMEOUT says otherwise (include/dtk/blas_kernel.hpp).\n";
  return text.str();
}

// The layout of a plan (--plan FILE: a TrainingPlan as JSON, plan_json's), into `t` and
// `microbatches`. Each problem is one line naming the file and the field.
void apply_plan(const std::string& path, gpt::GptTrainOptions& t,
                std::optional<int>& microbatches) {
  std::ifstream file(path);
  std::stringstream text;
  if (!file || !(text << file.rdbuf())) throw UsageError("--plan: cannot read \"" + path + "\"");
  TrainingPlan plan;
  try {
    plan = plan_from_json(text.str());
  } catch (const std::invalid_argument& error) {
    throw UsageError("--plan " + path + ": " + error.what());
  }
  t.tp = plan.tp, t.cp = plan.cp, t.dp = plan.dp, t.pp = plan.pp, t.ep = plan.ep;
  t.sequence_parallel = plan.sequence_parallel;
  t.zero_stage = plan.zero_stage;
  // The planner's recomputation keeps each layer's input only.
  t.recompute = plan.recompute ? gpt::Recompute::Full : gpt::Recompute::None;
  t.schedule =
      plan.schedule == "gpipe" ? gpt::PipelineSchedule::GPipe : gpt::PipelineSchedule::OneFOneB;
  microbatches = plan.microbatches;
}

Options parse(int argc, char** argv) {
  Options o;
  gpt::GptTrainOptions& t = o.train;
  gpt::GptConfig& m = t.model;
  std::optional<double> lr;           // --lr; each optimizer has its own default
  std::optional<int> microbatches;    // --microbatches; default --pp
  std::optional<int> virtual_stages;  // --virtual; default 2 interleaved, else 1
  // A plan first, wherever it stands: the flags beside it override its fields.
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--plan") apply_plan(argv[i + 1], t, microbatches);
  }
  const auto positive = [](const std::string& f, const std::string& v) {
    return static_cast<int>(parse_positive(f, v));
  };
  using Setter = std::function<void(const std::string&, const std::string&)>;
  const std::map<std::string, Setter> with_value = {
      {"--tp", [&](auto& f, auto& v) { t.tp = positive(f, v); }},
      {"--cp", [&](auto& f, auto& v) { t.cp = positive(f, v); }},
      {"--dp", [&](auto& f, auto& v) { t.dp = positive(f, v); }},
      {"--ep", [&](auto& f, auto& v) { t.ep = positive(f, v); }},
      {"--pp", [&](auto& f, auto& v) { t.pp = positive(f, v); }},
      {"--microbatches", [&](auto& f, auto& v) { microbatches = positive(f, v); }},
      {"--schedule", [&](auto& f, auto& v) { t.schedule = parse_choice(f, v, kScheduleNames); }},
      {"--virtual", [&](auto& f, auto& v) { virtual_stages = positive(f, v); }},
      {"--plan", [](auto&, auto&) {}},  // applied first
      {"--recompute", [&](auto& f, auto& v) { t.recompute = parse_choice(f, v, kRecomputeNames); }},
      {"--zero",
       [&](auto& f, auto& v) {
         t.zero_stage = parse_choice<int>(f, v, {{"0", 0}, {"1", 1}, {"2", 2}, {"3", 3}});
       }},
      {"--bucket_mb",
       [&](auto& f, auto& v) { t.bucket_mb = parse_positive_number(f, v, /*allow_zero=*/true); }},
      {"--experts", [&](auto& f, auto& v) { m.experts = positive(f, v); }},
      {"--top_k", [&](auto& f, auto& v) { m.top_k = positive(f, v); }},
      {"--aux_loss",
       [&](auto& f, auto& v) { m.aux_loss_coef = parse_positive_number(f, v, true); }},
      {"--layers", [&](auto& f, auto& v) { m.layers = positive(f, v); }},
      {"--hidden", [&](auto& f, auto& v) { m.hidden = positive(f, v); }},
      {"--heads", [&](auto& f, auto& v) { m.heads = positive(f, v); }},
      {"--arch", [&](auto& f, auto& v) { m.arch = parse_choice(f, v, kArchitectureNames); }},
      {"--kv_heads", [&](auto& f, auto& v) { m.kv_heads = positive(f, v); }},
      {"--seq", [&](auto& f, auto& v) { m.seq_len = positive(f, v); }},
      {"--batch_size", [&](auto& f, auto& v) { t.batch_size = positive(f, v); }},
      {"--steps", [&](auto& f, auto& v) { t.steps = parse_positive(f, v); }},
      {"--lr", [&](auto& f, auto& v) { lr = parse_positive_number(f, v); }},
      {"--optimizer", [&](auto& f, auto& v) { t.optimizer = parse_choice(f, v, kOptimizerNames); }},
      {"--seed",
       [&](auto& f, auto& v) { t.seed = static_cast<std::uint32_t>(parse_integer(f, v, 0)); }},
      {"--eval_every", [&](auto& f, auto& v) { t.eval_every = positive(f, v); }},
      {"--corpus", [&](auto&, auto& v) { o.corpus = v; }},
      {"--dtype",
       [&](auto& f, auto& v) {
         const std::string dtype = parse_choice<std::string>(
             f, v, {{"float", "float"}, {"double", "double"}, {"bf16", "bf16"}});
         o.double_precision = dtype == "double";
         t.bf16 = dtype == "bf16";
       }},
      {"--threads", [&](auto& f, auto& v) { o.threads = positive(f, v); }},
      {"--report", [&](auto&, auto& v) { o.report_file = v; }},
      {"--trace", [&](auto&, auto& v) { o.trace_file = v; }},
      {"--sample",
       [&](auto& f, auto& v) { t.sample_chars = static_cast<int>(parse_integer(f, v, 0)); }},
      {"--temperature", [&](auto& f, auto& v) { t.temperature = parse_positive_number(f, v); }},
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else if (arg == "--sp") {
      t.sequence_parallel = true;
    } else if (arg == "--zigzag") {
      t.zigzag = true;
    } else if (with_value.count(arg) == 0) {
      throw UsageError("unknown option '" + arg + "' (see --help)");
    } else if (i + 1 == argc) {
      throw UsageError(arg + " needs a value (see --help)");
    } else {
      with_value.at(arg)(arg, argv[++i]);
    }
  }
  const bool sgd = t.optimizer == gpt::Optimizer::Sgd;
  t.lr = lr ? *lr : sgd ? gpt::kSgdLearningRate : gpt::kAdamLearningRate;
  t.microbatches = microbatches ? *microbatches : t.pp;
  const bool interleaved = t.schedule == gpt::PipelineSchedule::Interleaved;
  t.virtual_stages = virtual_stages ? *virtual_stages : interleaved ? 2 : 1;
  t.record_timeline = !o.trace_file.empty();
  return o;
}

template <class T>
void train(const Options& o, const gpt::Corpus& corpus, const Communicator& world) {
  const gpt::GptTrainReport report =
      gpt::train_gpt<T>(o.train, corpus, world, student_parallelism<T>(), std::cout);
  if (world.Get_rank() != 0) return;
  print_results(o, corpus, report);
  write_report(o, corpus, report);
  write_trace(o, report);
}

void run(const Options& o, const Communicator& world) {
  share_cores(world, o.threads);
  const gpt::Corpus corpus = gpt::load_corpus(o.corpus, o.train.model.seq_len, world);
  std::string problem = gpt::gpt_options_problem(o.train, world.Get_size(), corpus);
  if (problem.empty()) problem = gpt::build_problem(o.train, student_parallelism<float>());
  if (!problem.empty()) throw UsageError(problem);
  check_writable(o.report_file, "--report", world);
  check_writable(o.trace_file, "--trace", world);
  if (world.Get_rank() == 0) print_header(o, corpus, world.Get_size());
  if (o.double_precision) {
    train<double>(o, corpus, world);
  } else {
    train<float>(o, corpus, world);
  }
}

}  // namespace

}  // namespace dtk::gpt_train

int main(int argc, char** argv) {
  using namespace dtk::gpt_train;
  return run_mpi_program(argc, argv, "gpt_train", [&](const dtk::Communicator& world) {
    const Options options = parse(argc, argv);
    if (!options.help) return run(options, world);
    if (world.Get_rank() == 0) std::cout << help_text();
  });
}
