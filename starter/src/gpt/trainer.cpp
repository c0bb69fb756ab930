#include "dtk/gpt/trainer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <tuple>

#include <xtensor/xmanipulation.hpp>

#include "dtk/gpt/batches.hpp"
#include "dtk/gpt/bytes.hpp"
#include "dtk/gpt/fully_sharded.hpp"
#include "dtk/gpt/gemm_peak.hpp"
#include "dtk/gpt/gpt.hpp"
#include "dtk/gpt/model_states.hpp"
#include "dtk/gpt/pipeline_stage.hpp"
#include "dtk/gpt/sampling.hpp"
#include "dtk/training/progress_line.hpp"
#include "dtk/training/rank_count.hpp"

namespace dtk::gpt {

namespace {

std::string text(long value) { return std::to_string(value); }

// The square of the model's L2 norm, each parameter counted once, on the first context-parallel
// rank: a tensor-parallel slice on the first data-parallel replica, a replicated tensor also only
// on the first rank of its tensor-parallel group, an expert on the first replica holding it (the
// ep ranks dp_idx < ep hold every expert once), a replicated key/value head's columns a share
// from each of its tensor-parallel replicas. Summed over the world.
template <class T>
double weights_square_sum(const std::vector<Parameter<T>*>& parameters, const GptGrid& g,
                          const Communicator& world) {
  const double key_value_replicas = double(g.key_value_replica_comm.Get_size()) / (g.dp * g.cp);
  double sum = 0;
  for (const Parameter<T>* p : parameters) {
    const bool counted =
        g.cp_idx == 0 &&
        (p->sharing == Sharing::TensorParallel || p->sharing == Sharing::KeyValueReplicas
             ? g.dp_idx == 0
         : p->sharing == Sharing::Replicated ? g.dp_idx == 0 && g.tp_idx == 0
                                             : g.dp_idx < g.ep && g.tp_idx == 0);
    if (!counted) continue;
    double square = 0;
    for (const T v : p->value) square += double(v) * double(v);
    sum += p->sharing == Sharing::KeyValueReplicas ? square / key_value_replicas : square;
  }
  double total = 0;
  MPI_Allreduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, world.handle());
  return total;
}

// A step's (or the validation's) summed cross-entropy over `comm` (loss_comm: the ranks scoring
// other tokens, and the other stages, which score none; a tensor-parallel group scores the same
// ones). Raw MPI: these are measurements, not the training's communication.
double sum_over(double value, const Communicator& comm) {
  double total = 0;
  MPI_Allreduce(&value, &total, 1, MPI_DOUBLE, MPI_SUM, comm.handle());
  return total;
}

// A forward of `batch` without a backward, through the pipeline's chunks in turn (each receives
// the stream from the chunk before, on the previous stage, and sends its own on; interleaved, the
// last stage's chunk v hands it to the first stage's chunk v + 1): the cross-entropy this rank
// scored. One message at a time travels the ring, so blocking calls cannot deadlock.
template <class T>
double forward_only(const std::vector<std::unique_ptr<Gpt<T>>>& chunks, const GptBatch& batch,
                    GptGrid& g) {
  if (g.pp == 1) return chunks[0]->forward(batch).cross_entropy_sum;
  constexpr int kValidationTag = 7;
  const int previous = (g.pp_idx + g.pp - 1) % g.pp, next = (g.pp_idx + 1) % g.pp;
  double loss = 0;
  for (const std::unique_ptr<Gpt<T>>& chunk : chunks) {
    Matrix<T> stream;
    if (!chunk->layout().holds_embedding()) {
      stream =
          Matrix<T>::from_shape({chunk->stream_rows(batch), std::size_t(chunk->config().hidden)});
      g.pp_comm.Recv(stream, previous, kValidationTag);
    }
    loss += chunk->forward(batch, stream, 0).cross_entropy_sum;
    if (!chunk->layout().holds_head(chunk->config())) {
      g.pp_comm.Send(chunk->stream_output(), next, kValidationTag);
    }
  }
  return loss;
}

// The mean cross-entropy over the validation windows, each data-parallel rank taking its
// contiguous share, batch_size / dp windows at a time, at this rank's positions. Every rank runs
// as many forwards (a rank whose share is used up runs its last window again, unscored): an
// expert-parallel group's all-to-alls span data-parallel ranks.
template <class T>
double validation_loss(const std::vector<std::unique_ptr<Gpt<T>>>& chunks, const GptTrainOptions& o,
                       const Corpus& corpus, const std::vector<std::size_t>& windows,
                       const std::vector<int>& positions, GptGrid& g) {
  const std::size_t share = (windows.size() + o.dp - 1) / o.dp;
  const std::size_t first = std::min(windows.size(), g.dp_idx * share);
  const std::size_t last = std::min(windows.size(), first + share);
  const std::size_t chunk = std::max(1, o.batch_size / o.dp);
  double sum = 0;
  for (std::size_t begin = first; begin < first + share; begin += chunk) {
    const bool scored = begin < last;
    const std::size_t start = scored ? begin : windows.size() - 1;
    const std::size_t count = scored ? std::min(chunk, last - begin) : 1;
    GptBatch batch = make_batch(corpus, windows, start, count, positions, 1.0);
    batch.training = false;
    g.sequences = batch.batch;
    const double loss = forward_only(chunks, batch, g);
    if (scored) sum += loss;
  }
  return sum_over(sum, g.loss_comm) / (double(windows.size()) * o.model.seq_len);
}

std::string progress(long step, long steps, const GptStepRecord& r, double tokens_per_second,
                     const GptValidation* validation) {
  char line[200];
  std::snprintf(line, sizeof line, "step %5ld/%ld %s  loss %.4f  lr %.2e  %6.1fk tok/s", step,
                steps, progress_bar(step, steps).c_str(), r.loss, r.lr, tokens_per_second / 1000);
  std::string out = line;
  if (validation) {
    std::snprintf(line, sizeof line, "  val %.4f", validation->loss);
    out += line;
  }
  return out;
}

// Every rank's `values` one after another, in rank order, on every rank of `comm` (the pipeline's
// stages hold consecutive blocks: their blocks' values in model order). Raw MPI: a measurement.
std::vector<double> in_stage_order(const std::vector<double>& values, const Communicator& comm) {
  const int ranks = comm.Get_size(), mine = static_cast<int>(values.size());
  std::vector<int> counts(ranks), offsets(ranks, 0);
  MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, comm.handle());
  for (int r = 1; r < ranks; ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  std::vector<double> all(offsets.back() + counts.back());
  MPI_Allgatherv(values.data(), mine, MPI_DOUBLE, all.data(), counts.data(), offsets.data(),
                 MPI_DOUBLE, comm.handle());
  return all;
}

// Every rank's report, on world rank 0.
std::vector<GptRankReport> gather_reports(const GptRankReport& mine, const Communicator& world) {
  std::vector<GptRankReport> all(world.Get_rank() == 0 ? world.Get_size() : 0);
  MPI_Gather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, 0, world.handle());
  return all;
}

}  // namespace

std::string gpt_options_problem(const GptTrainOptions& o, const int ranks, const Corpus& corpus) {
  if (o.sequence_parallel && o.tp == 1) {
    return "--sp (sequence parallelism) needs tensor parallelism, --tp > 1";
  }
  if (o.zigzag && o.cp == 1) return "--zigzag (the zigzag layout of ring attention) needs --cp > 1";
  if (!o.model.mixture_of_experts() && o.model.top_k != 1) {
    return "--top_k " + text(o.model.top_k) + " needs a mixture of experts: give --experts too";
  }
  if (o.ep > 1 && !o.model.mixture_of_experts()) {
    return "--ep " + text(o.ep) + " needs a mixture of experts: give --experts too";
  }
  GptConfig m = o.model;
  m.vocab_size = corpus.vocab_size;
  const std::string problem = config_problem(m);
  if (!problem.empty()) return problem;
  if (o.batch_size % o.dp != 0) {
    return "--batch_size " + text(o.batch_size) + " must be a multiple of --dp " + text(o.dp) +
           ": each data-parallel rank reads batch_size / dp sequences";
  }
  // Part 10: whole heads, MLP columns and vocabulary rows per rank; S/tp positions under --sp.
  if (m.heads % o.tp != 0) {
    return "--tp " + text(o.tp) + " must divide the " + text(m.heads) +
           " heads: each rank holds whole heads";
  }
  if (m.vocab_size % o.tp != 0) {
    return "--tp " + text(o.tp) + " must divide the vocabulary of " + text(m.vocab_size) +
           " (the text's characters padded to a multiple of 64)";
  }
  if (m.mlp_width() % o.tp != 0) {
    return "--tp " + text(o.tp) + " must divide the MLP's hidden width " + text(m.mlp_width()) +
           ": each rank holds f / tp of its columns";
  }
  // Part 10.1's gqa_qkv_columns: whole key/value heads of each rank's own (tp dividing kv), or
  // one replicated over tp/kv ranks (kv dividing tp).
  if (m.key_value_heads() % o.tp != 0 && o.tp % m.key_value_heads() != 0) {
    return "--tp " + text(o.tp) + " with --kv_heads " + text(m.key_value_heads()) +
           ": one must divide the other (each rank its own key/value heads, or one of them "
           "replicated over tp/kv ranks)";
  }
  const int positions = m.seq_len / o.cp;  // of each sequence, on one context-parallel rank
  if (o.sequence_parallel && (m.seq_len % o.cp != 0 || positions % o.tp != 0)) {
    return "--sp: --tp " + text(o.tp) + " must divide the " + text(m.seq_len) + " / " + text(o.cp) +
           " positions each rank's residual stream splits";
  }
  if (o.tp > 1 && m.mixture_of_experts()) {
    return "--tp " + text(o.tp) +
           " with --experts: this trainer splits a mixture of experts over "
           "--ep only (its experts are whole MLPs); use --dp and --ep";
  }
  // Part 11: equal slices (two chunks each under --zigzag).
  const int slices = o.zigzag ? 2 * o.cp : o.cp;
  if (m.seq_len % slices != 0) {
    return "--cp " + text(o.cp) + (o.zigzag ? " --zigzag cuts" : " cuts") + " each sequence into " +
           text(slices) + " equal slices, which must divide --seq " + text(m.seq_len);
  }
  if (o.cp > 1 && o.sample_chars > 0) {
    return "--sample with --cp " + text(o.cp) +
           ": sampling runs the model one position at a "
           "time, which a context-parallel group cannot split; sample without --cp";
  }
  // Part 12: ep consecutive data-parallel ranks hold E/ep experts each.
  if (o.dp % o.ep != 0) {
    return "--ep " + text(o.ep) + " must divide --dp " + text(o.dp) +
           ": an expert-parallel group is ep consecutive data-parallel ranks";
  }
  if (m.mixture_of_experts() && m.experts % o.ep != 0) {
    return "--ep " + text(o.ep) + " must divide the " + text(m.experts) +
           " experts: each rank holds experts / ep of them";
  }
  // The pipeline: stages of whole pieces, each rank's share cut into equal micro-batches.
  if (o.pp < 1 || o.microbatches < 1) {
    return "--pp and --microbatches must be at least 1 (got " + text(o.pp) + " and " +
           text(o.microbatches) + ")";
  }
  const bool interleaved = o.schedule == PipelineSchedule::Interleaved;
  if (o.virtual_stages < 1 || (o.virtual_stages > 1 && !interleaved)) {
    return "--virtual " + text(o.virtual_stages) +
           " (model chunks per pipeline rank) needs --schedule interleaved";
  }
  // Part 15: the buckets sum one group's gradients (the dp · cp ranks of a dense model) during
  // one backward.
  if (o.bucket_mb < 0) return "--bucket_mb must be 0 or more";
  if (o.bucket_mb > 0 && (o.pp > 1 || o.microbatches > 1)) {
    return "--bucket_mb with --pp or --microbatches: the buckets are reduced during one backward "
           "per step, which a pipeline runs in micro-batches; use one of the two";
  }
  const bool replicated_key_values = m.key_value_heads() < o.tp;
  if (o.bucket_mb > 0 && (o.sequence_parallel || m.mixture_of_experts() || replicated_key_values)) {
    return std::string("--bucket_mb with ") +
           (o.sequence_parallel     ? "--sp"
            : replicated_key_values ? "fewer --kv_heads than --tp"
                                    : "--experts") +
           ": its gradients are summed over two groups of ranks, and the buckets sum over one "
           "(the data- and context-parallel ranks of a dense model)";
  }
  if (o.zero_stage < 0 || o.zero_stage > 3) {
    return "--zero " + text(o.zero_stage) + ": the stages are 0 to 3";
  }
  if (o.bf16 && o.optimizer != Optimizer::Adam) {
    return "--dtype bf16 trains with --optimizer adam: its fp32 master weights and moments are "
           "Part 16.2's MixedPrecisionAdam";
  }
  if (o.zero_stage > 0 && o.bucket_mb > 0) {
    return "--zero " + text(o.zero_stage) +
           " with --bucket_mb: ZeRO sums the gradients shard by shard after the backward, the "
           "buckets during it; use one of the two";
  }
  if (interleaved && o.pp < 2) {
    return "--schedule interleaved needs --pp 2 or more: its chunks go round the stages";
  }
  if (interleaved && o.microbatches % o.pp != 0) {
    return "--schedule interleaved needs --microbatches (" + text(o.microbatches) +
           ") to be a multiple of --pp (" + text(o.pp) +
           "): its micro-batches go through the chunks in groups of pp";
  }
  if (o.pp * o.virtual_stages > m.layers + 2) {
    return "--pp " + text(o.pp) +
           (o.virtual_stages > 1 ? " x --virtual " + text(o.virtual_stages) + " is more chunks"
                                 : std::string(" is more stages")) +
           " than the model has pieces: " + text(m.layers + 2) + " (the embedding, " +
           text(m.layers) + " blocks, the head)";
  }
  if (o.batch_size % (o.dp * o.microbatches) != 0) {
    return "--batch_size " + text(o.batch_size) +
           " must be a multiple of --dp x --microbatches = " + text(o.dp) + " x " +
           text(o.microbatches) +
           ": the batch is m micro-batches, each split evenly over the data-parallel ranks";
  }
  if (o.pp > 1 && o.sample_chars > 0) {
    return "--sample with --pp " + text(o.pp) +
           ": sampling runs the whole model on one rank; sample without --pp";
  }
  return rank_count_problem("the layout needs tp x cp x dp x pp = " + text(o.tp) + " x " +
                                text(o.cp) + " x " + text(o.dp) + " x " + text(o.pp),
                            o.tp * o.cp * o.dp * o.pp, ranks);
}

template <class T>
std::string build_problem(const GptTrainOptions& o, const GptParallelism<T>& parallelism) {
  if (o.bucket_mb > 0 && !parallelism.bucketed_sum) {
    return "--bucket_mb runs the gradient sum on Part 15's functions (assignment 4), which this "
           "build of gpt_train does not hold";
  }
  if (o.zero_stage == 3 && !parallelism.fully_sharded_blocks) {
    return "--zero 3 gathers the model piece by piece with Part 16's FullyShardedBlocks "
           "(assignment 4), which this build of gpt_train does not hold";
  }
  if (o.bf16 && (!parallelism.to_bf16 || !parallelism.mixed_precision_adam)) {
    return "--dtype bf16 rounds with Part 16's to_bf16 and steps with its MixedPrecisionAdam "
           "(assignment 4), which this build of gpt_train does not hold";
  }
  if ((o.zero_stage == 1 || o.zero_stage == 2) && !parallelism.zero_gather_params) {
    return "--zero " + text(o.zero_stage) +
           " shards the model states with Part 9's functions (assignment 2), which this build of "
           "gpt_train does not hold";
  }
  if (o.pp == 1 && o.microbatches == 1) return "";
  if (!parallelism.run_schedule) {
    return "--pp and --microbatches run the pipeline on Part 8's functions (assignment 2), which "
           "this build of gpt_train does not hold";
  }
  if (o.schedule == PipelineSchedule::Interleaved && !parallelism.run_interleaved) {
    return "--schedule interleaved runs on Part 14's functions (assignment 4), which this build "
           "of gpt_train does not hold";
  }
  return "";
}

template std::string build_problem(const GptTrainOptions&, const GptParallelism<float>&);
template std::string build_problem(const GptTrainOptions&, const GptParallelism<double>&);

namespace {

// The grid as `layout` lays it out: each group's communicator split from the world, coloured by
// its lowest world rank (every member computes the same list) and ordered by world rank.
void lay_out(GptGrid& g, const Communicator& world, const GridLayout& layout) {
  const int rank = world.Get_rank();
  const std::array<int, 5> at = layout.coordinates(g, rank);
  std::tie(g.tp_idx, g.cp_idx, g.dp_idx, g.pp_idx, g.ep_idx) =
      std::tuple(at[0], at[1], at[2], at[3], at[4]);
  const auto split = [&](GptGroup group) {
    return world.Split(layout.group(g, rank, group).front(), rank);
  };
  g.stage_comm = split(GptGroup::Stage);
  g.pp_comm = split(GptGroup::Pipeline);
  g.tp_comm = split(GptGroup::Tensor);
  g.cp_comm = split(GptGroup::Context);
  g.ep_comm = split(GptGroup::Expert);
  g.replica_comm = split(GptGroup::Replicas);
  g.expert_replica_comm = split(GptGroup::ExpertReplicas);
  g.loss_comm = world.Split(g.tp_idx, rank);
}

}  // namespace

GptGrid make_grid(const GptTrainOptions& o, const Communicator& world, const GridLayout& layout) {
  GptGrid g;
  g.tp = o.tp;
  g.cp = o.cp;
  g.dp = o.dp;
  g.ep = o.ep;
  g.pp = o.pp;
  g.sequence_parallel = o.sequence_parallel;
  g.zigzag = o.zigzag;
  if (layout.coordinates) {
    lay_out(g, world, layout);
    return g;
  }
  const int rank = world.Get_rank(), stage_size = o.tp * o.cp * o.dp;
  const int in_stage = rank % stage_size;  // this rank in its stage
  g.tp_idx = in_stage % o.tp;
  g.cp_idx = (in_stage / o.tp) % o.cp;
  g.dp_idx = in_stage / (o.tp * o.cp);
  g.ep_idx = g.dp_idx % o.ep;
  g.pp_idx = rank / stage_size;
  g.stage_comm = world.Split(g.pp_idx, rank);
  g.pp_comm = world.Split(in_stage, rank);
  g.loss_comm = world.Split(g.tp_idx, rank);
  // The groups inside the stage, by the coordinates they share.
  const Communicator& stage = g.stage_comm;
  const int expert_group = g.dp_idx / o.ep;  // which ep consecutive dp ranks
  g.tp_comm = stage.Split(g.dp_idx * o.cp + g.cp_idx, in_stage);
  g.cp_comm = stage.Split(g.dp_idx * o.tp + g.tp_idx, in_stage);
  g.ep_comm = stage.Split((expert_group * o.cp + g.cp_idx) * o.tp + g.tp_idx, in_stage);
  g.replica_comm = stage.Split(g.tp_idx, in_stage);
  g.expert_replica_comm = stage.Split(g.ep_idx * o.tp + g.tp_idx, in_stage);
  return g;
}

double learning_rate(double lr, long step, long steps) {
  const long warmup = std::max(1L, std::min(100L, steps / 10));
  if (step <= warmup) return lr * step / warmup;
  const double progress = steps > warmup ? double(step - warmup) / (steps - warmup) : 1.0;
  return lr * (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * progress)));
}

namespace {

// The model's pipeline chunks, pp · V of them balanced by their FLOPs (8.1): chunk c holds the
// pieces [cuts[c], cuts[c + 1]). One chunk of every piece without a pipeline.
template <class T>
std::vector<int> chunk_cuts(const GptConfig& config, const GptTrainOptions& o,
                            const GptParallelism<T>& par) {
  if (o.pp == 1) return {0, config.layers + 2};
  return par.partition(piece_flops(config), o.pp * o.virtual_stages);
}

// This rank's slice of its chunk v (the model's chunk v · pp + pp_idx): the students' 10.1 and
// 12.1 say which.
template <class T>
GptLayout make_layout(const GptConfig& config, const GptGrid& g, const GptParallelism<T>& par,
                      const std::vector<int>& cuts, int v) {
  GptLayout layout = one_rank_layout(config);
  const int chunk = v * g.pp + g.pp_idx;
  layout.piece_begin = cuts.at(chunk);
  layout.piece_end = cuts.at(chunk + 1);
  if (g.tp > 1) {
    layout.tp_size = g.tp;
    layout.tp_idx = g.tp_idx;
    layout.qkv_columns =
        par.qkv_columns(config.hidden, config.heads, config.key_value_heads(), g.tp, g.tp_idx);
    layout.sequence_parallel = g.sequence_parallel;
  }
  if (g.ep > 1) {
    std::tie(layout.expert_begin, layout.expert_end) =
        par.local_experts(config.experts, g.ep, g.ep_idx);
  }
  return layout;
}

// The ranks of the stage holding the same key/value heads as this one, told apart by their
// first K column: with fewer key/value heads than tp, tp/kv tensor-parallel ranks (times dp · cp);
// else each tensor-parallel rank's own, the ranks of replica_comm.
Communicator key_value_replicas(const GptGrid& g, const GptConfig& config,
                                const GptLayout& layout) {
  const int first_key_column =
      layout.qkv_columns.at(layout.local_heads(config) * config.head_size());
  return g.stage_comm.Split(first_key_column, g.stage_comm.Get_rank());
}

// The positions of each sequence this rank holds: the students' 11.1 under cp, else all.
template <class T>
std::vector<int> rank_positions(int seq_len, const GptGrid& g, const GptParallelism<T>& par) {
  if (g.cp > 1) return par.cp_positions(seq_len, g.cp, g.cp_idx, g.zigzag);
  return index_range(0, seq_len);
}

// The model's communication: the students' functions on this grid (gpt_train's binding), the
// router's statistics summed over every rank holding other tokens of the step (the trainer
// refuses tensor parallelism with experts, so those are the dp · cp ranks of replica_comm), and
// the attention cores timed: their wall seconds added to `attention_seconds`, and each call an
// "attention" interval of the trace when `recorder` holds one.
template <class T>
GptCommunication<T> make_communication(GptGrid& g, const GptParallelism<T>& par,
                                       double& attention_seconds,
                                       const std::unique_ptr<TimelineRecorder>& recorder) {
  GptCommunication<T> comm = par.communication(g);
  if (g.replica_comm.Get_size() > 1) {
    comm.sum_over_batch = [&g](std::vector<double>& values) {
      g.replica_comm.Allreduce(values, values);
    };
  }
  const auto timed = [&attention_seconds, &recorder](auto function, WorkKind kind) {
    return [function, kind, &attention_seconds, &recorder](const auto&... args) {
      const double begin = MPI_Wtime();
      auto result = function(args...);
      const double end = MPI_Wtime();
      attention_seconds += end - begin;
      if (recorder) recorder->add(kind, 0, "attention", begin, end);
      return result;
    };
  };
  comm.attention_forward = timed(comm.attention_forward, WorkKind::Forward);
  comm.attention_backward = timed(comm.attention_backward, WorkKind::Backward);
  return comm;
}

// Bytes each group's communicators have sent so far: tensor, context, data, expert and
// pipeline parallel.
std::array<std::uint64_t, 5> bytes_sent(const GptGrid& g) {
  return {g.tp_comm.total_bytes_transferred(), g.cp_comm.total_bytes_transferred(),
          g.replica_comm.total_bytes_transferred() +
              g.expert_replica_comm.total_bytes_transferred() +
              g.stage_comm.total_bytes_transferred() +
              g.key_value_replica_comm.total_bytes_transferred(),
          g.ep_comm.total_bytes_transferred(), g.pp_comm.total_bytes_transferred()};
}

// Part 9's functions for ZeRO stage `stage` (none at stage 0).
template <class T>
ZeroCollectives<T> zero_collectives(int stage, const GptParallelism<T>& par) {
  if (stage == 0) return {};
  return {stage == 1 ? par.zero1_grad_shard : par.zero2_grad_shard, par.zero_gather_params};
}

// One rank's training run: the model on its slice of the grid, the sums of its gradients, its
// optimizer, and what it measures. train_gpt starts it, trains and validates step after step,
// and finishes it. Not copyable: the model's communication refers to its members.
template <class T>
class GptRun {
 public:
  GptRun(const GptTrainOptions& o, const Corpus& corpus, const Communicator& world,
         const GptParallelism<T>& parallelism, std::ostream& out)
      : o_(o),
        corpus_(corpus),
        world_(world),
        parallelism_(parallelism),
        out_(out),
        g_(make_grid(o, world, parallelism.grid_layout)),
        config_(with_vocabulary(o.model, corpus)),
        cuts_(chunk_cuts(config_, o, parallelism)),
        chunks_(make_chunks()),
        positions_(rank_positions(config_.seq_len, g_, parallelism)),
        validation_(validation_windows(corpus, config_.seq_len, o.validation_windows)),
        eval_every_(o.eval_every > 0 ? o.eval_every : std::max(1L, o.steps / 10)),
        global_tokens_(double(o.batch_size) * config_.seq_len) {
    g_.key_value_replica_comm = key_value_replicas(g_, config_, chunks_.front()->layout());
    const auto update =
        o.optimizer == Optimizer::Adam ? ModelStates<T>::Update::Adam : ModelStates<T>::Update::Sgd;
    std::vector<std::vector<Parameter<T>*>> pieces;
    for (const auto& chunk : chunks_) {
      for (const auto& piece : chunk->pieces()) pieces.push_back(piece);
    }
    // --bucket_mb runs where one group sums every gradient: its flat vector is the model's
    // parameters in order, and the buckets fill it from the end as the backward goes.
    for (Parameter<T>* p : o.bucket_mb > 0 ? chunk_parameters() : std::vector<Parameter<T>*>()) {
      bucket_index_.emplace(p, static_cast<int>(bucket_parameters_.size()));
      bucket_parameters_.push_back(p);
      bucket_sizes_.push_back(p->value.size());
    }
    if (mixed_precision_states()) {
      mixed_ = std::make_unique<MixedPrecisionStates<T>>(
          pieces, g_, parallelism.to_bf16, parallelism.mixed_precision_adam, o.zero_stage,
          zero_collectives(o.zero_stage, parallelism));
    } else if (o.zero_stage == 3) {
      sharded_ = std::make_unique<FullyShardedStates<T>>(
          pieces, g_, update, parallelism.fully_sharded_blocks,
          o.bf16 ? parallelism.to_bf16 : Bf16Rounding());
    } else {
      states_ = std::make_unique<ModelStates<T>>(chunk_parameters(), g_, update, o.zero_stage,
                                                 zero_collectives(o.zero_stage, parallelism));
    }
    report_.parameter_count = parameter_count(config_);
    report_.bigram_entropy =
        bigram_entropy(corpus.tokens, 0, corpus.validation_begin, corpus.vocab_size);
    measured_.rank = world.Get_rank();
    measured_.tp_idx = g_.tp_idx;
    measured_.cp_idx = g_.cp_idx;
    measured_.dp_idx = g_.dp_idx;
    measured_.ep_idx = g_.ep_idx;
    measured_.pp_idx = g_.pp_idx;
    report_.chunk_cuts = cuts_;
  }
  GptRun(const GptRun&) = delete;
  GptRun& operator=(const GptRun&) = delete;

  // Every rank starts the clock together (and the trace, with record_timeline).
  void start() {
    world_.Barrier();
    const double start = MPI_Wtime();
    if (o_.record_timeline)
      recorder_ = std::make_unique<TimelineRecorder>(world_.Get_rank(), start);
  }

  // Step `step`: this rank's share of the global batch forward and backward, the gradients
  // summed, the optimizer's step; its seconds, bytes and memory measured, its record kept.
  void train_step(long step) {
    if (recorder_) {
      recorder_->set_step(static_cast<int>(step));
      recorder_->set_recording(true);
    }
    const double begin = MPI_Wtime();
    const std::array<std::uint64_t, 5> bytes_before = bytes_sent(g_);
    const double attention_before = attention_seconds_,
                 attention_cpu_before = attention_kernel_cpu_seconds();
    const int local_batch = o_.batch_size / o_.dp;
    const std::vector<std::size_t> windows =
        training_windows(corpus_, config_.seq_len, o_.batch_size, o_.seed, step);
    const GptLoss loss =
        pipelined() ? forward_backward_pipelined(windows)
                    : forward_backward(make_batch(corpus_, windows, g_.dp_idx * local_batch,
                                                  local_batch, positions_, global_tokens_),
                                       begin);
    const double lr = learning_rate(o_.lr, step, o_.steps);
    optimizer_step(lr);
    report_.seconds += MPI_Wtime() - begin;
    const std::array<std::uint64_t, 5> bytes_after = bytes_sent(g_);
    for (int group = 0; group < 5; ++group)
      step_bytes_[group] += bytes_after[group] - bytes_before[group];
    measured_.attention_seconds += attention_seconds_ - attention_before;
    measured_.attention_cpu_seconds += attention_kernel_cpu_seconds() - attention_cpu_before;
    if (recorder_) recorder_->set_recording(false);
    report_.history.push_back(step_record(step, loss, lr));
    report_.tokens += global_tokens_;
  }

  // After step `step`: the validation loss when it is due, and rank 0's progress line.
  void validate_and_show(long step) {
    const bool validate = step % eval_every_ == 0 || step == o_.steps;
    if (validate) {
      report_.validation.push_back(
          {step, validation_loss(chunks_, o_, corpus_, validation_, positions_, g_)});
    }
    const long progress_every = std::max(1L, o_.steps / 20);
    if (world_.Get_rank() == 0 && (step % progress_every == 0 || step == o_.steps || validate)) {
      out_ << progress(step, o_.steps, report_.history.back(), report_.tokens / report_.seconds,
                       validate ? &report_.validation.back() : nullptr)
           << std::endl;
    }
  }

  // The run's figures, every rank's measurements (on rank 0), the trace and the sample.
  GptTrainReport finish() {
    report_.steps = o_.steps;
    report_.final_loss = report_.history.back().loss;
    report_.val_loss = report_.validation.back().loss;
    report_.tokens_per_second = report_.tokens / report_.seconds;
    report_.flops_per_second = training_flops(config_, report_.tokens) / report_.seconds;
    report_.gemm_peak = gemm_peak_flops<T>(world_, std::min(kGemmPeakSeconds, report_.seconds));
    report_.mfu = report_.flops_per_second / report_.gemm_peak;
    measure_memory_and_bytes();
    if (sharded_) sharded_->gather_all();  // the whole model, to measure it
    if (mixed_) mixed_->unpack_all();
    report_.weights_l2 = std::sqrt(weights_square_sum(chunk_parameters(), g_, world_));
    if (sharded_) sharded_->release_all();
    if (mixed_) mixed_->release_all();
    report_.ranks = gather_reports(measured_, world_);
    if (recorder_) report_.timeline = gather_timeline(recorder_->events(), world_);
    if (o_.sample_chars > 0) report_.sample = sample();
    return report_;
  }

 private:
  static GptConfig with_vocabulary(GptConfig config, const Corpus& corpus) {
    config.vocab_size = corpus.vocab_size;
    return config;
  }

  bool pipelined() const { return o_.pp > 1 || o_.microbatches > 1; }

  // This rank's chunks of the model (one, unless interleaved), each with the model's
  // communication.
  std::vector<std::unique_ptr<Gpt<T>>> make_chunks() {
    std::vector<std::unique_ptr<Gpt<T>>> chunks;
    for (int v = 0; v < o_.virtual_stages; ++v) {
      GptCommunication<T> comm =
          make_communication(g_, parallelism_, attention_seconds_, recorder_);
      if (o_.bucket_mb > 0) {
        comm.gradients_ready = [this](const std::vector<Parameter<T>*>& ready) {
          gradients_ready(ready);
        };
      }
      if (mixed_precision_states()) {
        hook_pieces(comm, mixed_);
      } else if (o_.zero_stage == 3) {
        hook_pieces(comm, sharded_);
      }
      GptLayout layout = make_layout(config_, g_, parallelism_, cuts_, v);
      layout.recompute = o_.recompute;
      if (o_.bf16) layout.keep_bf16 = parallelism_.to_bf16;
      chunks.push_back(std::make_unique<Gpt<T>>(config_, layout, o_.seed, std::move(comm)));
    }
    return chunks;
  }
  // A bf16 run's states hold the model but at ZeRO 3, whose FullyShardedStates round it.
  bool mixed_precision_states() const { return o_.bf16 && o_.zero_stage < 3; }
  // The pieces' hooks of model states that gather or widen a piece while it runs; `states` is
  // made after the chunks, so the hooks reach it through its pointer.
  template <class States>
  static void hook_pieces(GptCommunication<T>& comm, const std::unique_ptr<States>& states) {
    comm.piece_starts = [&states](const std::vector<Parameter<T>*>& piece, bool backward) {
      states->piece_starts(piece, backward);
    };
    comm.piece_ends = [&states](const std::vector<Parameter<T>*>& piece, bool backward) {
      states->piece_ends(piece, backward);
    };
  }
  std::vector<Parameter<T>*> chunk_parameters() {
    std::vector<Parameter<T>*> all;
    for (const auto& chunk : chunks_) {
      const std::vector<Parameter<T>*> its = chunk->parameters();
      all.insert(all.end(), its.begin(), its.end());
    }
    return all;
  }
  // The model, when this rank holds it in one chunk (no interleaving).
  Gpt<T>& model() { return *chunks_.front(); }

  GptLoss forward_backward(const GptBatch& batch, double begin) {
    measured_.microbatches_in_flight = 1;
    measured_.first_chunk_in_flight = 1;
    g_.sequences = batch.batch;
    ActivationPeak peak;
    const GptLoss loss = model().forward(batch);
    peak.note(model());
    const double forward_end = MPI_Wtime();
    step_expert_rows_ = {model().expert_rows(0)};
    zero_grad();
    if (sums_in_buckets()) start_buckets();
    model().backward();
    peak.note(model());  // what recomputation made again
    record_activations(peak);
    if (recorder_) {
      recorder_->add(WorkKind::Forward, 0, "forward", begin, forward_end);
      recorder_->add(WorkKind::Backward, 0, "backward", forward_end, MPI_Wtime());
    }
    if (sums_in_buckets()) {  // what the backward did not hide
      const double sum_begin = MPI_Wtime();
      finish_buckets();
      measured_.exposed_sum_seconds += MPI_Wtime() - sum_begin;
    }
    return loss;
  }

  // The model's activations, and its first block's, at their peak so far.
  // The step's peak, if the run's highest so far.
  void record_activations(const ActivationPeak& peak) {
    measured_.activations = std::max(measured_.activations, peak.all);
    measured_.block_activations = std::max(measured_.block_activations, peak.first_block);
  }

  // This rank's share of the step as micro-batches on its stage's schedule (the students'
  // Part 8, or Part 14 interleaved): the global batch is m micro-batches in a row, and each
  // data-parallel rank takes its share of each (so that a micro-batch's routing, which a mixture
  // of experts balances, is the same whatever dp). The losses of this rank's chunks over all of
  // them.
  GptLoss forward_backward_pipelined(const std::vector<std::size_t>& windows) {
    const int global_micro_batch = o_.batch_size / o_.microbatches;
    const int share = global_micro_batch / o_.dp;
    std::vector<GptBatch> micro_batches;
    for (int mb = 0; mb < o_.microbatches; ++mb) {
      micro_batches.push_back(make_batch(corpus_, windows,
                                         mb * global_micro_batch + g_.dp_idx * share, share,
                                         positions_, global_tokens_));
      micro_batches.back().routed_tokens = global_tokens_ / o_.microbatches;
      micro_batches.back().aux_weight = 1.0 / o_.microbatches;
    }
    g_.sequences = share;
    InFlight in_flight;
    std::vector<std::unique_ptr<GptPipelineStage<T>>> stages;
    std::vector<PipelineStage<T>*> chunk_stages;
    const int chunks = static_cast<int>(chunks_.size());
    zero_grad();
    for (int v = 0; v < chunks; ++v) {
      stages.push_back(std::make_unique<GptPipelineStage<T>>(*chunks_[v], micro_batches, in_flight,
                                                             recorder_.get(), chunks > 1 ? v : -1));
      chunk_stages.push_back(stages.back().get());
    }
    const double begin = MPI_Wtime();
    if (o_.schedule == PipelineSchedule::Interleaved) {
      parallelism_.run_interleaved(chunk_stages, o_.microbatches, g_.pp_comm);
    } else {
      parallelism_.run_schedule(
          *chunk_stages[0], parallelism_.schedule(o_.schedule, g_.pp_idx, g_.pp, o_.microbatches),
          g_.pp_comm);
    }
    measured_.pipeline_seconds += MPI_Wtime() - begin;
    GptLoss loss;
    ActivationPeak peak;  // the chunks' peaks, summed: every chunk holds its own
    step_expert_rows_.clear();
    for (const auto& stage : stages) {
      measured_.pipeline_busy_seconds += stage->busy_seconds();
      peak.all += stage->activation_peak().all;
      loss.cross_entropy_sum += stage->loss().cross_entropy_sum;
      loss.scored += stage->loss().scored;
      loss.aux_loss += stage->loss().aux_loss;
      step_expert_rows_.push_back(stage->expert_rows());
    }
    peak.first_block = stages[0]->activation_peak().first_block;
    record_activations(peak);
    measured_.microbatches_in_flight = std::max(measured_.microbatches_in_flight, in_flight.peak);
    measured_.first_chunk_in_flight =
        std::max(measured_.first_chunk_in_flight, stages[0]->slots_used());
    return loss;
  }

  // --bucket_mb: the step's gradient sum over the dp · cp ranks (the only group a dense model
  // without --sp sums over) starts before the backward, in the flat vector's order; the model
  // hands each layer's gradients over as they become final, and the buckets move on between
  // layers; after the backward, their sums replace the gradients.
  bool sums_in_buckets() const { return o_.bucket_mb > 0 && g_.replica_comm.Get_size() > 1; }
  void start_buckets() {
    const auto cap = static_cast<std::size_t>(o_.bucket_mb * (1 << 20));
    bucketed_sum_ =
        parallelism_.bucketed_sum(bucket_sizes_, std::max<std::size_t>(cap, 1), g_.replica_comm);
  }
  void gradients_ready(const std::vector<Parameter<T>*>& ready) {
    if (!bucketed_sum_) return;
    for (const Parameter<T>* p : ready) {  // (a bf16 run's, as the backward rounded it)
      const xt::xtensor<double, 1> gradient =
          mixed_ ? mixed_->gradient(p)
                 : xt::xtensor<double, 1>(xt::cast<double>(xt::flatten(p->grad)));
      bucketed_sum_->gradient_ready(bucket_index_.at(p), gradient);
    }
    bucketed_sum_->progress();
  }
  void finish_buckets() {
    const std::vector<xt::xtensor<double, 1>> sums = bucketed_sum_->finish();
    bucketed_sum_.reset();
    for (std::size_t i = 0; i < bucket_parameters_.size(); ++i) {
      if (mixed_) {
        mixed_->set_summed_gradient(bucket_parameters_[i], sums.at(i));
      } else {
        std::copy(sums.at(i).begin(), sums.at(i).end(), bucket_parameters_[i]->grad.begin());
      }
    }
  }

  // The gradients summed, then the optimizer's step: the same on every rank holding the same
  // tensor (model_states.hpp: whole, or at ZeRO stage 1 or 2 shard by shard).
  void optimizer_step(double lr) {
    if (sharded_) {  // ZeRO-3: each piece's gradients were summed as its backward ended
      sharded_->step(lr);
    } else if (mixed_) {
      measured_.exposed_sum_seconds += mixed_->step(lr, sums_in_buckets());
    } else {
      measured_.exposed_sum_seconds += states_->step(lr, sums_in_buckets());
    }
  }

  // Every gradient zero before a step's backwards (ZeRO-3: each piece gets its own when its
  // backward starts).
  void zero_grad() {
    if (states_) states_->zero_grad();
    if (mixed_) mixed_->zero_grad();
  }

  // The step's loss over the global batch and its experts' rows; a loss that is no longer
  // finite (the same on every rank) stops every rank.
  GptStepRecord step_record(long step, const GptLoss& loss, double lr) {
    // The last stage's cross-entropy, and the load-balancing losses of every stage's blocks.
    GptStepRecord record{step,
                         sum_over(loss.cross_entropy_sum, g_.loss_comm) / global_tokens_,
                         g_.pp > 1 ? sum_over(loss.aux_loss, g_.pp_comm) : loss.aux_loss,
                         lr,
                         report_.seconds,
                         {}};
    // The model's chunks in order: chunk v of every stage in turn, then chunk v + 1.
    for (const std::vector<double>& rows : step_expert_rows_) {
      const std::vector<double> in_order = g_.pp > 1 ? in_stage_order(rows, g_.pp_comm) : rows;
      record.expert_rows.insert(record.expert_rows.end(), in_order.begin(), in_order.end());
    }
    if (!std::isfinite(record.loss)) {
      throw std::runtime_error("the loss is no longer finite at step " + std::to_string(step) +
                               ": the training diverged; try a smaller --lr (it was " +
                               std::to_string(lr) + ")");
    }
    return record;
  }

  void measure_memory_and_bytes() {
    for (const Parameter<T>* p : chunk_parameters()) {  // an expert is held whole
      if (p->sharing == Sharing::Expert)                // (a bf16 run's states 2 bytes a value)
        measured_.expert_parameters += p->full_rows * p->full_cols * (mixed_ ? 2 : sizeof(T));
    }
    const typename ModelStates<T>::Bytes states = sharded_ ? sharded_->bytes()
                                                  : mixed_ ? mixed_->bytes()
                                                           : states_->bytes();
    measured_.parameters = states.parameters;
    measured_.gradients = states.gradients;
    measured_.optimizer = states.optimizer;
    measured_.transient = workspace_bytes() + states.transient;
    measured_.tensor_parallel_bytes = step_bytes_[0];
    measured_.context_parallel_bytes = step_bytes_[1];
    measured_.data_parallel_bytes = step_bytes_[2];
    measured_.expert_parallel_bytes = step_bytes_[3];
    measured_.pipeline_parallel_bytes = step_bytes_[4];
  }

  std::size_t workspace_bytes() const {
    std::size_t bytes = 0;
    for (const auto& chunk : chunks_) bytes += chunk->workspace_bytes();
    return bytes;
  }

  // Every rank samples in step (the model's communication spans its groups); rank 0's is
  // reported. A new line, if the text has one, starts the sample where a line of the corpus
  // starts.
  std::string sample() {
    const auto& alphabet = corpus_.alphabet;
    const auto newline = std::lower_bound(alphabet.begin(), alphabet.end(), U'\n');
    const std::int32_t first = newline != alphabet.end() && *newline == U'\n'
                                   ? std::int32_t(newline - alphabet.begin())
                                   : corpus_.tokens[corpus_.validation_begin];
    g_.sequences = 1;
    return corpus_.decode(generate(model(), {first}, o_.sample_chars,
                                   static_cast<int>(alphabet.size()), o_.temperature, o_.seed));
  }

  const GptTrainOptions& o_;
  const Corpus& corpus_;
  const Communicator& world_;
  const GptParallelism<T>& parallelism_;
  std::ostream& out_;
  GptGrid g_;
  GptConfig config_;
  double attention_seconds_ = 0;                // in the attention cores, since the start
  std::unique_ptr<TimelineRecorder> recorder_;  // with record_timeline, once training starts
  std::vector<int> cuts_;                       // the model's chunks (chunk_cuts)
  std::vector<std::unique_ptr<Gpt<T>>>
      chunks_;                  // this rank's: chunk v is the model's v · pp + pp_idx
  std::vector<int> positions_;  // of each sequence, this rank's
  // The model states: with their sums and optimizer (ZeRO 0 to 2), fully sharded (ZeRO-3), or a
  // bf16 run's.
  std::unique_ptr<ModelStates<T>> states_;
  std::unique_ptr<FullyShardedStates<T>> sharded_;
  std::unique_ptr<MixedPrecisionStates<T>> mixed_;  // --dtype bf16
  // --bucket_mb: the parameters in the flat vector's order, each one's place and size, and the
  // step's sum in flight.
  std::vector<Parameter<T>*> bucket_parameters_;
  std::map<const Parameter<T>*, int> bucket_index_;
  std::vector<std::size_t> bucket_sizes_;
  std::optional<BucketedSum> bucketed_sum_;
  std::vector<std::size_t> validation_;  // the validation windows
  long eval_every_;
  double global_tokens_;  // of a step
  GptTrainReport report_;
  GptRankReport measured_;
  std::array<std::uint64_t, 5> step_bytes_{};  // sent by the training steps, by group
  // Of this rank's blocks in the last step, chunk by chunk.
  std::vector<std::vector<double>> step_expert_rows_;
};

}  // namespace

template <class T>
GptTrainReport train_gpt(const GptTrainOptions& o, const Corpus& corpus, const Communicator& world,
                         const GptParallelism<T>& parallelism, std::ostream& out) {
  const std::string problem = gpt_options_problem(o, world.Get_size(), corpus);
  if (!problem.empty()) throw std::invalid_argument(problem);
  const std::string unbuilt = build_problem(o, parallelism);
  if (!unbuilt.empty()) throw std::invalid_argument(unbuilt);
  GptRun<T> run(o, corpus, world, parallelism, out);
  run.start();
  for (long step = 1; step <= o.steps; ++step) {
    run.train_step(step);
    run.validate_and_show(step);
  }
  return run.finish();
}

template GptTrainReport train_gpt<float>(const GptTrainOptions&, const Corpus&, const Communicator&,
                                         const GptParallelism<float>&, std::ostream&);
template GptTrainReport train_gpt<double>(const GptTrainOptions&, const Corpus&,
                                          const Communicator&, const GptParallelism<double>&,
                                          std::ostream&);

}  // namespace dtk::gpt
