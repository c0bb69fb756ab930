// The manifest's limits, one struct per kind (its "timeouts", its "limits" of the sandbox and of
// the build, its "tolerances"): read by load_manifest (every key required, no default here) and
// passed whole to what applies them.
#pragma once

namespace dtk::grade {

// "timeouts", in seconds.
struct Timeouts {
  int group_seconds = 0;       // one launch of the runner, at most
  int test_seconds = 0;        // one test among others: the runner's watchdog
  int retry_test_seconds = 0;  // a test past its watchdog, run again alone (>= test_seconds)
  int compile_seconds = 0;     // one student file's compiler
};

// "limits": what the sandbox allows the submission's processes.
struct SandboxLimits {
  int address_space_mb = 0;  // each process
  int file_size_mb = 0;      // each file it writes
  int processes = 0;         // of the sandbox user at once
  int output_kb = 0;         // kept of a command's stdout + stderr (head and tail)
  int total_memory_mb = 0;   // resident memory of all sandboxed processes together
  int disk_mb = 0;           // what they may write: their directories and temporary files
};

// "limits": the build's and the symbol audit's.
struct BuildLimits {
  int compiler_address_space_mb = 0;  // each compiler (cc1plus needs more than a test)
  int compilers_at_once = 0;
  int audit_output_mb = 0;  // of readelf's listing of one object, read at most
};

// "tolerances": relative, of float tensors, of double tensors and of real results.
struct Tolerances {
  double float_rtol = 0, double_rtol = 0, real_rtol = 0;
};

}  // namespace dtk::grade
