// What the kit's trainers (unified_train, gpt_train) share on their command line: reading
// numbers and words, output files checked before a run rather than after it, and main's frame
// (MPI started and stopped, every error one line from rank 0 and an exit status).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>

#include <dtk/communicator.hpp>

namespace dtk::command_line {

// A command line that cannot run: the message says why, run_mpi_program prints it and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `text` as an integer >= minimum, else UsageError naming the flag.
long parse_integer(const std::string& flag, const std::string& text, long minimum);
long parse_positive(const std::string& flag, const std::string& text);
// `text` as a number > 0 (or >= 0 with allow_zero), else UsageError naming the flag.
double parse_positive_number(const std::string& flag, const std::string& text,
                             bool allow_zero = false);

// The choice named `text`, else UsageError listing the names.
template <class Choice>
Choice parse_choice(const std::string& flag, const std::string& text,
                    const std::map<std::string, Choice>& choices) {
  const auto found = choices.find(text);
  if (found != choices.end()) return found->second;
  // "a or b", "a, b or c"
  std::string names;
  std::size_t listed = 0;
  for (const auto& [name, choice] : choices) {
    ++listed;
    names += (listed == 1 ? "" : listed == choices.size() ? " or " : ", ") + name;
  }
  throw UsageError(flag + " expects " + names + ", got '" + text + "'");
}

// The name of `choice` among `choices` (the table parse_choice read it from).
template <class Choice>
std::string choice_name(const std::map<std::string, Choice>& choices, Choice choice) {
  for (const auto& [name, value] : choices) {
    if (value == choice) return name;
  }
  throw std::logic_error("choice_name: a choice without a name");
}

// Reads a command line of flags: `--help` or `-h` sets help; each flag of with_value is
// followed by its value, which its setter reads (flag, value). UsageError, saying "try --help",
// for an unknown flag or a missing value.
using FlagSetter = std::function<void(const std::string& flag, const std::string& value)>;
void parse_flags(int argc, char** argv, const std::map<std::string, FlagSetter>& with_value,
                 bool& help);

// "      1.23": bytes as MiB (2^20 bytes), right-aligned in 10 characters.
std::string mebibytes(std::uint64_t bytes);

// Writes a file with `write`; std::runtime_error naming `what` if it cannot.
void write_file(const std::string& path, const std::string& what,
                const std::function<void(std::ostream&)>& write);

// Collective: UsageError when rank 0 cannot create `path` (given with `flag`), so that a run is
// refused before it trains, not after. Nothing when path is empty.
void check_writable(const std::string& path, const std::string& flag, const Communicator& world);

// The one line saying that the BLAS runs kernels slower than this processor's, and what to do
// (dtk/blas_kernel.hpp), printed under a trainer's header; nothing when it runs the fastest.
void print_blas_note();

// main() of an MPI program: the BLAS's fastest kernels chosen (dtk/blas_kernel.hpp, which may start
// the program again), MPI started, body(world) run, MPI stopped. Every rank sees the same
// command line and data, so every rank fails the same way and rank 0 alone prints the one line
// "<program>: <why>"; returns the exit status: 0, 2 for a UsageError or a DataError (bad input),
// 1 for any other error. An error that only some ranks meet (the others waiting for them in a
// communication) is printed by each rank that met it, "<program>: rank R: <why>", and ends the
// whole run (MPI_Abort, exit status 1) rather than leaving it hung.
int run_mpi_program(int argc, char** argv, const char* program,
                    const std::function<void(const Communicator& world)>& body);

}  // namespace dtk::command_line
