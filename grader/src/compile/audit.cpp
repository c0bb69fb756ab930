#include "compile/audit.hpp"

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
      {"dtk::Communicator::isend(", "Isend"},
      {"dtk::Communicator::irecv(", "Irecv"},
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
  // The grader's own code, which the runner exports with the provided code (its event log and
  // its recording of a student call are not the student's to write).
  if (symbol.rfind("_ZN3dtk5grade", 0) == 0 || symbol.rfind("_ZNK3dtk5grade", 0) == 0)
    return demangle(symbol);
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

namespace {

// One object's listing, parsed.
struct Listing {
  std::string file;
  std::vector<Symbol> symbols;
  std::map<std::string, std::set<std::string>> references;  // section -> symbols it names
  std::map<std::string, std::string> section_of;            // defined symbol -> its section
};

Listing parse_listing(const AuditedObject& object) {
  Listing listing;
  listing.file = object.file;
  listing.symbols = symbols_of(object.readelf, section_names(object.readelf));
  listing.references = references_of(object.readelf);
  for (const Symbol& symbol : listing.symbols) {
    if (!symbol.section.empty()) listing.section_of[symbol.name] = symbol.section;
  }
  return listing;
}

// A section of one of the objects.
using Place = std::pair<std::size_t, std::string>;  // (object index, section)

// Writable data (a global variable, a function pointer among them).
bool is_writable_data(const std::string& section) {
  for (const char* prefix : {".bss", ".data", ".tbss", ".tdata"}) {
    if (section.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// Writable data symbol -> the sections that name it (the code that reads or writes it, and
// data that points to it). A function pointer stored in a global by one section and called
// through by another leaves no relocation between the two: whoever names a global is taken to
// reach what every section naming it names (the addresses it may have stored there).
std::map<std::string, std::vector<Place>> namers_of_globals(const std::vector<Listing>& listings) {
  std::set<std::string> globals;
  for (const Listing& listing : listings) {
    for (const auto& [name, section] : listing.section_of) {
      if (is_writable_data(section)) globals.insert(name);
    }
  }
  std::map<std::string, std::vector<Place>> namers;
  for (std::size_t o = 0; o < listings.size(); ++o) {
    for (const auto& [section, names] : listings[o].references) {
      for (const std::string& name : names) {
        if (globals.count(name)) namers[name].push_back({o, section});
      }
    }
  }
  return namers;
}

}  // namespace

std::map<std::string, Audit> audit_library(const std::vector<AuditedObject>& objects,
                                           const std::vector<GradedFunction>& functions) {
  std::vector<Listing> listings;
  for (const AuditedObject& object : objects) listings.push_back(parse_listing(object));
  // What the dynamic linker binds an undefined name to: the objects' exported definitions.
  std::map<std::string, std::vector<Place>> exported;
  std::map<std::string, Audit> audits;
  for (std::size_t o = 0; o < listings.size(); ++o) {
    Audit& audit = audits[listings[o].file];
    for (const Symbol& symbol : listings[o].symbols) {
      if (symbol.section.empty()) continue;
      audit.defined.insert(demangle(symbol.name));
      if (symbol.exported) exported[symbol.name].push_back({o, symbol.section});
    }
  }

  const std::map<std::string, std::vector<Place>> namers = namers_of_globals(listings);

  // Depth-first over sections, from each function's definitions in its own file, into any
  // object, and through globals to what else names them (namers_of_globals): static
  // initializers and other functions that may have stored a function's address there. Each
  // forbidden name on the way is charged to the function, under its own rules.
  std::set<std::pair<std::size_t, std::string>> reached;  // (object, name) some function reaches
  for (const GradedFunction& function : functions) {
    std::vector<Place> stack;
    std::set<Place> seen;
    for (std::size_t o = 0; o < listings.size(); ++o) {
      if (listings[o].file != function.file) continue;
      for (const Symbol& symbol : listings[o].symbols) {
        if (!symbol.section.empty() && names_function(demangle(symbol.name), function.name))
          stack.push_back({o, symbol.section});
      }
    }
    while (!stack.empty()) {
      const Place place = stack.back();
      stack.pop_back();
      if (!seen.insert(place).second) continue;
      const Listing& listing = listings[place.first];
      const auto refs = listing.references.find(place.second);
      if (refs == listing.references.end()) continue;
      for (const std::string& name : refs->second) {
        reached.insert({place.first, name});
        if (const std::string reported = forbidden_as(name, function.rules); !reported.empty())
          audits[function.file].forbidden[function.name].insert(reported);
        if (const auto global = namers.find(name); global != namers.end())
          stack.insert(stack.end(), global->second.begin(), global->second.end());
        if (const auto local = listing.section_of.find(name); local != listing.section_of.end()) {
          stack.push_back({place.first, local->second});
        } else if (const auto elsewhere = exported.find(name); elsewhere != exported.end()) {
          stack.insert(stack.end(), elsewhere->second.begin(), elsewhere->second.end());
        } else {
          stack.push_back({place.first, name});  // a relocation against a section names it
        }
      }
    }
  }

  // What no graded function reaches counts against every function of its file: a forbidden
  // name (under that function's rules), or a definition that replaces a library's function.
  for (std::size_t o = 0; o < listings.size(); ++o) {
    Audit& audit = audits[listings[o].file];
    for (const GradedFunction& function : functions) {
      if (function.file != listings[o].file) continue;
      for (const Symbol& symbol : listings[o].symbols) {
        if (interposes(symbol)) {
          audit.forbidden[function.name].insert("a definition of " + demangle(symbol.name) +
                                                ", which replaces the library's own");
        } else if (!reached.count({o, symbol.name})) {
          const std::string reported = forbidden_as(symbol.name, function.rules);
          if (!reported.empty()) audit.forbidden[function.name].insert(reported);
        }
      }
    }
  }
  return audits;
}

Audit audit_object(const std::string& readelf, const std::vector<std::string>& functions,
                   const AuditRules& rules) {
  std::vector<GradedFunction> graded;
  for (const std::string& function : functions) graded.push_back({function, "", rules});
  return audit_library({{"", readelf}}, graded)[""];
}

bool defines_function(const Audit& audit, const std::string& function, const std::string& type) {
  // Demangled, std::int32_t reads "int".
  const std::string spelled = type == "int32" ? "int" : type;
  const std::string instance = type.empty() ? function : function + "<" + spelled + ">";
  // A graded class (Part 15's GradientBuckets, Part 16's FullyShardedBlocks<float>) is defined
  // where its constructor is.
  const std::string constructor = instance + "::" + function;
  // An untyped check of a template (Part 15's pipelined_ring) calls one instance of its own.
  const std::string suffixes = type.empty() ? "(<" : "(";
  for (const std::string& name : audit.defined) {
    if (names_function(name, instance, suffixes) || names_function(name, constructor, "("))
      return true;
  }
  return false;
}

}  // namespace dtk::grade
