#include "dtk/planning/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace dtk {

namespace {

// ---------------------------------------------------------------------------------------------
// Part 7: the α–β cost of ring collectives. A message of B bytes over a link takes α + B / β.
// ---------------------------------------------------------------------------------------------

struct Link {
  double latency;    // α, seconds per message
  double bandwidth;  // β, bytes per second
};

double send(double bytes, Link link) { return link.latency + bytes / link.bandwidth; }

// The ring all-reduce of a buffer of `bytes` on n ranks: a reduce-scatter then an all-gather,
// 2 (n - 1) steps each moving a chunk of bytes / n.
double all_reduce(double bytes, int n, Link link) {
  return n < 2 ? 0 : 2.0 * (n - 1) * send(bytes / n, link);
}

// The ring all-gather whose result is `bytes` (or the reduce-scatter of a buffer of `bytes`):
// n - 1 steps of bytes / n. All-to-all, pairwise, costs the same when each rank sends `bytes`
// in all (its own block included).
double all_gather(double bytes, int n, Link link) {
  return n < 2 ? 0 : (n - 1) * send(bytes / n, link);
}

// ---------------------------------------------------------------------------------------------
// Placement (training_plan.hpp): tp fastest, then cp, dp, pp. A group of ranks that spans
// `span` consecutive ranks (its size times the product of the faster dimensions) stays within
// one node when the span divides the node's GPUs; any group that straddles a node boundary
// paces its collective at the network's speed.
// ---------------------------------------------------------------------------------------------

class Placement {
 public:
  explicit Placement(const ClusterConfig& c)
      : c_(c),
        intra_{c.intra_node_us * 1e-6, c.intra_node_gbps * 1e9},
        inter_{c.inter_node_us * 1e-6, c.inter_node_gbps * 1e9} {}

  Link link(int span) const {
    const bool one_node = c_.gpus <= c_.gpus_per_node || c_.gpus_per_node % span == 0;
    return one_node ? intra_ : inter_;
  }

 private:
  const ClusterConfig& c_;
  Link intra_, inter_;
};

// ---------------------------------------------------------------------------------------------
// The rules of a layout: the first one `plan` breaks, or "".
// ---------------------------------------------------------------------------------------------

std::string n(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", value);
  return text;
}

std::string broken_rule(const ModelConfig& m, const ClusterConfig& c, const TrainingPlan& p,
                        double sequences, int seq_len) {
  if (p.tp < 1 || p.cp < 1 || p.pp < 1 || p.dp < 1 || p.ep < 1 || p.microbatches < 1)
    return "tp, cp, pp, dp, ep and microbatches must all be at least 1";
  if (p.zero_stage < 0 || p.zero_stage > 3)
    return "zero_stage = " + n(p.zero_stage) + ": ZeRO has stages 0 to 3 (Part 9)";
  if (p.schedule != "1f1b" && p.schedule != "gpipe")
    return "schedule \"" + p.schedule + "\": the schedules are \"1f1b\" and \"gpipe\" (Part 8)";
  const double grid = double(p.tp) * p.cp * p.pp * p.dp;
  if (grid != c.gpus)
    return "tp x cp x pp x dp = " + n(p.tp) + " x " + n(p.cp) + " x " + n(p.pp) + " x " + n(p.dp) +
           " = " + n(grid) + " GPUs, but the cluster has " + n(c.gpus);
  if (m.heads % p.tp != 0 || m.kv_heads % p.tp != 0)
    return "tp = " + n(p.tp) + " does not divide the " + n(m.heads) + " attention heads and " +
           n(m.kv_heads) + " key/value heads (each tensor-parallel rank owns whole heads, Part 10)";
  if (p.cp > 1 && seq_len % (2 * p.cp) != 0)
    return "cp = " + n(p.cp) + ": 2 x cp = " + n(2 * p.cp) + " does not divide the sequence of " +
           n(seq_len) + " (context parallelism cuts it into 2 x cp chunks, Part 11)";
  if (p.pp > m.layers)
    return "pp = " + n(p.pp) + " stages for " + n(m.layers) +
           " layers: every stage needs at least one (Part 8)";
  if (std::fmod(sequences, double(p.dp) * p.microbatches) != 0)
    return "dp x microbatches = " + n(p.dp) + " x " + n(p.microbatches) +
           " does not divide the batch's " + n(sequences) +
           " sequences: each data-parallel replica runs sequences / dp of them in microbatches "
           "micro-batches of equal size";
  if (!m.mixture_of_experts() && p.ep != 1)
    return "ep = " + n(p.ep) + " on a dense model: expert parallelism needs experts (ep = 1)";
  if (m.experts % p.ep != 0 || p.dp % p.ep != 0)
    return "ep = " + n(p.ep) + " must divide the " + n(m.experts) + " experts and dp = " + n(p.dp) +
           " (the experts are split over data-parallel ranks, Part 12)";
  return "";
}

// ---------------------------------------------------------------------------------------------
// Part 9: the model states of Ψ parameters sharded over N ranks at a ZeRO stage: per
// parameter `value_bytes` of parameter and of gradient, the rest of 16 bytes of optimizer
// state (bf16: 2 + 2 + 12, the paper's K = 12; fp32: 4 + 4 + 8, Adam's two moments).
// ---------------------------------------------------------------------------------------------

struct ModelStates {
  double parameters = 0, gradients = 0, optimizer = 0;
};

ModelStates model_states(double psi, double shards, int stage, int value_bytes) {
  return {value_bytes * psi / (stage >= 3 ? shards : 1),
          value_bytes * psi / (stage >= 2 ? shards : 1),
          (16 - 2 * value_bytes) * psi / (stage >= 1 ? shards : 1)};
}

// ---------------------------------------------------------------------------------------------
// The simulation: one pipeline stage's micro-batch, then the step.
// ---------------------------------------------------------------------------------------------

class Step {
 public:
  Step(const ModelConfig& m, const ClusterConfig& c, const TrainingPlan& p, double sequences,
       int seq_len)
      : m_(m),
        c_(c),
        p_(p),
        at_(c),
        params_(parameter_counts(m)),
        flops_(layer_flops_per_token(m, seq_len)),
        s_(seq_len),
        s_local_(double(seq_len) / p.cp),
        b_(sequences / (double(p.dp) * p.microbatches)),
        tokens_(b_ * s_local_),
        layers_(std::ceil(double(m.layers) / p.pp)),  // Part 8's balanced cut: the fullest
        vb_(c.value_bytes),
        recompute_(p.recompute ? 1 : 0),
        capacity_(p.ep > 1 ? m.capacity_factor : 1) {}

  // One micro-batch's time on a stage, forward and backward, communication included.
  StepTime micro_batch(bool last) const {
    StepTime t;
    const double tp = p_.tp, layers = layers_;
    // Part 4: each of the micro-batch's tokens (b · s / cp on this rank) passes every matrix of
    // the stage's layers once, its queries attend all s keys; tp splits every product. The
    // backward pass costs twice the forward; recomputation runs the layers' forward again. A
    // mixture of experts' expert MLPs run at the cluster's expert rate, under expert parallelism
    // on the rows of the fullest ep rank (the capacity factor times the mean: Part 12's
    // dispatch waits for it).
    const double layer = tokens_ * (flops_.projections - flops_.experts + flops_.attention) / tp;
    const double experts = capacity_ * tokens_ * flops_.experts / tp;
    const double head = last ? tokens_ * head_flops_per_token(m_) / tp : 0;
    t.compute =
        layers * (3 + recompute_) * (layer / c_.gemm_rate() + experts / c_.expert_gemm_rate()) +
        3 * head / c_.gemm_rate();
    // Part 10: Megatron's f and g, two all-reduces of the (tokens, h) activations forward and
    // two backward per layer (two more when recomputing); with sequence parallelism each is a
    // reduce-scatter and an all-gather: the same bytes.
    const double activation = vb_ * tokens_ * m_.hidden;
    t.tensor_parallel =
        layers * (4 + 2 * recompute_) * all_reduce(activation, p_.tp, at_.link(p_.tp));
    // Part 11: ring attention passes this rank's K and V block (its kv heads' share) cp - 1
    // times forward; backward passes K, V and their gradients, twice the bytes.
    if (p_.cp > 1) {
      const double kv = vb_ * 2 * tokens_ * m_.kv_dim() / tp;
      const Link ring = at_.link(p_.tp * p_.cp);
      t.context_parallel =
          layers * (p_.cp - 1) * ((1 + recompute_) * send(kv, ring) + send(2 * kv, ring));
    }
    // Part 12: each MoE layer dispatches every token's k rows to the ranks holding their experts
    // and combines them back, forward and backward (the tp ranks share the tokens out); the
    // fullest ep rank receives the capacity factor times the mean.
    if (p_.ep > 1) {
      const double rows = capacity_ * vb_ * m_.experts_per_token * tokens_ * m_.hidden / tp;
      t.expert_parallel =
          layers * (4 + 2 * recompute_) * all_gather(rows, p_.ep, at_.link(p_.tp * p_.cp * p_.ep));
    }
    // Part 8: the stage receives its input activations and sends back their gradient (each tp
    // rank a 1/tp share with sequence parallelism).
    if (p_.pp > 1) {
      const double boundary = activation / (p_.sequence_parallel ? tp : 1);
      t.pipeline = 2 * send(boundary, at_.link(p_.tp * p_.cp * p_.dp * p_.pp));
    }
    return t;
  }

  // Parts 6 and 9: a stage's gradients summed over the cp · dp ranks that hold the same weights
  // (and its experts' over the cp · dp / ep that hold the same experts), once per step.
  double data_parallel(bool first, bool last) const {
    const Link link = at_.link(p_.tp * p_.cp * p_.dp);
    const double m = p_.microbatches;
    auto sync = [&](double psi, int ranks) {
      const double bytes = vb_ * psi;
      switch (p_.zero_stage) {
        case 0:  // an all-reduce of the gradients
        case 1:  // a reduce-scatter of the gradients, an all-gather of the updated parameters
          return all_reduce(bytes, ranks, link);
        case 2:  // no whole gradient kept: reduce-scattered after every micro-batch
          return (m + 1) * all_gather(bytes, ranks, link);
        default:  // and the parameters gathered before each micro-batch's forward and backward
          return 3 * m * all_gather(bytes, ranks, link);
      }
    };
    return sync(shared_parameters(first, last), p_.cp * p_.dp) +
           sync(expert_parameters(), p_.cp * p_.dp / p_.ep);
  }

  // The memory of the first or the last stage (both, with one stage), in bytes.
  StepMemory memory(bool first, bool last) const {
    StepMemory memory;
    const ModelStates shared =
        model_states(shared_parameters(first, last), p_.cp * p_.dp, p_.zero_stage, vb_);
    const ModelStates experts =
        model_states(expert_parameters(), p_.cp * p_.dp / p_.ep, p_.zero_stage, vb_);
    memory.parameters = shared.parameters + experts.parameters;
    memory.gradients = shared.gradients + experts.gradients;
    memory.optimizer = shared.optimizer + experts.optimizer;
    // Part 8: the micro-batches whose activations stage s keeps at once: min(p - s, m) with
    // 1F1B, all m with GPipe.
    const double m = p_.microbatches;
    const double in_flight = p_.schedule == "gpipe" ? m : std::min(first ? double(p_.pp) : 1.0, m);
    // With recomputation each layer keeps its input only, and one layer's activations live
    // while its backward pass runs.
    const double input = vb_ * tokens_ * m_.hidden / (p_.sequence_parallel ? p_.tp : 1);
    memory.activations = p_.recompute ? in_flight * layers_ * input + layer_activations()
                                      : in_flight * layers_ * layer_activations();
    // The last stage's logits and their gradient, fp32 (the vocabulary split over tp), and
    // ZeRO-3's two gathered layers (the one computing, the next one arriving).
    if (last) memory.transient += 2 * 4.0 * tokens_ * m_.vocab / p_.tp;
    if (p_.zero_stage == 3)
      memory.transient +=
          2 * vb_ * (params_.layer_shared / p_.tp + params_.layer_experts / (p_.tp * p_.ep));
    return memory;
  }

 private:
  // Part 10: one layer's activations, without the attention's scores: the simulator's
  // attention is FlashAttention's (the GPT's kernels, Part 11), which keeps the log-sum-exp and
  // recomputes the scores in the backward pass (Korthikanti et al.'s "selective recomputation").
  double layer_activations() const {
    return layer_activation_bytes(m_, p_, b_, static_cast<int>(s_), c_.value_bytes,
                                  /*keep_scores=*/false);
  }

  // The non-expert parameters one GPU of a stage holds: its layers' attention, norms and router,
  // the embedding on the first stage, the final norm and head on the last (a tied head is the
  // embedding's matrix: a second copy only when another stage holds the embedding), all split
  // over tp.
  double shared_parameters(bool first, bool last) const {
    double psi = layers_ * params_.layer_shared;
    if (first) psi += params_.embedding;
    if (last) psi += params_.final_norm + (m_.tied && first ? 0 : params_.output_head);
    return psi / p_.tp;
  }

  // The expert (or dense MLP) parameters one GPU holds: its layers' experts, split over ep
  // ranks and each expert over tp.
  double expert_parameters() const { return layers_ * params_.layer_experts / (p_.tp * p_.ep); }

  const ModelConfig& m_;
  const ClusterConfig& c_;
  const TrainingPlan& p_;
  Placement at_;
  ParameterCounts params_;
  LayerFlops flops_;
  double s_, s_local_, b_, tokens_, layers_, vb_, recompute_;
  double capacity_;  // the fullest ep rank's expert rows over the mean (1 without ep)
};

}  // namespace

double layer_activation_bytes(const ModelConfig& model, const TrainingPlan& plan, double sequences,
                              int seq_len, int value_bytes, bool keep_scores) {
  // Korthikanti et al., 2022, with 2-byte values and 1-byte dropout masks: a layer keeps
  // s · b · h · (34 + 5 · a · s / h) bytes. Tensor parallelism splits 24 of the 34 and leaves 10
  // replicated (LayerNorm's inputs, the inputs of the QKV and MLP products, dropout masks);
  // sequence parallelism splits those 10 too. The scores' 5 · a · s per token are split by
  // heads. The MLP's 16 split bytes per token and h (its 4h-wide output and activation) are
  // kept for each of a token's k experts (under expert parallelism, for the fullest ep rank's
  // rows: the capacity factor times the mean). Part 11: a cp rank keeps its s / cp tokens, whose
  // queries see all s keys. Values of 4 bytes double it all.
  const double tp = plan.tp, k = model.experts_per_token;
  const double capacity = plan.ep > 1 ? model.capacity_factor : 1;
  const double tokens = sequences * seq_len / plan.cp;
  const double split = 8 + 16 * k * capacity, replicated = 10;
  const double per_value =
      plan.sequence_parallel ? (split + replicated) / tp : replicated + split / tp;
  double bytes = tokens * model.hidden * per_value;
  if (keep_scores) bytes += 5.0 * model.heads * tokens * seq_len / tp;
  return bytes * value_bytes / 2;
}

namespace {

StepMemory in_gigabytes(StepMemory bytes) {
  for (double* term : {&bytes.parameters, &bytes.gradients, &bytes.optimizer, &bytes.activations,
                       &bytes.transient}) {
    *term /= 1e9;
  }
  return bytes;
}

std::string gigabytes(double gb) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", gb);
  return text;
}

}  // namespace

SimulatedStep simulate_training_step(const ModelConfig& model, const ClusterConfig& cluster,
                                     const TrainingPlan& plan, double global_batch_tokens,
                                     int seq_len) {
  if (seq_len < 1) throw std::invalid_argument("simulate_training_step: seq_len must be >= 1");
  const double sequences = global_batch_tokens / seq_len;
  if (!(sequences >= 1) || sequences != std::floor(sequences))
    throw std::invalid_argument(
        "simulate_training_step: global_batch_tokens must be a positive multiple of seq_len");
  if (model.gpt2 && seq_len > model.positions)
    throw std::invalid_argument("simulate_training_step: " + model.name + " has " +
                                n(model.positions) + " learned positions, fewer than seq_len");
  SimulatedStep result;
  result.why_invalid = broken_rule(model, cluster, plan, sequences, seq_len);
  if (!result.why_invalid.empty()) return result;

  const Step step(model, cluster, plan, sequences, seq_len);
  // Part 8: the stages other than the last do the same work (the embedding is a lookup), the
  // last adds the output head and paces the pipeline. m micro-batches take (m - 1) of its
  // micro-batch times plus one pass through all p stages: m · last + (p - 1) · first.
  const bool one_stage = plan.pp == 1;
  const StepTime last = step.micro_batch(true);
  const StepTime first = step.micro_batch(one_stage);
  auto total = [](const StepTime& t) {
    return t.compute + t.tensor_parallel + t.context_parallel + t.expert_parallel + t.pipeline;
  };
  const double m = plan.microbatches;
  StepTime& time = result.time;
  time.compute = m * last.compute;
  time.tensor_parallel = m * last.tensor_parallel;
  time.context_parallel = m * last.context_parallel;
  time.expert_parallel = m * last.expert_parallel;
  time.pipeline = m * last.pipeline;
  time.bubble = (plan.pp - 1) * total(first);
  time.data_parallel =
      std::max(step.data_parallel(true, one_stage), step.data_parallel(one_stage, true));
  result.step_seconds = total(time) + time.bubble + time.data_parallel;
  result.mfu = training_flops(model, global_batch_tokens, seq_len) /
               (result.step_seconds * cluster.gpus * cluster.peak_tflops * 1e12);

  const StepMemory first_memory = step.memory(true, one_stage);
  const StepMemory last_memory = step.memory(one_stage, true);
  const bool first_fuller = first_memory.total() >= last_memory.total();
  result.memory = in_gigabytes(first_fuller ? first_memory : last_memory);
  result.peak_memory_gb = result.memory.total();
  result.valid = result.peak_memory_gb <= cluster.memory_gb;
  if (!result.valid) {
    const StepMemory& mem = result.memory;
    result.why_invalid = "needs " + gigabytes(mem.total()) + " GB on the " +
                         (one_stage      ? "GPU"
                          : first_fuller ? "first stage"
                                         : "last stage") +
                         " (parameters " + gigabytes(mem.parameters) + ", gradients " +
                         gigabytes(mem.gradients) + ", optimizer " + gigabytes(mem.optimizer) +
                         ", activations " + gigabytes(mem.activations) + ", transient " +
                         gigabytes(mem.transient) + "), more than the GPU's " +
                         gigabytes(cluster.memory_gb) + " GB";
  }
  return result;
}

std::string step_summary(const SimulatedStep& step, const ClusterConfig& cluster) {
  if (!step.valid && step.step_seconds == 0) return "invalid: " + step.why_invalid;
  char text[160];
  std::snprintf(text, sizeof text, "step %.3f s, %.1f of %.0f GB per GPU, MFU %.3f",
                step.step_seconds, step.peak_memory_gb, cluster.memory_gb, step.mfu);
  return step.valid ? std::string("valid: ") + text
                    : "invalid: " + step.why_invalid + " (it would take " + text + ")";
}

}  // namespace dtk
