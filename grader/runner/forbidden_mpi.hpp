// Run-time detection of MPI calls outside the allowed ones (PMPI interposition).
#pragma once

#include <map>
#include <set>
#include <string>

namespace dtk::grade {

// The MPI calls the manifest allows the code of each graded function ("allowed_mpi", passed by
// dtk-grade as --allowed-mpi FUNCTION=CALL,...): a trapped call allowed to the function under
// test is forwarded without a record. Called once, before any test runs.
void allow_mpi_calls(std::map<std::string, std::set<std::string>> by_function);

// The test about to run checks `function`: its rules apply until the next call ("": no test
// runs, every trapped call is recorded... or ignored when the runner itself makes it).
void apply_rules_of(const std::string& function);

// Called by every interposed MPI function the manifest does not allow, before it forwards to
// PMPI_*. Records the call in the current test's output unless the caller is the runner's own
// executable (the provided helpers, e.g. print_in_rank_order, use MPI_Gather; student code
// lives in libdtk_student.so).
void report_forbidden_call(const char* call, const void* return_address);

}  // namespace dtk::grade
