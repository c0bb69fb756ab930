// Run-time detection of MPI calls outside the allowed collectives (PMPI interposition).
#pragma once

namespace dtk::grade {

// Called by every interposed MPI function before it forwards to PMPI_*. Records the call in
// the current test's output unless the caller is the runner's own executable (the provided
// helpers, e.g. print_in_rank_order, use MPI_Gather; student code lives in libdtk_student.so).
void report_forbidden_call(const char* call, const void* return_address);

}  // namespace dtk::grade
