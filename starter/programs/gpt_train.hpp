// gpt_train: trains the GPT of assignment 3 (include/dtk/gpt/) on the King James Bible or any
// UTF-8 text, on tp × cp × dp ranks.
//   gpt_train.cpp         the command line and the run
//   gpt_train_report.cpp  what rank 0 prints at the end, the --report JSON and the --trace
#pragma once

#include <string>

#include <dtk/gpt/corpus.hpp>
#include <dtk/gpt/trainer.hpp>

#include "command_line.hpp"

namespace dtk::gpt_train {

using namespace command_line;  // UsageError, parse_*, mebibytes, write_file, check_writable

struct Options {
  gpt::GptTrainOptions train;
  std::string corpus;  // --corpus FILE; empty: the King James Bible
  bool double_precision = false;
  std::string report_file, trace_file;
  bool help = false;
};

// Rank 0: what the run will do, before it starts.
void print_header(const Options& o, const gpt::Corpus& corpus, int ranks);
// Rank 0: the results, the sample, each rank's memory and bytes sent.
void print_results(const Options& o, const gpt::GptTrainReport& report);
// The --report JSON and the --trace (rank 0).
void write_report(const Options& o, const gpt::Corpus& corpus, const gpt::GptTrainReport& report);
void write_trace(const Options& o, const gpt::GptTrainReport& report);

}  // namespace dtk::gpt_train
