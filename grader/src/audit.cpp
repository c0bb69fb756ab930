#include "audit.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <sstream>

namespace dtk::grade {

namespace {

struct Symbol {
  std::string name;
  std::string section;    // "" when undefined
  bool exported = false;  // global or weak, default or protected visibility
  bool strong = false;    // global: not an instance of a template or inline function
};

// Section index -> name, from the section headers ("  [ 5] .text._ZN3dtk... PROGBITS ...").
std::map<std::string, std::string> section_names(const std::string& text) {
  std::map<std::string, std::string> names;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t open = line.find('['), close = line.find(']');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    std::istringstream index(line.substr(open + 1, close - open - 1)), rest(line.substr(close + 1));
    std::string number, name;
    if (index >> number && rest >> name) names[number] = name;
  }
  return names;
}

// From the symbol table: "   12: 0000000000000000   190 FUNC    GLOBAL DEFAULT   14 _ZN3dtk...".
std::vector<Symbol> symbols_of(const std::string& text,
                               const std::map<std::string, std::string>& sections) {
  std::vector<Symbol> symbols;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string num, value, size, type, bind, vis, ndx, name;
    if (!(fields >> num >> value >> size >> type >> bind >> vis >> ndx >> name)) continue;
    if (num.empty() || num.back() != ':' || type == "SECTION" || type == "FILE") continue;
    const auto section = sections.find(ndx);
    symbols.push_back({name, ndx == "UND" || section == sections.end() ? "" : section->second,
                       bind != "LOCAL" && (vis == "DEFAULT" || vis == "PROTECTED"),
                       bind == "GLOBAL"});
  }
  return symbols;
}

// From the relocations: section -> symbols its relocations name. A relocation against a section
// symbol names the section itself.
std::map<std::string, std::set<std::string>> references_of(const std::string& text) {
  std::map<std::string, std::set<std::string>> references;
  std::istringstream lines(text);
  std::string current;
  for (std::string line; std::getline(lines, line);) {
    const std::string marker = "Relocation section '";
    if (line.rfind("Symbol table", 0) == 0) current.clear();  // the relocations are over
    if (line.rfind(marker, 0) == 0) {
      const std::size_t end = line.find('\'', marker.size());
      current = line.substr(marker.size(), end - marker.size());
      if (current.rfind(".rela", 0) == 0)
        current.erase(0, 5);
      else if (current.rfind(".rel", 0) == 0)
        current.erase(0, 4);
      continue;
    }
    std::istringstream fields(line);
    std::string offset, info, type, value, name;
    if (!current.empty() && fields >> offset >> info >> type >> value >> name) {
      const std::size_t at = name.find('@');
      references[current].insert(at == std::string::npos ? name : name.substr(0, at));
    }
  }
  return references;
}

// Would this definition, exported from libdtk_student.so, replace a function of the C or C++
// library, MPI or the runner for the whole process? C names (any extern "C" definition: student
// code defines only C++ functions), and strong definitions of operator new and delete and of
// names in std:: or in the runner's namespace dtk::grade (the weak ones are the compiler's
// instances of header templates, the same code as the library's).
bool interposes(const Symbol& symbol) {
  if (symbol.section.empty() || !symbol.exported) return false;
  if (symbol.name.rfind("_Z", 0) != 0) return true;
  for (const char* prefix : {"_Znw", "_Zna", "_Zdl", "_Zda", "_ZNSt", "_ZSt", "_ZNKSt",
                             "_ZN3dtk5grade", "_ZNK3dtk5grade"}) {
    if (symbol.strong && symbol.name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// The Communicator's own functions that call MPI (communicator.cpp, outside the student's
// object), by the public call that reaches each: student code reaches them through the
// Communicator's inline templates (comm.Allreduce(...) calls dtk::Communicator::allreduce).
const std::map<std::string, std::string>& communicator_calls() {
  static const std::map<std::string, std::string> calls = {
      {"dtk::Communicator::allreduce(", "Allreduce"},
      {"dtk::Communicator::allgather(", "Allgather"},
      {"dtk::Communicator::reduce_scatter(", "Reduce_scatter"},
      {"dtk::Communicator::alltoall(", "Alltoall"},
      {"dtk::Communicator::alltoallv(", "Alltoallv"},
      {"dtk::Communicator::send(", "Send"},
      {"dtk::Communicator::recv(", "Recv"},
      {"dtk::Communicator::sendrecv(", "Sendrecv"},
      {"dtk::Communicator::Barrier(", "Barrier"},
      {"dtk::Communicator::Split(", "Split"}};
  return calls;
}

// How a forbidden symbol is reported ("MPI_Bcast", "Communicator::Allreduce"), or "" when the
// rules allow it.
std::string forbidden_as(const std::string& symbol, const AuditRules& rules) {
  if (symbol.rfind("MPI_", 0) == 0 || symbol.rfind("PMPI_", 0) == 0) {
    const std::string call = symbol[0] == 'P' ? symbol.substr(1) : symbol;
    return rules.allowed_mpi.count(call) ? "" : symbol;
  }
  if (symbol.rfind("_ZN3dtk12Communicator", 0) == 0 ||
      symbol.rfind("_ZNK3dtk12Communicator", 0) == 0) {
    const std::string name = demangle(symbol);
    for (const auto& [function, call] : communicator_calls()) {
      if (name.rfind(function, 0) == 0 && !rules.allowed_communicator.count(call))
        return "Communicator::" + call;
    }
    return "";
  }
  return rules.forbidden_symbols.count(symbol) ? symbol : "";
}

// Is `demangled` a definition of dtk::<function><suffix>? Template instances demangle with
// their return type first: "std::pair<...> dtk::split_train<float>(...)".
bool names_function(const std::string& demangled, const std::string& function,
                    const std::string& suffixes = "(<") {
  const std::string name = "dtk::" + function;
  for (std::size_t at = demangled.find(name); at != std::string::npos;
       at = demangled.find(name, at + 1)) {
    const std::size_t end = at + name.size();
    if ((at == 0 || demangled[at - 1] == ' ') && end < demangled.size() &&
        suffixes.find(demangled[end]) != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string demangle(const std::string& symbol) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> name(
      abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 ? std::string(name.get()) : symbol;
}

Audit audit_object(const std::string& readelf, const std::vector<std::string>& functions,
                   const AuditRules& rules) {
  const auto sections = section_names(readelf);
  const auto symbols = symbols_of(readelf, sections);
  const auto references = references_of(readelf);
  std::map<std::string, std::string> section_of;  // defined symbol -> its section
  Audit audit;
  std::map<std::string, std::string> forbidden_anywhere;  // symbol -> how it is reported
  std::set<std::string> replaced;
  for (const Symbol& symbol : symbols) {
    if (!symbol.section.empty()) {
      section_of[symbol.name] = symbol.section;
      audit.defined.insert(demangle(symbol.name));
    }
    // Defining a library's function (MPI_Send, dladdr, ...) replaces the library's own for the
    // whole process: it costs every graded function of the file.
    if (interposes(symbol)) {
      replaced.insert(symbol.name);
    } else if (const std::string reported = forbidden_as(symbol.name, rules); !reported.empty()) {
      forbidden_anywhere[symbol.name] = reported;
    }
  }

  std::set<std::string> attributed;
  for (const std::string& function : functions) {
    // Depth-first over sections, from the sections of the function's definitions.
    std::vector<std::string> stack;
    std::set<std::string> seen;
    for (const Symbol& symbol : symbols) {
      if (!symbol.section.empty() && names_function(demangle(symbol.name), function)) {
        stack.push_back(symbol.section);
      }
    }
    while (!stack.empty()) {
      const std::string section = stack.back();
      stack.pop_back();
      if (!seen.insert(section).second) continue;
      const auto refs = references.find(section);
      if (refs == references.end()) continue;
      for (const std::string& name : refs->second) {
        if (const auto forbidden = forbidden_anywhere.find(name);
            forbidden != forbidden_anywhere.end()) {
          audit.forbidden[function].insert(forbidden->second);
          attributed.insert(name);
        }
        const auto defined = section_of.find(name);
        stack.push_back(defined != section_of.end() ? defined->second : name);
      }
    }
  }
  for (const auto& [name, reported] : forbidden_anywhere) {
    if (attributed.count(name)) continue;
    for (const std::string& function : functions) audit.forbidden[function].insert(reported);
  }
  for (const std::string& name : replaced) {
    for (const std::string& function : functions) {
      audit.forbidden[function].insert("a definition of " + demangle(name) +
                                       ", which replaces the library's own");
    }
  }
  return audit;
}

bool defines_function(const Audit& audit, const std::string& function, const std::string& type) {
  // Demangled, std::int32_t reads "int".
  const std::string spelled = type == "int32" ? "int" : type;
  const std::string instance = type.empty() ? function : function + "<" + spelled + ">";
  for (const std::string& name : audit.defined) {
    if (names_function(name, instance, "(")) return true;
  }
  return false;
}

}  // namespace dtk::grade
