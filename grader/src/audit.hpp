// The symbol audit of a compiled student file: which functions it defines, and which
// forbidden calls (MPI and Communicator calls outside the allowed ones, escape hatches like
// dlsym or fork) each graded function can reach.
//
// Student files are compiled with -ffunction-sections, so every function has its own section
// and the relocations of a section name what that function calls or takes the address of. The
// audit follows those edges from each graded function; a forbidden symbol no graded function
// reaches (code run by a static initialiser, say) counts against every function of the file.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace dtk::grade {

struct Audit {
  // Demangled names of the functions the object defines, e.g.
  // "dtk::naive_collect_forward_input<float>(xt::xtensor_container<...> const&, ...)".
  std::set<std::string> defined;
  // Graded function name (e.g. "get_info") -> forbidden symbols it reaches.
  std::map<std::string, std::set<std::string>> forbidden;
  // Why the object could not be audited (its tests are not run), or "".
  std::string problem;
};

struct AuditRules {
  std::set<std::string> allowed_mpi;           // MPI_* a student file may call itself
  std::set<std::string> allowed_communicator;  // the Communicator's calls ("Send") it may make
  std::set<std::string> forbidden_symbols;     // other symbols it may not use
};

// `readelf` is the output of readelf -SrsW on the object (run in the sandbox: the object is
// untrusted). `functions`: the graded functions of this file (unqualified names).
Audit audit_object(const std::string& readelf, const std::vector<std::string>& functions,
                   const AuditRules& rules);

// Does the object define `function` (for `type`, "" when not a template)?
bool defines_function(const Audit& audit, const std::string& function, const std::string& type);

std::string demangle(const std::string& symbol);

}  // namespace dtk::grade
