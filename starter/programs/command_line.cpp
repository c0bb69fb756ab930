#include "command_line.hpp"

#include <dtk/blas_kernel.hpp>
#include <dtk/data/idx_loader.hpp>  // DataError
#include <dtk/freed_memory.hpp>
#include <dtk/single_machine_mpi.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

namespace dtk::command_line {

long parse_integer(const std::string& flag, const std::string& text, long minimum) {
  std::size_t used = 0;
  long value = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < minimum) {
    throw UsageError(flag + " expects " +
                     (minimum == 0 ? "an integer >= 0" : "a positive integer") + ", got '" + text +
                     "'");
  }
  return value;
}

long parse_positive(const std::string& flag, const std::string& text) {
  return parse_integer(flag, text, 1);
}

void parse_flags(int argc, char** argv, const std::map<std::string, FlagSetter>& with_value,
                 bool& help) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      help = true;
      continue;
    }
    const auto setter = with_value.find(flag);
    if (setter == with_value.end()) throw UsageError("unknown flag '" + flag + "' (try --help)");
    if (i + 1 == argc) throw UsageError(flag + " needs a value (try --help)");
    setter->second(flag, argv[++i]);
  }
}

double parse_positive_number(const std::string& flag, const std::string& text, bool allow_zero) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(allow_zero ? value >= 0 : value > 0) || !std::isfinite(value)) {
    throw UsageError(flag + " expects a " + (allow_zero ? "number >= 0" : "positive number") +
                     ", got '" + text + "'");
  }
  return value;
}

std::string mebibytes(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%10.2f", bytes / double(1 << 20));
  return text;
}

void write_file(const std::string& path, const std::string& what,
                const std::function<void(std::ostream&)>& write) {
  std::ofstream out(path);
  if (out) write(out);
  if (!out) throw std::runtime_error("cannot write the " + what + " to " + path);
}

void check_writable(const std::string& path, const std::string& flag, const Communicator& world) {
  if (path.empty()) return;
  int ok = 1;
  if (world.Get_rank() == 0) ok = std::ofstream(path) ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, world.handle());
  if (!ok) throw UsageError(flag + " " + path + ": cannot create this file");
}

void print_blas_note() {
  const std::string note = blas_kernel().advice();
  if (!note.empty()) std::printf("%s\n", note.c_str());
}

namespace {

// How long the ranks that met an error wait for the others to meet it too.
constexpr double kErrorAgreementSeconds = 20;

// Whether every rank of `errors` (a communicator nothing else uses, so that this barrier never
// meets another rank's pending collective) arrives within kErrorAgreementSeconds.
bool every_rank_arrives(MPI_Comm errors) {
  MPI_Request barrier;
  MPI_Ibarrier(errors, &barrier);
  const double deadline = MPI_Wtime() + kErrorAgreementSeconds;
  int arrived = 0;
  while (!arrived && MPI_Wtime() < deadline) {
    MPI_Test(&barrier, &arrived, MPI_STATUS_IGNORE);
    if (!arrived) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return arrived != 0;
}

}  // namespace

int run_mpi_program(int argc, char** argv, const char* program,
                    const std::function<void(const Communicator& world)>& body) {
  start_with_openblas_settings(argv);
  keep_freed_memory();
  use_single_machine_mpi();
  int threads = 0;  // data loaders may have threads of their own, which never call MPI
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &threads);
  MPI_Comm errors;
  MPI_Comm_dup(MPI_COMM_WORLD, &errors);
  int status = 0;
  {
    const Communicator world;
    const bool root = world.Get_rank() == 0;
    std::string why;
    try {
      body(world);
    } catch (const UsageError& e) {
      why = e.what();
      status = 2;
    } catch (const DataError& e) {
      why = e.what();
      status = 2;
    } catch (const std::exception& e) {
      why = e.what();
      status = 1;
    }
    if (status != 0 && !every_rank_arrives(errors)) {
      std::cerr << program << ": rank " << world.Get_rank() << ": " << why << std::endl;
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (status != 0 && root) std::cerr << program << ": " << why << "\n";
  }
  MPI_Comm_free(&errors);
  MPI_Finalize();
  return status;
}

}  // namespace dtk::command_line
