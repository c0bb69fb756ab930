#include "dtk/blas_kernel.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <sstream>

namespace dtk {

namespace {

// How new the instructions of OpenBLAS 0.3.21's x86-64 kernels are (names as it reports them,
// lower case): SSE3 and older 1, AVX 2, AVX2 with FMA 3, AVX-512 4, AVX-512 with BF16 5. A
// kernel missing here (a newer OpenBLAS's) is left alone.
int instruction_level(std::string kernel) {
  for (char& c : kernel) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::map<std::string, int> levels = {
      {"katmai", 1},       {"coppermine", 1}, {"northwood", 1},  {"prescott", 1},
      {"banias", 1},       {"atom", 1},       {"core2", 1},      {"penryn", 1},
      {"dunnington", 1},   {"nehalem", 1},    {"athlon", 1},     {"opteron", 1},
      {"opteron_sse3", 1}, {"barcelona", 1},  {"nano", 1},       {"bobcat", 1},
      {"sandybridge", 2},  {"bulldozer", 2},  {"piledriver", 2}, {"steamroller", 2},
      {"excavator", 2},    {"haswell", 3},    {"zen", 3},        {"skylakex", 4},
      {"cooperlake", 5}};
  const auto found = levels.find(kernel);
  return found == levels.end() ? 0 : found->second;
}

// The fastest kernels whose instructions this processor (and its operating system) has.
std::string fastest_for_processor() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512cd");
  if (avx512 && __builtin_cpu_supports("avx512bf16")) return "Cooperlake";
  if (avx512) return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  if (__builtin_cpu_supports("avx")) return "Sandybridge";
#endif
  return "";
}

// OpenBLAS's own functions, looked up so that a program linked with another BLAS still runs.
std::string openblas_text(const char* function) {
  using Getter = const char* (*)();
  const auto get = reinterpret_cast<Getter>(dlsym(RTLD_DEFAULT, function));
  const char* text = get != nullptr ? get() : nullptr;
  return text != nullptr ? text : "";
}

constexpr const char* kChosenByDtk = "DTK_CHOSE_OPENBLAS_CORETYPE";
// Set in the program run again: it never runs itself a third time, whatever its environment.
constexpr const char* kStartedAgain = "DTK_STARTED_AGAIN_FOR_OPENBLAS";

// Runs this program again, by its own file's path (by /proc/self/exe itself, ps and pgrep would
// name the process "exe"). Returns only if that failed.
void run_again(char** argv) {
  char path[4096];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) return;
  path[length] = '\0';
  execv(path, argv);
}

}  // namespace

std::string kernel_to_choose(const std::string& current, const std::string& fastest,
                             const std::string& from_environment) {
  if (!from_environment.empty() || current.empty() || fastest.empty()) return "";
  const int level = instruction_level(current);
  return level > 0 && level < instruction_level(fastest) ? fastest : "";
}

BlasKernel blas_kernel() {
  BlasKernel blas;
  std::istringstream config(openblas_text("openblas_get_config"));  // "OpenBLAS 0.3.21 ..."
  std::string name, version;
  if (config >> name >> version && name == "OpenBLAS") {
    blas.library = name + " " + version;
    blas.kernel = openblas_text("openblas_get_corename");
  }
  blas.fastest = fastest_for_processor();
  const char* asked = std::getenv("OPENBLAS_CORETYPE");
  const bool by_dtk = std::getenv(kChosenByDtk) != nullptr;
  blas.chosen_by = asked == nullptr || *asked == '\0' ? "OpenBLAS"
                   : by_dtk                           ? "dtk"
                                                      : "OPENBLAS_CORETYPE";
  const char* timeout = std::getenv("OPENBLAS_THREAD_TIMEOUT");
  blas.thread_timeout = timeout != nullptr ? timeout : "";
  return blas;
}

bool BlasKernel::slower_than_processor() const {
  const int level = instruction_level(kernel);
  return level > 0 && level < instruction_level(fastest);
}

std::string BlasKernel::describe() const {
  if (library.empty()) return "a BLAS other than OpenBLAS";
  return library + ", " + kernel + " kernels (chosen by " + chosen_by + ")";
}

std::string BlasKernel::advice() const {
  if (!slower_than_processor()) return "";
  const std::string why = chosen_by == "OPENBLAS_CORETYPE"
                              ? "OPENBLAS_CORETYPE in the environment asks for them"
                              : "OpenBLAS took this processor for an older one";
  return "Note: OpenBLAS multiplies with its " + kernel + " kernels (" + why +
         "), but this processor runs its " + fastest +
         " ones, with faster matrix products: unset OPENBLAS_CORETYPE, and dtk's programs "
         "choose them.";
}

void start_with_openblas_settings(char** argv) {
  const BlasKernel blas = blas_kernel();
  // Another BLAS (neither setting means anything to it), or already started again.
  if (blas.library.empty() || std::getenv(kStartedAgain) != nullptr) return;
  const char* asked = std::getenv("OPENBLAS_CORETYPE");
  const std::string choice =
      kernel_to_choose(blas.kernel, blas.fastest, asked != nullptr ? asked : "");
  const bool set_timeout = std::getenv("OPENBLAS_THREAD_TIMEOUT") == nullptr;
  if (choice.empty() && !set_timeout) return;
  if (!choice.empty()) {
    setenv("OPENBLAS_CORETYPE", choice.c_str(), 1);
    setenv(kChosenByDtk, choice.c_str(), 1);
  }
  if (set_timeout) setenv("OPENBLAS_THREAD_TIMEOUT", kBlasThreadTimeout, 1);
  setenv(kStartedAgain, "1", 1);
  run_again(argv);
  // It failed: run on with what OpenBLAS chose, in the environment as it was.
  if (!choice.empty()) {
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv(kChosenByDtk);
  }
  if (set_timeout) unsetenv("OPENBLAS_THREAD_TIMEOUT");
  unsetenv(kStartedAgain);
}

}  // namespace dtk
