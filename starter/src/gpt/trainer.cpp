#include "dtk/gpt/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <ostream>
#include <stdexcept>

#include "dtk/gpt/batches.hpp"
#include "dtk/gpt/bytes.hpp"
#include "dtk/gpt/gemm_peak.hpp"
#include "dtk/gpt/gpt.hpp"
#include "dtk/gpt/sampling.hpp"
#include "dtk/model/adam.hpp"
#include "dtk/model/progress_line.hpp"

namespace dtk::gpt {

namespace {

std::string text(long value) { return std::to_string(value); }

// Where this rank sits, and its groups: the ranks of its tensor-parallel group (same dp_idx
// and cp_idx), of its context-parallel group (same tp_idx and dp_idx) and of its data-parallel
// group (same tp_idx and cp_idx), each ordered by world rank.
struct Groups {
  int tp_idx, cp_idx, dp_idx;
  Communicator tp_comm, cp_comm, dp_comm;
};

Groups make_groups(const GptTrainOptions& o, const Communicator& world) {
  const int rank = world.Get_rank();
  const int tp_idx = rank % o.tp, cp_idx = (rank / o.tp) % o.cp, dp_idx = rank / (o.tp * o.cp);
  return {tp_idx,
          cp_idx,
          dp_idx,
          world.Split(dp_idx * o.cp + cp_idx, rank),
          world.Split(dp_idx * o.tp + tp_idx, rank),
          world.Split(cp_idx * o.tp + tp_idx, rank)};
}

// Every parameter's value or gradient, one after another in the order of model.parameters(): the
// one vector the data-parallel sum and Adam work on.
template <class T>
class FlatView {
 public:
  explicit FlatView(const std::vector<Parameter<T>*>& params) : params_(params) {
    std::size_t size = 0;
    for (const Parameter<T>* p : params_) size += p->value.size();
    values_ = xt::zeros<T>({size});
  }
  xt::xtensor<T, 1>& values() { return values_; }

  void gather(Matrix<T> Parameter<T>::*member) {
    T* out = values_.data();
    for (const Parameter<T>* p : params_)
      out = std::copy((p->*member).begin(), (p->*member).end(), out);
  }
  void scatter(Matrix<T> Parameter<T>::*member) {
    const T* in = values_.data();
    for (Parameter<T>* p : params_) {
      std::copy_n(in, (p->*member).size(), (p->*member).begin());
      in += (p->*member).size();
    }
  }

 private:
  std::vector<Parameter<T>*> params_;
  xt::xtensor<T, 1> values_;
};

// The square of the model's L2 norm, each parameter counted once, on the first context-parallel
// rank: a tensor-parallel slice on the first data-parallel replica, a replicated tensor also only
// on the first rank of its tensor-parallel group, an expert on the first replica holding it (the
// ep ranks dp_idx < ep hold every expert once). Summed over the world.
template <class T>
double weights_square_sum(Gpt<T>& model, const Groups& g, int ep, const Communicator& world) {
  double sum = 0;
  for (const Parameter<T>* p : model.parameters()) {
    const bool counted =
        g.cp_idx == 0 && (p->sharing == Sharing::TensorParallel ? g.dp_idx == 0
                          : p->sharing == Sharing::Replicated   ? g.dp_idx == 0 && g.tp_idx == 0
                                                                : g.dp_idx < ep && g.tp_idx == 0);
    if (!counted) continue;
    for (const T v : p->value) sum += double(v) * double(v);
  }
  double total = 0;
  MPI_Allreduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, world.handle());
  return total;
}

// A step's (or the validation's) summed cross-entropy and tokens over the data-parallel group.
// Raw MPI: these are measurements, not the training's communication.
double sum_over(double value, const Communicator& comm) {
  double total = 0;
  MPI_Allreduce(&value, &total, 1, MPI_DOUBLE, MPI_SUM, comm.handle());
  return total;
}

// The mean cross-entropy over the validation windows, each data-parallel rank taking its
// contiguous share, batch_size / dp windows at a time.
template <class T>
double validation_loss(Gpt<T>& model, const GptTrainOptions& o, const Corpus& corpus,
                       const std::vector<std::size_t>& windows, const Groups& g) {
  const std::size_t share = (windows.size() + o.dp - 1) / o.dp;
  const std::size_t first = std::min(windows.size(), g.dp_idx * share);
  const std::size_t last = std::min(windows.size(), first + share);
  const std::size_t chunk = std::max(1, o.batch_size / o.dp);
  double sum = 0;
  for (std::size_t begin = first; begin < last; begin += chunk) {
    const std::size_t count = std::min(chunk, last - begin);
    GptBatch batch = make_batch(corpus, windows, begin, count, o.model.seq_len, 1.0);
    batch.training = false;
    sum += model.forward(batch).cross_entropy_sum;
  }
  return sum_over(sum, g.dp_comm) / (double(windows.size()) * o.model.seq_len);
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

// Every rank's report, on world rank 0.
std::vector<GptRankReport> gather_reports(const GptRankReport& mine, const Communicator& world) {
  std::vector<GptRankReport> all(world.Get_rank() == 0 ? world.Get_size() : 0);
  MPI_Gather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, 0, world.handle());
  return all;
}

}  // namespace

std::string gpt_options_problem(const GptTrainOptions& o, const int ranks, const Corpus& corpus) {
  if (o.tp > 1)
    return "--tp " + text(o.tp) +
           ": tensor parallelism is Part 10's, whose trainer this build does not hold yet";
  if (o.cp > 1)
    return "--cp " + text(o.cp) +
           ": context parallelism is Part 11's, whose trainer this build does not hold yet";
  if (o.ep > 1)
    return "--ep " + text(o.ep) +
           ": expert parallelism is Part 12's, whose trainer this build does not hold yet";
  if (o.sequence_parallel) return "--sp (sequence parallelism) needs tensor parallelism, --tp > 1";
  if (o.zigzag) return "--zigzag (the zigzag layout of ring attention) needs --cp > 1";
  if (!o.model.mixture_of_experts() && o.model.top_k != 1) {
    return "--top_k " + text(o.model.top_k) + " needs a mixture of experts: give --experts too";
  }
  GptConfig model = o.model;
  model.vocab_size = corpus.vocab_size;
  const std::string problem = config_problem(model);
  if (!problem.empty()) return problem;
  const int wanted = o.tp * o.cp * o.dp;
  if (ranks != wanted) {
    return "gpt_train needs tp x cp x dp = " + text(o.tp) + " x " + text(o.cp) + " x " +
           text(o.dp) + " = " + text(wanted) + " ranks, but mpirun started " + text(ranks) +
           ": run it with  mpirun -n " + text(wanted);
  }
  if (o.batch_size % o.dp != 0) {
    return "--batch_size " + text(o.batch_size) + " must be a multiple of --dp " + text(o.dp) +
           ": each data-parallel rank reads batch_size / dp sequences";
  }
  return "";
}

double learning_rate(double lr, long step, long steps) {
  const long warmup = std::max(1L, std::min(100L, steps / 10));
  if (step <= warmup) return lr * step / warmup;
  const double progress = steps > warmup ? double(step - warmup) / (steps - warmup) : 1.0;
  return lr * (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * progress)));
}

template <class T>
GptTrainReport train_gpt(const GptTrainOptions& o, const Corpus& corpus, const Communicator& world,
                         std::ostream& out) {
  const std::string problem = gpt_options_problem(o, world.Get_size(), corpus);
  if (!problem.empty()) throw std::invalid_argument(problem);
  const bool root = world.Get_rank() == 0;
  Groups g = make_groups(o, world);
  GptConfig config = o.model;
  config.vocab_size = corpus.vocab_size;

  // The whole model on every rank; the load-balancing statistics summed over the global batch.
  GptCommunication<T> comm = one_rank_communication<T>();
  if (o.dp > 1) {
    comm.sum_over_batch = [&g](std::vector<double>& values) {
      g.dp_comm.Allreduce(values, values);
    };
  }
  Gpt<T> model(config, one_rank_layout(config), o.seed, comm);
  const std::vector<Parameter<T>*> params = model.parameters();
  FlatView<T> flat_grads(params), flat_values(params);
  std::unique_ptr<Adam<T>> adam;
  if (o.optimizer == Optimizer::Adam) adam = std::make_unique<Adam<T>>(flat_values.values().size());

  GptTrainReport report;
  report.parameter_count = parameter_count(config);
  report.bigram_entropy =
      bigram_entropy(corpus.tokens, 0, corpus.validation_begin, corpus.vocab_size);
  const std::vector<std::size_t> validation =
      validation_windows(corpus, config.seq_len, o.validation_windows);
  const long eval_every = o.eval_every > 0 ? o.eval_every : std::max(1L, o.steps / 10);
  const long progress_every = std::max(1L, o.steps / 20);
  const int local_batch = o.batch_size / o.dp;
  const double global_tokens = double(o.batch_size) * config.seq_len;

  GptRankReport measured;
  measured.rank = world.Get_rank();
  measured.tp_idx = g.tp_idx;
  measured.cp_idx = g.cp_idx;
  measured.dp_idx = g.dp_idx;
  world.Barrier();
  const double start = MPI_Wtime();
  std::unique_ptr<TimelineRecorder> recorder;
  if (o.record_timeline) recorder = std::make_unique<TimelineRecorder>(world.Get_rank(), start);
  for (long step = 1; step <= o.steps; ++step) {
    if (recorder) {
      recorder->set_step(static_cast<int>(step));
      recorder->set_recording(true);
    }
    const double begin = MPI_Wtime();
    const std::vector<std::size_t> windows =
        training_windows(corpus, config.seq_len, o.batch_size, o.seed, step);
    const GptBatch batch = make_batch(corpus, windows, g.dp_idx * local_batch, local_batch,
                                      config.seq_len, global_tokens);
    const GptLoss loss = model.forward(batch);
    measured.activations = std::max(measured.activations, model.activation_bytes());
    const double forward_end = MPI_Wtime();
    model.zero_grad();
    model.backward();
    const double backward_end = MPI_Wtime();
    if (recorder) {
      recorder->add(WorkKind::Forward, 0, "forward", begin, forward_end);
      recorder->add(WorkKind::Backward, 0, "backward", forward_end, backward_end);
    }
    // The data-parallel gradient sum: one Allreduce of every gradient.
    flat_grads.gather(&Parameter<T>::grad);
    if (o.dp > 1) g.dp_comm.Allreduce(flat_grads.values(), flat_grads.values());
    // The optimizer's step, the same on every rank.
    const double lr = learning_rate(o.lr, step, o.steps);
    flat_values.gather(&Parameter<T>::value);
    if (adam) {
      adam->step(flat_values.values(), 0, flat_grads.values(), T(lr));
    } else {
      flat_values.values() -= T(lr) * flat_grads.values();
    }
    flat_values.scatter(&Parameter<T>::value);
    report.seconds += MPI_Wtime() - begin;
    if (recorder) recorder->set_recording(false);

    GptStepRecord record{step, sum_over(loss.cross_entropy_sum, g.dp_comm) / global_tokens,
                         loss.aux_loss, lr, report.seconds};
    if (!std::isfinite(record.loss)) {  // the same on every rank: all stop
      throw std::runtime_error("the loss is no longer finite at step " + std::to_string(step) +
                               ": the training diverged; try a smaller --lr (it was " +
                               std::to_string(lr) + ")");
    }
    report.history.push_back(record);
    report.tokens += global_tokens;
    const bool validate = step % eval_every == 0 || step == o.steps;
    if (validate)
      report.validation.push_back({step, validation_loss(model, o, corpus, validation, g)});
    if (root && (step % progress_every == 0 || step == o.steps || validate)) {
      out << progress(step, o.steps, record, report.tokens / report.seconds,
                      validate ? &report.validation.back() : nullptr)
          << std::endl;
    }
  }
  report.steps = o.steps;
  report.final_loss = report.history.back().loss;
  report.val_loss = report.validation.back().loss;
  report.tokens_per_second = report.tokens / report.seconds;
  report.flops_per_second = training_flops(config, report.tokens) / report.seconds;
  report.gemm_peak = gemm_peak_flops<T>(world);
  report.mfu = report.flops_per_second / report.gemm_peak;
  report.weights_l2 = std::sqrt(weights_square_sum(model, g, o.ep, world));

  for (const Parameter<T>* p : params) {
    measured.parameters += bytes_of(p->value);
    measured.gradients += bytes_of(p->grad);
  }
  measured.optimizer = adam ? adam->state_bytes() : 0;
  measured.transient =
      model.workspace_bytes() + bytes_of(flat_grads.values(), flat_values.values());
  measured.tensor_parallel_bytes = g.tp_comm.total_bytes_transferred();
  measured.context_parallel_bytes = g.cp_comm.total_bytes_transferred();
  measured.data_parallel_bytes = g.dp_comm.total_bytes_transferred();
  report.ranks = gather_reports(measured, world);
  if (recorder) report.timeline = gather_timeline(recorder->events(), world);

  if (o.sample_chars > 0 && g.dp_idx == 0 && g.cp_idx == 0) {
    // A new line, if the text has one, starts the sample where a line of the corpus starts.
    const auto newline = std::lower_bound(corpus.alphabet.begin(), corpus.alphabet.end(), U'\n');
    const std::int32_t first = newline != corpus.alphabet.end() && *newline == U'\n'
                                   ? std::int32_t(newline - corpus.alphabet.begin())
                                   : corpus.tokens[corpus.validation_begin];
    report.sample =
        corpus.decode(generate(model, {first}, o.sample_chars,
                               static_cast<int>(corpus.alphabet.size()), o.temperature, o.seed));
  }
  return report;
}

template GptTrainReport train_gpt<float>(const GptTrainOptions&, const Corpus&, const Communicator&,
                                         std::ostream&);
template GptTrainReport train_gpt<double>(const GptTrainOptions&, const Corpus&,
                                          const Communicator&, std::ostream&);

}  // namespace dtk::gpt
