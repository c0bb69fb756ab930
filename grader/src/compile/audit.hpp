// The symbol audit of the compiled student files: which functions each defines, and which
// forbidden calls (MPI and Communicator calls outside the allowed ones, escape hatches like
// dlsym or fork) each graded function can reach.
//
// Student files are compiled with -ffunction-sections, so every function has its own section
// and the relocations of a section name what that function calls or takes the address of. The
// audit follows those edges from each graded function, across the files linked together into
// libdtk_student.so: a function's rules (its part's) apply to everything it reaches, whichever
// student file defines it (a Part 7 function calling a helper in zero/zero.cpp that calls
// Communicator::Allreduce reaches a collective Part 7 forbids). A function that names a global
// variable reaches what every section naming it reaches (a function pointer a static
// initialiser of another file stores there, say). A forbidden symbol no graded function
// reaches (code run by a static initialiser, say) counts against every function of its file.
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

// One compiled student file: `readelf` is the output of readelf -SrsW on its object (run in the
// sandbox: the object is untrusted).
struct AuditedObject {
  std::string file;  // "collectives/my_collectives.cpp"
  std::string readelf;
};

// A graded function (unqualified name), the student file that must define it, and its rules.
struct GradedFunction {
  std::string name;
  std::string file;
  AuditRules rules;
};

// File -> its audit, for the objects linked together.
std::map<std::string, Audit> audit_library(const std::vector<AuditedObject>& objects,
                                           const std::vector<GradedFunction>& functions);

// One object on its own, every function under `rules` (unqualified names).
Audit audit_object(const std::string& readelf, const std::vector<std::string>& functions,
                   const AuditRules& rules);

// Does the object define `function` (for `type`, "" when not a template), or the class
// `function` (its constructor)?
bool defines_function(const Audit& audit, const std::string& function, const std::string& type);

std::string demangle(const std::string& symbol);

}  // namespace dtk::grade
