// What gpt_train's rank 0 prints and writes: the header before training, the results after it,
// the --report JSON and the --trace.
#include <array>
#include <cstdio>
#include <iostream>

#include <dtk/blas_kernel.hpp>
#include <dtk/gpt/gpt.hpp>

#include <nlohmann/json.hpp>

#include "gpt_train.hpp"

namespace dtk::gpt_train {

namespace {

// "1 layer", "4 layers".
std::string counted(long n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string model_text(const gpt::GptConfig& m) {
  std::string text = std::string(m.llama() ? "Llama" : "GPT-2") + "'s block, " +
                     counted(m.layers, "layer") + ", hidden " + std::to_string(m.hidden) + ", " +
                     counted(m.heads, "head");
  if (m.key_value_heads() != m.heads) text += " sharing " + counted(m.key_value_heads(), "KV head");
  text += ", context " + std::to_string(m.seq_len);
  if (m.mixture_of_experts()) {
    text += ", " + std::to_string(m.experts) + " experts (top " + std::to_string(m.top_k) +
            ", load-balancing loss x " + std::to_string(m.aux_loss_coef).substr(0, 6) + ")";
  }
  return text;
}

// "rank 2 · dp 1" (and "· tp 0 · cp 1 · pp 1" when those groups have more than one rank).
std::vector<std::string> rank_labels(const Options& o, const gpt::GptTrainReport& r) {
  std::vector<std::string> labels;
  for (const gpt::GptRankReport& m : r.ranks) {
    std::string label = "rank " + std::to_string(m.rank);
    if (o.train.tp > 1) label += " · tp " + std::to_string(m.tp_idx);
    if (o.train.cp > 1) label += " · cp " + std::to_string(m.cp_idx);
    label += " · dp " + std::to_string(m.dp_idx);
    if (o.train.pp > 1) label += " · pp " + std::to_string(m.pp_idx);
    labels.push_back(label);
  }
  return labels;
}

std::string per_step(std::uint64_t bytes, long steps) {
  return mebibytes(steps ? bytes / steps : 0);
}

// "the embedding, blocks 0-1", "blocks 2-3, the head": pieces [begin, end) of a model of L blocks.
std::string pieces_text(int begin, int end, int layers) {
  std::vector<std::string> parts;
  if (begin == 0) parts.push_back("the embedding");
  const int first = std::max(begin - 1, 0), last = std::min(end - 1, layers);  // blocks [, )
  if (last - first == 1) parts.push_back("block " + std::to_string(first));
  if (last - first > 1) {
    parts.push_back("blocks " + std::to_string(first) + "-" + std::to_string(last - 1));
  }
  if (end == layers + 2) parts.push_back("the head");
  std::string text = parts.front();
  for (std::size_t i = 1; i < parts.size(); ++i) text += ", " + parts[i];
  return text;
}

// The bubble with equal stages, the share of a schedule each stage waits: GPipe's and 1F1B's
// (pp - 1)/(m + pp - 1); interleaved, each chunk takes 1/V of a stage's time, so the same
// pp - 1 waits are V times shorter: (pp - 1)/(V m + pp - 1).
double bubble_theory(const gpt::GptTrainOptions& t) {
  return double(t.pp - 1) / (t.virtual_stages * t.microbatches + t.pp - 1);
}

// Stage pp_idx's chunks (the model's chunks pp_idx, pp_idx + pp, ...), each the [begin, end) of
// its pieces, from the model's chunk cuts.
std::vector<std::array<int, 2>> stage_chunks(const std::vector<int>& cuts, int pp, int pp_idx) {
  std::vector<std::array<int, 2>> chunks;
  for (std::size_t c = pp_idx; c + 1 < cuts.size(); c += pp)
    chunks.push_back({cuts[c], cuts[c + 1]});
  return chunks;
}

// The pieces of each of a stage's chunks: "blocks 2-3 | blocks 6-7, the head".
std::string stage_pieces_text(const std::vector<int>& cuts, int pp, int pp_idx, int layers) {
  std::string text;
  for (const auto& [begin, end] : stage_chunks(cuts, pp, pp_idx))
    text += (text.empty() ? "" : " | ") + pieces_text(begin, end, layers);
  return text;
}

// The share of its schedules' time a rank spent waiting.
double bubble(const gpt::GptRankReport& m) {
  return m.pipeline_seconds > 0 ? 1 - m.pipeline_busy_seconds / m.pipeline_seconds : 0;
}

}  // namespace

void print_header(const Options& o, const gpt::Corpus& corpus, int ranks) {
  const gpt::GptTrainOptions& t = o.train;
  gpt::GptConfig m = t.model;
  m.vocab_size = corpus.vocab_size;
  std::printf(
      "Training a GPT of %.2fM parameters (%s; vocabulary %d: %zu characters + %zu "
      "padding) in %s on %d %s (tp %d x cp %d x dp %d x pp %d)\n",
      gpt::parameter_count(m) / 1e6, model_text(m).c_str(), m.vocab_size, corpus.alphabet.size(),
      m.vocab_size - corpus.alphabet.size(), dtype_name(o), ranks, ranks == 1 ? "rank" : "ranks",
      t.tp, t.cp, t.dp, t.pp);
  std::printf("  corpus: %s, %zu characters: %zu to train on, the last %zu held out\n",
              corpus.source.c_str(), corpus.tokens.size(), corpus.training_tokens(),
              corpus.validation_tokens());
  const long warmup = std::max(1L, std::min(100L, t.steps / 10));
  std::printf(
      "  %ld steps of %d sequences (%d tokens), %s lr %g (warm-up %ld steps, cosine to "
      "%g), seed %u\n",
      t.steps, t.batch_size, t.batch_size * m.seq_len,
      choice_name(kOptimizerNames, t.optimizer).c_str(), t.lr, warmup, t.lr / 10, t.seed);
  if (t.pp > 1 || t.microbatches > 1) {
    std::printf(
        "  pipeline: %d %s, the batch in %d micro-batches of %d sequences (%d on each "
        "data-parallel rank), schedule %s",
        t.pp, t.pp == 1 ? "stage" : "stages", t.microbatches, t.batch_size / t.microbatches,
        t.batch_size / t.microbatches / t.dp, choice_name(kScheduleNames, t.schedule).c_str());
    if (t.schedule == gpt::PipelineSchedule::Interleaved) {
      std::printf(" with %d chunks per stage (the model in %d)", t.virtual_stages,
                  t.pp * t.virtual_stages);
    }
    std::printf("\n");
  }
  if (t.zero_stage > 0) {
    std::printf("  ZeRO stage %d: %s sharded over the ranks that sum each gradient\n", t.zero_stage,
                t.zero_stage == 1   ? "Adam's states"
                : t.zero_stage == 2 ? "Adam's states and the summed gradients"
                                    : "Adam's states, the summed gradients and the parameters "
                                      "(each piece gathered while it runs)");
  }
  if (t.recompute != gpt::Recompute::None) {
    std::printf("  recomputation: %s (%s)\n", choice_name(kRecomputeNames, t.recompute).c_str(),
                t.recompute == gpt::Recompute::Full
                    ? "each block keeps its input only; its forward runs again in the backward"
                    : "the MLP's hidden activation computed again in the backward");
  }
  print_blas_note();
  std::fflush(stdout);
}

void print_results(const Options& o, const gpt::Corpus& corpus, const gpt::GptTrainReport& r) {
  gpt::GptConfig model = o.train.model;
  model.vocab_size = corpus.vocab_size;
  std::printf(
      "\nTrained %ld steps on %.0f tokens in %.2f s: %.0f tokens/s, %.2f GFLOP/s = MFU "
      "%.3f of the GEMM peak %.1f GFLOP/s (%s)\n",
      r.steps, r.tokens, r.seconds, r.tokens_per_second, r.flops_per_second / 1e9, r.mfu,
      r.gemm_peak / 1e9, blas_kernel().describe().c_str());
  std::printf(
      "Final loss %.4f (last training batch), validation loss %.4f; the text's bigram "
      "entropy: %.4f nats per character\n",
      r.final_loss, r.val_loss, r.bigram_entropy);
  std::printf("Weights: L2 norm %.9g\n", r.weights_l2);
  if (!r.sample.empty()) {
    std::printf("\nSample (temperature %g):\n%s\n", o.train.temperature, r.sample.c_str());
  }
  std::printf(
      "\nPeak memory per rank, MiB (model states kept between steps, and at ZeRO 3 the pieces "
      "held whole while they run; activations kept "
      "from the forward to the backward pass, and those recomputation makes again, a block's at a "
      "time; transient: every other buffer of a step):\n");
  std::printf("  %4s %10s %10s %10s %12s %10s\n", "rank", "params", "grads", "optimizer",
              "activations", "transient");
  const std::size_t e = o.double_precision ? sizeof(double) : sizeof(float);
  for (const gpt::GptRankReport& m : r.ranks) {
    std::printf("  %4d %s %s %s   %s %s\n", m.rank, mebibytes(m.parameters).c_str(),
                mebibytes(m.gradients).c_str(), mebibytes(m.optimizer).c_str(),
                mebibytes(m.activations).c_str(), mebibytes(m.transient).c_str());
    const ModelStateCounts count =
        analytic_model_states(o.train, model, stage_chunks(r.chunk_cuts, o.train.pp, m.pp_idx), e);
    std::printf("  %4s %s %s %s   (its model states counted from the shape%s)\n", "",
                mebibytes(count.parameters).c_str(), mebibytes(count.gradients).c_str(),
                mebibytes(count.optimizer).c_str(),
                o.train.zero_stage > 0 ? ", ZeRO's shards ceil(n / p)" : "");
  }
  if (!o.train.model.mixture_of_experts()) {
    // The count is of a rank's whole share; a pipeline's stage holds `in flight` of its
    // micro-batches at once (interleaved, its first chunk, which holds its first block).
    const double held = double(r.ranks[0].first_chunk_in_flight) / o.train.microbatches;
    const ActivationCounts counted = analytic_activations_per_block(o.train, model, e);
    const char* korthikanti[] = {
        "s.b.h.(34 + 5.a.s/h)/tp for 16-bit values with dropout and the scores kept",
        "s.b.h.34/tp for 16-bit values with dropout, selective recomputation",
        "2.s.b.h, the block's 16-bit input (/tp under sp)"};
    std::printf(
        "Activations of one block on rank 0: %.1f KiB measured, %.1f KiB counted from the "
        "shape; Korthikanti et al.'s %s: %.1f KiB\n",
        r.ranks[0].block_activations / 1024.0, held * counted.model / 1024.0,
        korthikanti[static_cast<int>(o.train.recompute)], held * counted.korthikanti / 1024.0);
  }
  if (o.train.recompute != gpt::Recompute::None) {
    const double step_tokens = r.tokens / r.steps;
    const double again = gpt::recompute_flops(model, step_tokens, o.train.recompute);
    std::printf(
        "Recomputation (%s): %.3f GFLOP per step computed again, %.1f %% on top of the model's "
        "%.3f (MFU counts the model's only)\n",
        choice_name(kRecomputeNames, o.train.recompute).c_str(), again / 1e9,
        100 * again / gpt::training_flops(model, step_tokens),
        gpt::training_flops(model, step_tokens) / 1e9);
  }
  if (o.train.model.mixture_of_experts()) {
    std::printf("Expert parameters per rank: %s MiB (%d of the %d experts)\n",
                mebibytes(r.ranks[0].expert_parameters).c_str(), o.train.model.experts / o.train.ep,
                o.train.model.experts);
  }
  std::printf(
      "\nMiB sent per training step, by group (count: from the shape alone; expert: if "
      "the router spread the rows evenly), the attention's seconds per step (wall, and the "
      "kernels' CPU), and the gradient sum's after the backward (exposed):\n"
      "  %5s %10s %10s %10s %10s %10s %10s %10s\n",
      "rank", "tensor", "context", "data", "expert", "attention", "kernels", "grad sum");
  for (const gpt::GptRankReport& m : r.ranks) {
    std::printf("  %5d %s %s %s %s %10.4f %10.4f %10.4f\n", m.rank,
                per_step(m.tensor_parallel_bytes, r.steps).c_str(),
                per_step(m.context_parallel_bytes, r.steps).c_str(),
                per_step(m.data_parallel_bytes, r.steps).c_str(),
                per_step(m.expert_parallel_bytes, r.steps).c_str(), m.attention_seconds / r.steps,
                m.attention_cpu_seconds / r.steps, m.exposed_sum_seconds / r.steps);
  }
  for (int stage = 0; stage < o.train.pp; ++stage) {  // each pipeline stage holds its pieces
    const std::array<double, 4> count =
        analytic_bytes_per_step(o.train, model, stage_chunks(r.chunk_cuts, o.train.pp, stage), e);
    std::printf("  count %s %s %s %s%s\n", mebibytes(count[0]).c_str(), mebibytes(count[1]).c_str(),
                mebibytes(count[2]).c_str(), mebibytes(count[3]).c_str(),
                o.train.pp > 1 ? ("   (stage " + std::to_string(stage) + ")").c_str() : "");
  }
  if (o.train.pp > 1) {
    const bool interleaved = o.train.schedule == gpt::PipelineSchedule::Interleaved;
    std::printf(
        "\nThe pipeline: each rank's stage, its pieces%s, the micro-batches it held at once (%s), "
        "the MiB it sent to the stages beside it per step (count: %g rows of %d values per "
        "micro-batch, chunk and direction), and its bubble: the share of the schedules' time it "
        "waited (with equal stages %s = %.3f; measured, it means something only where every "
        "rank has a core of its own):\n"
        "  %5s %5s  %-34s %9s %10s %10s %7s\n",
        interleaved ? " (chunk by chunk)" : "",
        interleaved ? "forwards of every chunk whose backward had not run; the schedule's "
                      "warm-up + 1 at most"
                    : "GPipe all of them, 1F1B at most pp - stage",
        micro_batch_stream_rows(o.train), o.train.model.hidden,
        interleaved ? "(pp - 1)/(V m + pp - 1)" : "(pp - 1)/(m + pp - 1)", bubble_theory(o.train),
        "rank", "stage", "pieces", "in flight", "pipeline", "count", "bubble");
    for (const gpt::GptRankReport& m : r.ranks) {
      std::printf(
          "  %5d %5d  %-34s %9d %s %s %7.3f\n", m.rank, m.pp_idx,
          stage_pieces_text(r.chunk_cuts, o.train.pp, m.pp_idx, o.train.model.layers).c_str(),
          m.microbatches_in_flight, per_step(m.pipeline_parallel_bytes, r.steps).c_str(),
          mebibytes(analytic_pipeline_bytes_per_step(o.train, m.pp_idx, e)).c_str(), bubble(m));
    }
  }
  if (!r.history.empty() && !r.history.back().expert_rows.empty()) {
    const std::vector<double>& rows = r.history.back().expert_rows;
    std::printf("\n(token, choice) rows per expert in the last step, block by block:\n");
    for (std::size_t l = 0; l * o.train.model.experts < rows.size(); ++l) {
      std::printf("  block %zu:", l);
      for (int x = 0; x < o.train.model.experts; ++x) {
        std::printf(" %6.0f", rows[l * o.train.model.experts + x]);
      }
      std::printf("\n");
    }
  }
  std::fflush(stdout);
}

void write_report(const Options& o, const gpt::Corpus& corpus, const gpt::GptTrainReport& r) {
  if (o.report_file.empty()) return;
  const gpt::GptTrainOptions& t = o.train;
  nlohmann::json history = nlohmann::json::array(), validation = nlohmann::json::array(),
                 ranks = nlohmann::json::array();
  for (const gpt::GptStepRecord& s : r.history) {
    history.push_back({{"step", s.step},
                       {"loss", s.loss},
                       {"aux_loss", s.aux_loss},
                       {"lr", s.lr},
                       {"seconds", s.seconds},
                       {"expert_rows", s.expert_rows}});
  }
  gpt::GptConfig model = t.model;
  model.vocab_size = corpus.vocab_size;
  const std::size_t e = o.double_precision ? sizeof(double) : sizeof(float);
  const ActivationCounts activations = analytic_activations_per_block(t, model, e);
  for (const gpt::GptValidation& v : r.validation) {
    validation.push_back({{"step", v.step}, {"loss", v.loss}});
  }
  for (const gpt::GptRankReport& m : r.ranks) {
    const std::uint64_t sent = m.tensor_parallel_bytes + m.context_parallel_bytes +
                               m.data_parallel_bytes + m.expert_parallel_bytes +
                               m.pipeline_parallel_bytes;
    const std::vector<std::array<int, 2>> chunks = stage_chunks(r.chunk_cuts, t.pp, m.pp_idx);
    const ModelStateCounts states = analytic_model_states(t, model, chunks, e);
    const std::array<double, 4> count = analytic_bytes_per_step(t, model, chunks, e);
    ranks.push_back({{"rank", m.rank},
                     {"tp_idx", m.tp_idx},
                     {"cp_idx", m.cp_idx},
                     {"dp_idx", m.dp_idx},
                     {"ep_idx", m.ep_idx},
                     {"pp_idx", m.pp_idx},
                     {"pieces", chunks.front()},  // its first chunk's
                     {"chunks", chunks},
                     {"microbatches_in_flight", m.microbatches_in_flight},
                     {"first_chunk_in_flight", m.first_chunk_in_flight},
                     {"pipeline_seconds", m.pipeline_seconds},
                     {"pipeline_busy_seconds", m.pipeline_busy_seconds},
                     {"bubble", bubble(m)},
                     {"attention_seconds", m.attention_seconds},
                     {"attention_cpu_seconds", m.attention_cpu_seconds},
                     {"exposed_sum_seconds", m.exposed_sum_seconds},
                     {"peak_bytes",
                      {{"parameters", m.parameters},
                       {"gradients", m.gradients},
                       {"optimizer", m.optimizer},
                       {"activations", m.activations},
                       {"transient", m.transient},
                       {"expert_parameters", m.expert_parameters},
                       {"block_activations", m.block_activations}}},
                     {"bytes_sent",
                      {{"tensor_parallel", m.tensor_parallel_bytes},
                       {"context_parallel", m.context_parallel_bytes},
                       {"data_parallel", m.data_parallel_bytes},
                       {"expert_parallel", m.expert_parallel_bytes},
                       {"pipeline_parallel", m.pipeline_parallel_bytes}}},
                     {"model_states_counted",
                      {{"parameters", states.parameters},
                       {"gradients", states.gradients},
                       {"optimizer", states.optimizer}}},
                     {"expected_bytes_per_step",
                      {{"tensor_parallel", count[0]},
                       {"context_parallel", count[1]},
                       {"data_parallel", count[2]},
                       {"expert_parallel", count[3]},
                       {"pipeline_parallel", analytic_pipeline_bytes_per_step(t, m.pp_idx, e)}}},
                     {"bytes_sent_per_step", r.steps ? double(sent) / r.steps : 0.0}});
  }
  const BlasKernel blas = blas_kernel();
  const nlohmann::json report = {
      {"model",
       {{"arch", gpt::architecture_name(model.arch)},
        {"kv_heads", model.key_value_heads()},
        {"layers", model.layers},
        {"hidden", model.hidden},
        {"heads", model.heads},
        {"seq_len", model.seq_len},
        {"vocab_size", model.vocab_size},
        {"experts", model.experts},
        {"top_k", model.top_k},
        {"aux_loss_coef", model.aux_loss_coef},
        {"parameters", r.parameter_count}}},
      {"layout",
       {{"tp", t.tp},
        {"cp", t.cp},
        {"dp", t.dp},
        {"ep", t.ep},
        {"pp", t.pp},
        {"microbatches", t.microbatches},
        {"schedule", choice_name(kScheduleNames, t.schedule)},
        {"virtual_stages", t.virtual_stages},
        {"chunk_cuts", r.chunk_cuts},
        {"bubble_theory", bubble_theory(t)},
        {"sp", t.sequence_parallel},
        {"zigzag", t.zigzag},
        {"recompute", choice_name(kRecomputeNames, t.recompute)},
        {"zero_stage", t.zero_stage}}},
      {"corpus",
       {{"source", corpus.source},
        {"characters", corpus.tokens.size()},
        {"alphabet", corpus.alphabet.size()},
        {"training", corpus.training_tokens()},
        {"validation", corpus.validation_tokens()}}},
      {"dtype", dtype_name(o)},
      {"optimizer", choice_name(kOptimizerNames, t.optimizer)},
      {"lr", t.lr},
      {"batch_size", t.batch_size},
      {"seed", t.seed},
      {"steps", r.steps},
      {"tokens", r.tokens},
      {"seconds", r.seconds},
      {"final_loss", r.final_loss},
      {"val_loss", r.val_loss},
      {"bigram_entropy", r.bigram_entropy},
      {"weights_l2", r.weights_l2},
      {"tokens_per_second", r.tokens_per_second},
      {"flops_per_second", r.flops_per_second},
      {"gemm_peak_flops", r.gemm_peak},
      {"blas",
       {{"library", blas.library},
        {"kernel", blas.kernel},
        {"fastest", blas.fastest},
        {"chosen_by", blas.chosen_by},
        {"thread_timeout", blas.thread_timeout}}},
      {"mfu", r.mfu},
      {"recompute_flops_per_step",
       r.steps ? gpt::recompute_flops(model, r.tokens / r.steps, t.recompute) : 0.0},
      {"history", history},
      {"validation", validation},
      {"sample", r.sample},
      {"ranks", ranks},
      {"block_activations_counted",
       {{"model", activations.model}, {"korthikanti", activations.korthikanti}}}};
  write_file(o.report_file, "report", [&](std::ostream& out) { out << report.dump(2) << "\n"; });
}

void write_trace(const Options& o, const gpt::GptTrainReport& r) {
  if (o.trace_file.empty()) return;
  write_file(o.trace_file, "trace",
             [&](std::ostream& out) { write_chrome_trace(out, r.timeline, rank_labels(o, r)); });
  std::printf("\nTrace of %ld steps: %s (open it in https://ui.perfetto.dev or chrome://tracing)\n",
              r.steps, o.trace_file.c_str());
}

}  // namespace dtk::gpt_train
