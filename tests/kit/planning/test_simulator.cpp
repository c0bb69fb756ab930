// Kit self-test of Part 13's provided simulator (include/dtk/planning/): the published anchors
// (the ZeRO paper's Figure 1, Korthikanti et al.'s activation formula, Llama 3's MFU), each rule
// of a layout refused with its reason, the α–β cost of a collective on the link its group
// uses, Part 8's bubble, and the trade-offs a planner weighs, in the directions the handout
// says. One process: ./build/tests/kit/kit_planning_simulator
#include "dtk_test.hpp"

#include <dtk/planner.hpp>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace {

constexpr int kRanks = 1;

const std::string kPublic = std::string(DTK_STARTER_DIR) + "/src/planning/configs/";
const std::string kHere = DTK_PLANNING_TEST_DIR;

const dtk::ModelConfig& llama3_8b() {
  static const dtk::ModelConfig model = dtk::load_model_config(kPublic + "llama3_8b.json");
  return model;
}
const dtk::ModelConfig& mixtral() {
  static const dtk::ModelConfig model = dtk::load_model_config(kPublic + "mixtral_8x7b.json");
  return model;
}
const dtk::ClusterConfig& h100_x64() {
  static const dtk::ClusterConfig cluster =
      dtk::load_cluster_config(kPublic + "h100_80gb_x64.json");
  return cluster;
}

constexpr double kTokens = 4194304, kSeq = 8192;  // 512 sequences of 8192

dtk::SimulatedStep simulate(const dtk::TrainingPlan& plan,
                            const dtk::ModelConfig& model = llama3_8b(),
                            const dtk::ClusterConfig& cluster = h100_x64(), double tokens = kTokens,
                            int seq = kSeq) {
  return dtk::simulate_training_step(model, cluster, plan, tokens, seq);
}

dtk::TrainingPlan plan_of(int tp, int cp, int pp, int dp, int microbatches, int zero = 1) {
  dtk::TrainingPlan plan;
  plan.tp = tp;
  plan.cp = cp;
  plan.pp = pp;
  plan.dp = dp;
  plan.microbatches = microbatches;
  plan.zero_stage = zero;
  plan.sequence_parallel = tp > 1;
  return plan;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

void check_near(dtk::testing::Checks& check, const std::string& what, double expected,
                double actual, double rtol = 1e-9) {
  check.that(std::fabs(actual - expected) <= rtol * std::fabs(expected),
             what + ": expected " + number(expected) + ", got " + number(actual));
}

void check_rule(dtk::testing::Checks& check, const dtk::TrainingPlan& plan,
                const std::string& reason, const dtk::ModelConfig& model = llama3_8b()) {
  const dtk::SimulatedStep step = simulate(plan, model);
  check.that(
      !step.valid && step.step_seconds == 0 && step.why_invalid.find(reason) != std::string::npos,
      dtk::plan_text(plan) + ": expected an invalid plan saying \"" + reason + "\", got " +
          (step.valid ? "a valid one" : "\"" + step.why_invalid + "\""));
}

}  // namespace

TEST_CASE("Part 13 | simulator: the model states are the ZeRO paper's Figure 1", "[planning]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // Figure 1 of Rajbhandari et al. (2020): Ψ = 7.5 B parameters on N_d = 64 GPUs hold 120,
    // 31.4, 16.6 and 1.875 GB of model states per GPU at stages 0 to 3. One stage (pp = 1) and
    // no tensor parallelism hold every parameter, so the states scale to Ψ = 7.5e9 exactly.
    const double psi = dtk::parameter_counts(llama3_8b()).total;
    const double figure[] = {120e9, 31.40625e9, 16.640625e9, 1.875e9};
    for (int stage = 0; stage <= 3; ++stage) {
      const dtk::StepMemory m = simulate(plan_of(1, 1, 1, 64, 8, stage)).memory;
      check_near(check, "stage " + std::to_string(stage) + ", scaled to 7.5e9 parameters",
                 figure[stage], (m.parameters + m.gradients + m.optimizer) * 1e9 * 7.5e9 / psi);
    }
  });
}

TEST_CASE("Part 13 | simulator: activations follow Korthikanti et al.'s formula", "[planning]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // Korthikanti et al. (2022), Table 2, per layer: s b h (34 + 5 a s / h) bytes on one GPU;
    // tensor parallelism: s b h (10 + 24 / t + 5 a s / (h t)); with sequence parallelism:
    // s b h (34 + 5 a s / h) / t; without the scores (selective recomputation, FlashAttention):
    // the same without the 5 a s / h.
    const dtk::ModelConfig& m = llama3_8b();
    const double s = 2048, b = 2, h = m.hidden, a = m.heads, t = 8;
    auto bytes = [&](int tp, bool sp, bool scores) {
      dtk::TrainingPlan plan = plan_of(tp, 1, 1, 1, 1);
      plan.sequence_parallel = sp;
      return dtk::layer_activation_bytes(m, plan, b, static_cast<int>(s), 2, scores);
    };
    check_near(check, "one GPU", s * b * h * (34 + 5 * a * s / h), bytes(1, false, true));
    check_near(check, "tp = 8", s * b * h * (10 + 24 / t + 5 * a * s / (h * t)),
               bytes(8, false, true));
    check_near(check, "tp = 8 with SP", s * b * h * (34 + 5 * a * s / h) / t, bytes(8, true, true));
    check_near(check, "tp = 8 with SP, scores not kept", s * b * h * 34 / t, bytes(8, true, false));
    // The simulator's step keeps, with one stage and one micro-batch in flight, L such layers.
    const dtk::SimulatedStep step = simulate(plan_of(8, 1, 1, 8, 32));  // b = 2 sequences of 8192
    check_near(check, "a step's activations, GB", m.layers * 8192 * 2 * h * 34 / 8 / 1e9,
               step.memory.activations);
  });
}

TEST_CASE("Part 13 | simulator: Llama 3 405B's published layout lands near its published MFU",
          "[planning]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // Grattafiori et al., "The Llama 3 Herd of Models" (2024), Table 4, first row: 8,192 H100s,
    // TP 8, CP 1, PP 16, DP 64, sequences of 8,192, 32 per replica (16M tokens a step), 430
    // TFLOP/s per GPU, BF16 MFU 43%. Their first and last stages hold one layer fewer, which the
    // simulator's even cut (8 layers on each of 16 stages, 126 in all) does not: it finds the
    // first stage less than 10% over the GPU's 80 GB, and reports the MFU the plan would reach.
    const dtk::ModelConfig model = dtk::load_model_config(kHere + "/llama3_405b.json");
    const dtk::ClusterConfig cluster = dtk::load_cluster_config(kHere + "/h100_80gb_x8192.json");
    const dtk::SimulatedStep step =
        dtk::simulate_training_step(model, cluster, plan_of(8, 1, 16, 64, 32), 16777216, 8192);
    std::printf(
        "Llama 3 405B on 8,192 H100s (TP 8, PP 16, DP 64): simulated MFU %.3f, published "
        "0.43; %.1f GB on the first stage\n",
        step.mfu, step.peak_memory_gb);
    check.that(step.mfu > 0.43 / 1.25 && step.mfu < 0.43 * 1.25,
               "MFU " + number(step.mfu) + " is not within a factor 1.25 of the published 0.43");
    check.that(step.peak_memory_gb > 80 && step.peak_memory_gb < 88,
               "memory " + number(step.peak_memory_gb) + " GB: expected just over 80");
  });
}

TEST_CASE("Part 13 | simulator: each rule of a layout is refused with its reason", "[planning]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    check_rule(check, plan_of(2, 1, 1, 16, 1), "= 32 GPUs, but the cluster has 64");
    check_rule(check, plan_of(0, 1, 1, 64, 1), "must all be at least 1");
    check_rule(check, plan_of(1, 1, 1, 64, 1, 4), "ZeRO has stages 0 to 3");
    dtk::TrainingPlan interleaved = plan_of(1, 1, 1, 64, 1);
    interleaved.schedule = "interleaved";
    check_rule(check, interleaved, "the schedules are \"1f1b\" and \"gpipe\"");
    check_rule(check, plan_of(16, 1, 1, 4, 1), "does not divide the 32 attention heads and 8");
    const dtk::SimulatedStep odd = simulate(plan_of(1, 64, 1, 1, 1), llama3_8b(), h100_x64(),
                                            /*tokens=*/512000, /*seq=*/4000);
    check.that(odd.why_invalid.find("2 x cp = 128 does not divide the sequence of 4000") !=
                   std::string::npos,
               "cp = 64 on sequences of 4000: got \"" + odd.why_invalid + "\"");
    check_rule(check, plan_of(1, 1, 64, 1, 1), "64 stages for 32 layers");
    check_rule(check, plan_of(1, 1, 1, 64, 3), "does not divide the batch's 512 sequences");
    dtk::TrainingPlan experts = plan_of(1, 1, 1, 64, 1);
    experts.ep = 2;
    check_rule(check, experts, "on a dense model");
    experts.ep = 16;
    check_rule(check, experts, "must divide the 8 experts", mixtral());
    // A plan that breaks no rule but does not fit: its numbers, and what it needs.
    const dtk::SimulatedStep over = simulate(plan_of(1, 1, 1, 64, 1, 0));
    check.that(!over.valid && over.mfu > 0 && over.peak_memory_gb > 80 &&
                   over.why_invalid.find("more than the GPU's 80.0 GB") != std::string::npos,
               "plain data parallelism of Llama-3-8B: expected over the memory, got \"" +
                   over.why_invalid + "\"");
    bool threw = false;
    try {
      simulate(plan_of(1, 1, 1, 64, 1), llama3_8b(), h100_x64(), kTokens + 1);
    } catch (const std::invalid_argument&) {
      threw = true;
    }
    check.that(threw, "tokens that are not whole sequences: expected std::invalid_argument");
  });
}

TEST_CASE("Part 13 | simulator: a collective's α-β cost on the link its group uses", "[planning]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // tp = 8 on nodes of 8: NVLink. Each micro-batch of b = 2 sequences sends, per layer, 4
    // all-reduces of its (2 · 8192, h) activations: 2 (n - 1) steps of α + bytes / (n β).
    const dtk::ClusterConfig& c = h100_x64();
    const double bytes = 2.0 * 2 * 8192 * llama3_8b().hidden, n = 8;
    const double all_reduce =
        2 * (n - 1) * (c.intra_node_us * 1e-6 + bytes / n / (c.intra_node_gbps * 1e9));
    const dtk::SimulatedStep step = simulate(plan_of(8, 1, 1, 8, 32));
    check_near(check, "tensor-parallel seconds", 32 * llama3_8b().layers * 4 * all_reduce,
               step.time.tensor_parallel);
    // On nodes of 4 GPUs the group of 8 straddles two: the same bytes at the network's 50 GB/s
    // instead of 450.
    dtk::ClusterConfig wide = c;
    wide.gpus_per_node = 4;
    const double slower = simulate(plan_of(8, 1, 1, 8, 32), llama3_8b(), wide).time.tensor_parallel;
    check.that(slower > 5 * step.time.tensor_parallel,
               "tp = 8 on nodes of 4: expected the network's slower link, got " + number(slower) +
                   " s against " + number(step.time.tensor_parallel) + " s within a node");
  });
}

TEST_CASE("Part 13 | simulator: a mixture of experts' expert MLPs run at the expert rate",
          "[planning]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // Mixtral on 32 A100s, ep 8 (the search's plan of the public case): the compute term is the
    // experts' FLOPs at expert_gemm_tflops (default gemm_tflops) plus the rest at gemm_tflops.
    // Halving the expert rate adds the experts' time once more, exactly; a dense model does not
    // change.
    const dtk::ClusterConfig a100 = dtk::load_cluster_config(kPublic + "a100_80gb_x32.json");
    dtk::ClusterConfig half = a100;
    half.expert_gemm_tflops = a100.gemm_rate() / 2e12;
    dtk::TrainingPlan plan = plan_of(1, 1, 1, 32, 16);
    plan.ep = 8;
    const double tokens = 2097152, seq = 4096;
    const dtk::SimulatedStep same = simulate(plan, mixtral(), a100, tokens, seq);
    const dtk::SimulatedStep slower = simulate(plan, mixtral(), half, tokens, seq);
    check.that(same.valid && slower.valid, "Mixtral, ep 8 on 32 A100s: expected a valid plan");
    const double expert_seconds = 3 * mixtral().layers * tokens / 32 *
                                  dtk::layer_flops_per_token(mixtral(), seq).experts /
                                  a100.gemm_rate();
    check_near(check, "the compute term with experts at half the rate",
               same.time.compute + expert_seconds, slower.time.compute);
    dtk::ClusterConfig h100_half = h100_x64();
    h100_half.expert_gemm_tflops = h100_x64().gemm_rate() / 2e12;
    const dtk::SimulatedStep dense = simulate(plan_of(8, 1, 1, 8, 32));
    check.that(dense.valid, "Llama-3-8B, tp 8 dp 8 on 64 H100s: expected a valid plan");
    check_near(check, "a dense model's compute term", dense.time.compute,
               simulate(plan_of(8, 1, 1, 8, 32), llama3_8b(), h100_half).time.compute);
  });
}

TEST_CASE("Part 13 | simulator: the fullest expert-parallel rank sets a mixture's pace",
          "[planning]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // Mixtral, ep 8 on 32 A100s, its router at capacity factor 1.5: the experts' compute and
    // activations (16 bytes a row and h, of k rows a token) are 1.5 times the even router's, and
    // the dispatch and combine's bytes too (their latency stays: the time is linear in the
    // factor, below 1.5 times); without ep the one rank holds every row: no change.
    const dtk::ClusterConfig a100 = dtk::load_cluster_config(kPublic + "a100_80gb_x32.json");
    dtk::ModelConfig uneven = mixtral(), twice = mixtral();
    uneven.capacity_factor = 1.5;
    twice.capacity_factor = 2;
    dtk::TrainingPlan plan = plan_of(1, 1, 1, 32, 16);
    plan.ep = 8;
    plan.recompute = true;  // (else a fuller rank's activations need more than 80 GB)
    const double tokens = 2097152, seq = 4096;
    const dtk::SimulatedStep even = simulate(plan, mixtral(), a100, tokens, seq);
    const dtk::SimulatedStep fullest = simulate(plan, uneven, a100, tokens, seq);
    const dtk::SimulatedStep fuller = simulate(plan, twice, a100, tokens, seq);
    check.that(even.valid && fullest.valid && fuller.valid,
               "Mixtral, ep 8 on 32 A100s: expected valid plans");
    const double expert_seconds = 4 * mixtral().layers * tokens / 32 *  // recomputed: 3 + 1
                                  dtk::layer_flops_per_token(mixtral(), seq).experts /
                                  a100.gemm_rate();
    check_near(check, "the compute term at capacity 1.5", even.time.compute + 0.5 * expert_seconds,
               fullest.time.compute);
    check_near(check, "dispatch and combine, from capacity 1.5 to 2 as from 1 to 1.5",
               fullest.time.expert_parallel - even.time.expert_parallel,
               fuller.time.expert_parallel - fullest.time.expert_parallel);
    const double ratio = fullest.time.expert_parallel / even.time.expert_parallel;
    check.that(ratio > 1.4 && ratio < 1.5,
               "dispatch and combine at capacity 1.5: " + number(ratio) +
                   " times the even router's, expected between 1.4 and 1.5");
    const double sequences = tokens / seq / 32 / 16;  // a micro-batch's
    const double expert_bytes = 16 * mixtral().experts_per_token * sequences * seq *
                                mixtral().hidden;  // 2-byte values: 16 bytes a row and h
    check_near(
        check, "one layer's activations at capacity 1.5",
        dtk::layer_activation_bytes(mixtral(), plan, sequences, seq, 2, false) + 0.5 * expert_bytes,
        dtk::layer_activation_bytes(uneven, plan, sequences, seq, 2, false));
    dtk::TrainingPlan no_ep = plan;
    no_ep.ep = 1;
    check_near(check, "without ep, the step at capacity 1.5",
               simulate(no_ep, mixtral(), a100, tokens, seq).step_seconds,
               simulate(no_ep, uneven, a100, tokens, seq).step_seconds);
  });
}

TEST_CASE("Part 13 | simulator: Part 8's bubble and what a planner trades", "[planning]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    // p stages and m micro-batches: the busiest stage idles about (p - 1) / (m + p - 1), a little
    // less as its output head (Mixtral's is 3% of a stage's work) makes it the slowest.
    const dtk::SimulatedStep pipe = simulate(plan_of(1, 1, 4, 16, 4), mixtral());
    const dtk::StepTime& t = pipe.time;
    const double busy = t.compute + t.tensor_parallel + t.pipeline;
    check_near(check, "bubble share, 4 stages, 4 micro-batches", 3.0 / 7,
               t.bubble / (t.bubble + busy), 0.05);
    // GPipe: 1F1B's time, more activations in flight.
    dtk::TrainingPlan gpipe = plan_of(1, 1, 4, 16, 8);
    const dtk::SimulatedStep one_f_one_b = simulate(gpipe);
    gpipe.schedule = "gpipe";
    const dtk::SimulatedStep all_forwards = simulate(gpipe);
    check_near(check, "GPipe's step time", one_f_one_b.step_seconds, all_forwards.step_seconds);
    check_near(check, "GPipe's activations, 8 micro-batches against min(4, 8)",
               2 * one_f_one_b.memory.activations, all_forwards.memory.activations);
    // Recomputation: a forward pass more of the layers, each layer's input kept only.
    dtk::TrainingPlan recompute = plan_of(8, 1, 1, 8, 32);
    const dtk::SimulatedStep kept = simulate(recompute);
    recompute.recompute = true;
    const dtk::SimulatedStep recomputed = simulate(recompute);
    check.that(recomputed.time.compute > 1.3 * kept.time.compute &&
                   recomputed.memory.activations < kept.memory.activations / 5,
               "recomputation: expected about 4/3 of the compute and a fraction of the "
               "activations");
    // ZeRO: stage 1 costs no time over stage 0 and less memory; stage 3 moves the most.
    const dtk::SimulatedStep z0 = simulate(plan_of(8, 1, 1, 8, 32, 0));
    const dtk::SimulatedStep z3 = simulate(plan_of(8, 1, 1, 8, 32, 3));
    check_near(check, "ZeRO-1's step time against stage 0", z0.step_seconds, kept.step_seconds);
    check.that(kept.memory.optimizer < z0.memory.optimizer &&
                   z3.memory.parameters < kept.memory.parameters &&
                   z3.time.data_parallel > 10 * kept.time.data_parallel,
               "ZeRO: expected stages 1 and 3 to shard more and stage 3 to send the most");
    // The same plan, the same answer.
    check.that(simulate(recompute).step_seconds == recomputed.step_seconds,
               "the simulator must be deterministic");
  });
}
