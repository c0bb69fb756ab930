// gpt_train: trains the GPT of assignment 3 (include/dtk/gpt/) on the King James Bible or any
// UTF-8 text, on tp × cp × dp × pp ranks.
//   gpt_train.cpp         the command line and the run
//   gpt_train_report.cpp  what rank 0 prints at the end, the --report JSON and the --trace
//   gpt_train_parallelism.cpp  the students' functions of Parts 10-12 bound to the trainer
//   gpt_train_pipeline.cpp     and Part 8's, for the pipeline (where the tree holds them)
//   gpt_train_five_dimensional.cpp  and Part 14's: the grid and the interleaved pipeline
//   gpt_train_overlap.cpp      and Part 15's: the gradient buckets
//   gpt_train_zero.cpp         and Part 9's: ZeRO's shards of the model states
//   gpt_train_memory.cpp       and Part 16's: the model fully sharded (ZeRO-3)
//   gpt_train_analytic.cpp     the bytes and activations a layout should cost, from its shape
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include <dtk/gpt/corpus.hpp>
#include <dtk/gpt/trainer.hpp>

#include "command_line.hpp"

namespace dtk::gpt_train {

using namespace command_line;  // UsageError, parse_*, mebibytes, write_file, check_writable

// The names of --schedule's, --recompute's, --arch's and --optimizer's choices, which the
// report writes too.
inline const std::map<std::string, gpt::PipelineSchedule> kScheduleNames = {
    {"1f1b", gpt::PipelineSchedule::OneFOneB},
    {"gpipe", gpt::PipelineSchedule::GPipe},
    {"interleaved", gpt::PipelineSchedule::Interleaved}};
inline const std::map<std::string, gpt::Recompute> kRecomputeNames = {
    {"none", gpt::Recompute::None},
    {"selective", gpt::Recompute::Selective},
    {"full", gpt::Recompute::Full}};
inline const std::map<std::string, gpt::Architecture> kArchitectureNames = {
    {"gpt2", gpt::Architecture::Gpt2}, {"llama", gpt::Architecture::Llama}};
inline const std::map<std::string, gpt::Optimizer> kOptimizerNames = {
    {"sgd", gpt::Optimizer::Sgd}, {"adam", gpt::Optimizer::Adam}};

struct Options {
  gpt::GptTrainOptions train;
  std::string corpus;             // --corpus FILE; empty: the King James Bible
  bool double_precision = false;  // --dtype double; --dtype bf16 is train.bf16
  int threads = 0;  // --threads: BLAS's and the model's loops' per rank; 0: the cores shared
  std::string report_file, trace_file;
  bool help = false;
};

// --dtype's name: float, double or bf16.
inline const char* dtype_name(const Options& o) {
  return o.double_precision ? "double" : o.train.bf16 ? "bf16" : "float";
}

// The students' functions of Parts 10, 11 and 12, for the trainer's layouts; and Part 8's, Part
// 9's, Part 14's, Part 15's and Part 16's for the pipeline, ZeRO, the grid, the buckets and
// ZeRO-3 where the tree holds them.
template <class T>
gpt::GptParallelism<T> student_parallelism();
template <class T>
void bind_pipeline(gpt::GptParallelism<T>& parallelism);  // gpt_train_pipeline.cpp
template <class T>
void bind_five_dimensional(gpt::GptParallelism<T>& parallelism);  // gpt_train_five_dimensional.cpp
template <class T>
void bind_overlap(gpt::GptParallelism<T>& parallelism);  // gpt_train_overlap.cpp
template <class T>
void bind_zero(gpt::GptParallelism<T>& parallelism);  // gpt_train_zero.cpp
template <class T>
void bind_memory(gpt::GptParallelism<T>& parallelism);  // gpt_train_memory.cpp

// Bytes one rank sends in a training step, by group (tensor, context, data, expert parallel),
// counted from the shape with values of e bytes for a rank holding `chunks` of the model's pieces
// (each [begin, end); all of them, [0, L + 2), off a pipeline); expert parallel's as if the router
// spread the rows evenly. The model's vocab_size is the corpus's.
std::array<double, 4> analytic_bytes_per_step(const gpt::GptTrainOptions& t,
                                              const gpt::GptConfig& model,
                                              const std::vector<std::array<int, 2>>& chunks,
                                              std::size_t e);

// Rows of one micro-batch's residual stream on one rank: its sequences times the positions the
// rank's stream holds.
double micro_batch_stream_rows(const gpt::GptTrainOptions& t);
// Bytes a rank of stage pp_idx sends between stages in a step (values of e bytes): for each of
// its chunks, each micro-batch's stream to the next chunk (not from the model's last) and its
// gradient to the chunk before (not from the model's first).
double analytic_pipeline_bytes_per_step(const gpt::GptTrainOptions& t, int pp_idx, std::size_t e);

// Bytes of activations one block keeps on one rank: this model's count (values of e bytes; a bf16
// run's 2 bytes, its statistics and the residual stream 4) and
// Korthikanti et al.'s for the same shape (16-bit, with dropout and the attention's scores).
struct ActivationCounts {
  double model, korthikanti;
};
ActivationCounts analytic_activations_per_block(const gpt::GptTrainOptions& t,
                                                const gpt::GptConfig& model, std::size_t e);

// The model states one rank holds, counted from the shape (Part 9.1's terms, in bytes of e): its
// chunks' parameters (each [begin, end) of pieces), their gradients, Adam's m and v; at ZeRO stage
// 1 the optimizer's for a shard of each group's values (model_states.hpp), at stage 2 the
// gradients' too, ceil(n / p) values a rank; at stage 3 (fully_sharded.hpp) each piece's shards,
// one piece whole at a time, and the optimizer's copy of the shards; a bf16 run's 2 + 2 + 12
// bytes a value (mixed_precision.hpp).
struct ModelStateCounts {
  double parameters = 0, gradients = 0, optimizer = 0;
};
ModelStateCounts analytic_model_states(const gpt::GptTrainOptions& t, const gpt::GptConfig& model,
                                       const std::vector<std::array<int, 2>>& chunks,
                                       std::size_t e);

// Rank 0: what the run will do, before it starts.
void print_header(const Options& o, const gpt::Corpus& corpus, int ranks);
// Rank 0: the results, the sample, each rank's memory and bytes sent.
void print_results(const Options& o, const gpt::Corpus& corpus, const gpt::GptTrainReport& report);
// The --report JSON and the --trace (rank 0).
void write_report(const Options& o, const gpt::Corpus& corpus, const gpt::GptTrainReport& report);
void write_trace(const Options& o, const gpt::GptTrainReport& report);

}  // namespace dtk::gpt_train
