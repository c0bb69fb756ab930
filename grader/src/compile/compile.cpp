#include "compile/compile.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "compile/object_cache.hpp"
#include "files.hpp"
#include "text.hpp"

namespace dtk::grade {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxErrorLines = 25, kMaxErrorChars = 3000;
constexpr std::size_t kMaxDependencyBytes = 1 << 20, kMaxLibraryBytes = std::size_t{256} << 20;

std::string read_source(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

// The first lines of the compiler's output, with the sandbox's paths made relative again.
std::string first_errors(std::string output, const std::string& src_dir) {
  for (std::size_t at; (at = output.find(src_dir)) != std::string::npos;)
    output.erase(at, src_dir.size());
  std::istringstream lines(output);
  std::string kept;
  std::size_t count = 0;
  for (std::string line; std::getline(lines, line) && count < kMaxErrorLines; ++count) {
    kept += line + "\n";
  }
  if (kept.size() > kMaxErrorChars) kept = kept.substr(0, kMaxErrorChars) + "...\n";
  return shown_text(kept);
}

// Every file the compiler read (a make rule written with -MD), one per element.
std::vector<std::string> dependencies(const std::string& text) {
  std::vector<std::string> deps;
  std::string current;
  const std::size_t colon = text.find(": ");
  for (std::size_t i = colon == std::string::npos ? 0 : colon + 2; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == ' ') {
      current += ' ';
      ++i;
    } else if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;
    } else if (c == ' ' || c == '\n' || c == '\t') {
      if (!current.empty()) deps.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) deps.push_back(current);
  return deps;
}

// Why the includes of a compiled file, every file its compile read, are not acceptable, or "".
std::string include_problem(const std::vector<std::string>& read, const std::string& scratch) {
  for (const std::string& dep : read) {
    const std::string path = fs::weakly_canonical(dep).string();
    if (path.rfind(scratch + "/", 0) == 0 || path.rfind("/usr/", 0) == 0) continue;
    return "it includes " + shown_name(dep) +
           ": student files may include only the provided headers, the standard library and "
           "the libraries the kit uses";
  }
  return "";
}

// The statements of one line of assembly: split at ';' (GAS's separator on x86) outside
// strings, comments ('#' to the end of the line) dropped, leading labels ("name:") removed.
std::vector<std::string> statements(const std::string& line) {
  std::vector<std::string> found;
  std::string current;
  bool quoted = false;
  auto finish = [&] {
    std::istringstream words(current);
    std::string word;
    while (words >> word) {
      word.erase(0, word.rfind(':') + 1);  // labels: "name:", or "name:statement" run together
      if (word.empty()) continue;
      std::string rest;
      std::getline(words, rest);
      found.push_back(word + rest);
      break;
    }
    current.clear();
  };
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '\\' && i + 1 < line.size()) {
      current += c;
      current += line[++i];
      continue;
    }
    if (c == '"') quoted = !quoted;
    if (!quoted && c == '#') break;
    if (!quoted && c == ';') {
      finish();
    } else {
      current += c;
    }
  }
  finish();
  return found;
}

// Why the generated assembly is not acceptable, or "". Student files may not hold assembly of
// their own: the assembler reads the files .incbin and .include name (they are not in -MD's
// list), and raw system calls (syscall, sysenter, int $0x80) escape the symbol audit. GCC writes
// every asm statement, macros expanded, between "#APP" and "#NO_APP" (the provided code has
// none; an empty asm("" ::: "memory"), a compiler barrier, passes). Section names and asm labels
// reach the assembly verbatim, so a newline or ';' in them can add statements outside "#APP":
// the whole file is searched for those GCC never writes itself.
std::string assembly_problem(const std::string& assembly_file) {
  const std::set<std::string> refused = {".incbin", ".include",  ".macro",  ".irp",     ".irpc",
                                         ".rept",   ".altmacro", "syscall", "sysenter", "int"};
  const auto problem = [](const std::string& statement) {
    return "it contains assembly of its own (\"" + shown_name(statement.substr(0, 80)) +
           "\"): student files may not use asm statements, asm labels or section names that "
           "add assembly (.incbin would read files at compile time, and system calls made "
           "directly escape the rules on forbidden calls)";
  };
  std::ifstream file(assembly_file);
  bool inside = false;
  std::string first_inline;  // shown when nothing is refused by name
  for (std::string line; std::getline(file, line);) {
    if (line == "#APP" || line == "#NO_APP") {
      inside = line == "#APP";
      continue;
    }
    for (const std::string& statement : statements(line)) {
      std::string first = statement.substr(0, statement.find_first_of(" \t"));
      for (char& c : first) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (refused.count(first)) return problem(statement);
      if (inside && first_inline.empty()) first_inline = statement;
    }
  }
  return first_inline.empty() ? "" : problem(first_inline);
}

// The precompiled header, next to its .gch, copied (never linked: the kit's own file must stay
// out of the sandbox's reach whatever happens in the scratch) and readable by the sandbox.
void share_pch(const std::string& header, const std::string& dir) {
  fs::create_directories(dir);
  chmod(dir.c_str(), 0755);  // whatever the umask
  const std::string name = fs::path(header).filename().string();
  install_readable(header, dir + "/" + name);
  install_readable(header + ".gch", dir + "/" + name + ".gch");
}

// A student file's path as one file name: "model/func_impl.cpp" -> "model_func_impl.cpp".
std::string flat_name(std::string file) {
  for (char& c : file) c = c == '/' ? '_' : c;
  return file;
}

// Compiles student file `file` to assembly (object.s), which is checked before it is assembled.
std::vector<std::string> compile_command(const Toolchain& toolchain, const std::string& read_only,
                                         const std::string& file, const std::string& source,
                                         const std::string& object) {
  std::vector<std::string> argv = {toolchain.compiler};
  argv.insert(argv.end(), toolchain.flags.begin(), toolchain.flags.end());
  const auto& optimized = toolchain.optimized_files;
  if (std::find(optimized.begin(), optimized.end(), file) != optimized.end())
    argv.insert(argv.end(), toolchain.optimized_flags.begin(), toolchain.optimized_flags.end());
  for (const std::string& define : toolchain.defines) argv.push_back("-D" + define);
  argv.push_back("-I" + read_only + "/include");
  if (!toolchain.pch.empty()) {
    argv.insert(argv.end(),
                {"-include", read_only + "/pch/" + fs::path(toolchain.pch).filename().string()});
  }
  for (const std::string& dir : toolchain.include_dirs) {
    // The provided headers come from the sandbox's copy; /usr/include is searched anyway (and
    // naming it breaks the standard library's #include_next).
    if (dir == toolchain.dtk_include_dir || dir == "/usr/include") continue;
    argv.insert(argv.end(), {"-isystem", dir});
  }
  // __FILE__ as the student's path ("model/func_impl.cpp"), not this grading's scratch: an
  // assert's message reads as in the student's build, and the object is the same in every
  // grading (the object cache keeps it).
  argv.insert(argv.end(),
              {"-ffile-prefix-map=" + read_only + "/src/=", "-fdiagnostics-color=never",
               "-fmax-errors=10", "-MD", "-MF", object + ".d", "-S", source, "-o", object + ".s"});
  return argv;
}

// Where and how one submission is built. The grader writes only into read-only/ (its own), the
// sandbox only into build/.
struct BuildPlace {
  const Toolchain& toolchain;
  const Sandbox& sandbox;
  const std::string scratch, read_only, src_dir, objects_dir, bin_dir, build_dir;
  const std::vector<std::string>& hidden;
  const Timeouts& timeouts;
  const BuildLimits& limits;
  const ObjectCache& cache;

  BuildPlace(const Toolchain& toolchain, const Sandbox& sandbox, const std::string& scratch,
             const std::vector<std::string>& hidden, const Timeouts& timeouts,
             const BuildLimits& limits, const ObjectCache& cache)
      : toolchain(toolchain),
        sandbox(sandbox),
        scratch(scratch),
        read_only(scratch + "/read-only"),
        src_dir(read_only + "/src/"),
        objects_dir(read_only + "/objects/"),
        bin_dir(read_only + "/bin/"),
        build_dir(scratch + "/build/"),
        hidden(hidden),
        timeouts(timeouts),
        limits(limits),
        cache(cache) {}

  // A tool of the build (compiler, assembler, linker), in the sandbox.
  Outcome tool(std::vector<std::string> argv) const {
    Command command;
    command.argv = std::move(argv);
    command.cwd = build_dir;
    command.timeout_seconds = timeouts.compile_seconds;
    command.address_space_mb = limits.compiler_address_space_mb;  // cc1plus needs more than a test
    command.hidden_paths = hidden;
    return sandbox.run(command);
  }
};

// The directories and each `graded` file's fate: a source to compile (written to src/), a
// prebuilt object (unchanged from the starter or the reference), or missing.
StudentBuild stage(const BuildPlace& place, const std::vector<std::string>& graded,
                   const Submission& submission) {
  const Toolchain& toolchain = place.toolchain;
  for (const std::string& dir : {place.src_dir, place.objects_dir, place.bin_dir}) {
    fs::create_directories(dir);
    chmod(dir.c_str(), 0755);
  }
  place.sandbox.make_directory(place.build_dir);

  StudentBuild build;
  for (const std::string& file : graded) {
    FileBuild entry;
    entry.file = file;
    entry.object = place.build_dir + flat_name(file) + ".o";
    const auto found = submission.files.find(file);
    if (found == submission.files.end()) {
      entry.status = FileBuild::Status::missing;
    } else if (found->second == read_source(toolchain.starter_dir + "/" + file)) {
      entry.status = FileBuild::Status::same_as_starter;
    } else if (found->second == read_source(toolchain.reference_dir + "/" + file)) {
      entry.status = FileBuild::Status::same_as_reference;
      entry.object = place.objects_dir + flat_name(file) + ".reference.o";
      install_readable(toolchain.reference_objects.at(file), entry.object);
    } else {
      fs::path dir = place.src_dir;
      for (const fs::path& part : fs::path(file).parent_path()) {
        fs::create_directory(dir /= part);
        chmod(dir.c_str(), 0755);
      }
      write_file(place.src_dir + file, found->second);
      chmod((place.src_dir + file).c_str(), 0644);
      entry.status = FileBuild::Status::compiled;
    }
    build.files.push_back(entry);
  }
  return build;
}

// A staged student file to compile: its entry, its source as staged and, once compiled, every
// file its compile read (its -MD list).
struct CompileJob {
  FileBuild* entry;
  std::string source;
  std::vector<std::string> dependencies;
};

// One file: compiled to assembly, checked, assembled. Why it cannot be used, or "".
std::string compile_file(const BuildPlace& place, CompileJob& job) {
  const FileBuild& entry = *job.entry;
  const std::string& src_dir = place.src_dir;
  const Outcome compiled = place.tool(compile_command(place.toolchain, place.read_only, entry.file,
                                                      src_dir + entry.file, entry.object));
  if (compiled.timed_out) {
    return "the compiler took longer than " + std::to_string(place.timeouts.compile_seconds) +
           " s\n";
  }
  if (!compiled.ok()) {
    const std::string errors = first_errors(compiled.output, src_dir);
    return errors.empty() ? "the compiler failed: " + compiled.describe() + "\n" : errors;
  }
  std::string deps, problem;  // written in the sandbox: read as an untrusted file
  if (!read_regular_file(entry.object + ".d", kMaxDependencyBytes, deps, problem)) {
    return "the list of the headers it includes cannot be read: it " + problem;
  }
  job.dependencies = dependencies(deps);
  for (const std::string& problem :
       {include_problem(job.dependencies, place.scratch), assembly_problem(entry.object + ".s")}) {
    if (!problem.empty()) return problem;
  }
  const Outcome assembled =
      place.tool({place.toolchain.compiler, "-c", entry.object + ".s", "-o", entry.object});
  return assembled.ok() ? "" : "the assembler failed: " + first_errors(assembled.output, src_dir);
}

// A staged source's object from the cache, placed where the sandbox reads it; false if not kept.
bool reuse_object(const BuildPlace& place, FileBuild& entry, const std::string& source) {
  std::string object;
  if (!place.cache.load(entry.file, source, object)) return false;
  entry.object = place.objects_dir + flat_name(entry.file) + ".cached.o";
  write_file(entry.object, object);
  chmod(entry.object.c_str(), 0644);  // whatever the umask: the sandbox's linker reads it
  return true;
}

// Keeps a file's freshly compiled object, with the provided headers its compile read. The object
// was written in the sandbox: read as untrusted.
void keep_object(const BuildPlace& place, const CompileJob& job) {
  std::string object, problem;
  if (!place.cache.enabled() ||
      !read_regular_file(job.entry->object, kMaxLibraryBytes, object, problem)) {
    return;
  }
  const std::string headers_dir = fs::weakly_canonical(place.read_only + "/include").string() + "/";
  std::vector<std::string> headers;
  for (const std::string& dep : job.dependencies) {
    const std::string path = fs::weakly_canonical(dep).string();
    if (path.rfind(headers_dir, 0) == 0) headers.push_back(path.substr(headers_dir.size()));
  }
  place.cache.save(job.entry->file, job.source, headers, object);
}

// Compiles the staged sources side by side, at most limits.compilers_at_once at a time: on two
// cores, three jobs finish sooner than two jobs and then a third, but each compiler may take
// limits.compiler_address_space_mb, and the sum must stay bounded. A file that cannot be used
// fails. A source compiled before (the object cache) is not compiled again.
void compile_files(const BuildPlace& place, StudentBuild& build) {
  std::vector<CompileJob> to_compile;
  for (FileBuild& entry : build.files) {
    if (entry.status != FileBuild::Status::compiled) continue;
    std::string source = read_source(place.src_dir + entry.file);
    if (!reuse_object(place, entry, source)) to_compile.push_back({&entry, std::move(source), {}});
  }
  if (to_compile.empty()) return;
  // The headers the sandbox compiles against, copied only when something compiles (the
  // precompiled one takes tens of megabytes).
  install_readable(place.toolchain.dtk_include_dir, place.read_only + "/include");
  if (!place.toolchain.pch.empty()) share_pch(place.toolchain.pch, place.read_only + "/pch");
  std::atomic<std::size_t> next{0};
  auto compiler = [&] {
    for (std::size_t k; (k = next++) < to_compile.size();) {
      CompileJob& job = to_compile[k];
      FileBuild& entry = *job.entry;
      try {
        entry.message = compile_file(place, job);
      } catch (const std::exception& error) {  // no process could be started
        entry.message = std::string("dtk-grade could not run the compiler: ") + error.what();
      }
      if (entry.message.empty()) {
        keep_object(place, job);
      } else {
        entry.status = FileBuild::Status::failed;
      }
    }
  };
  std::vector<std::thread> compilers;
  for (int i = 0; i < place.limits.compilers_at_once && i < static_cast<int>(to_compile.size());
       ++i) {
    compilers.emplace_back(compiler);
  }
  for (std::thread& thread : compilers) thread.join();
}

// libdtk_student.so from the student's objects; everything not compiled from the submission
// links the starter's object, the other assignments' student files included, and `provided`
// (weak) after them.
Outcome link_library(const BuildPlace& place, const StudentBuild& build,
                     const std::vector<std::string>& provided) {
  const Toolchain& toolchain = place.toolchain;
  std::vector<std::string> argv = {toolchain.compiler, "-shared", "-o",
                                   place.build_dir + "libdtk_student.so"};
  for (const std::string& file : toolchain.student_files) {
    const auto entry = std::find_if(build.files.begin(), build.files.end(),
                                    [&](const FileBuild& built) { return built.file == file; });
    if (entry != build.files.end() && entry->uses_student_code()) {
      argv.push_back(entry->object);
    } else {
      const std::string starter = place.objects_dir + flat_name(file) + ".starter.o";
      install_readable(toolchain.starter_objects.at(file), starter);
      argv.push_back(starter);
    }
  }
  for (const std::string& object : provided) {
    const std::string copy = place.objects_dir + fs::path(object).filename().string();
    install_readable(object, copy);
    argv.push_back(copy);
  }
  return place.tool(argv);
}

// Links, or, when the student's objects do not link together (several define the same symbol,
// say), fails them all and links the starter's instead; then puts the library and the runner
// where the sandbox may run them but not change them.
void link_submission(const BuildPlace& place, StudentBuild& build,
                     const std::vector<std::string>& provided) {
  Outcome linked = link_library(place, build, provided);
  if (!linked.ok()) {
    for (FileBuild& entry : build.files) {
      if (entry.status != FileBuild::Status::compiled) continue;
      entry.status = FileBuild::Status::failed;
      entry.message =
          "the student files do not link together:\n" + first_errors(linked.output, place.src_dir);
    }
    linked = link_library(place, build, provided);
    if (!linked.ok()) {
      throw std::runtime_error("cannot link the starter's objects:\n" + linked.output);
    }
  }
  // Its own library is read as an untrusted file.
  std::string library, problem;
  if (!read_regular_file(place.build_dir + "libdtk_student.so", kMaxLibraryBytes, library,
                         problem)) {
    throw std::runtime_error("cannot take the linked libdtk_student.so: it " + problem);
  }
  write_file(place.bin_dir + "libdtk_student.so", library);
  chmod((place.bin_dir + "libdtk_student.so").c_str(), 0644);
  build.runner = place.bin_dir + "dtk-grade-runner";
  install_readable(place.toolchain.runner, build.runner);
}

}  // namespace

ObjectCache object_cache(const Toolchain& toolchain, const std::string& dir) {
  if (dir.empty()) return {};
  // The command as this dtk-grade puts it together, its paths left out ("@"), with the files
  // compiled optimized; then the content of what it reads besides the source and the provided
  // headers (the cache checks those it read itself).
  std::string compiler;
  for (const std::string& arg : compile_command(toolchain, "@", "@", "@", "@")) {
    compiler += arg + "\n";
  }
  for (const std::string& file : toolchain.optimized_files) compiler += "optimized " + file + "\n";
  compiler += contents_identity({toolchain.compiler, toolchain.pch, "/var/lib/dpkg/status"});
  return ObjectCache(dir, compiler, toolchain.dtk_include_dir);
}

StudentBuild build_submission(const Toolchain& toolchain, const std::vector<std::string>& graded,
                              const std::vector<std::string>& provided,
                              const Submission& submission, const Sandbox& sandbox,
                              const std::string& scratch, const std::vector<std::string>& hidden,
                              const Timeouts& timeouts, const BuildLimits& limits,
                              const ObjectCache& cache) {
  const BuildPlace place(toolchain, sandbox, scratch, hidden, timeouts, limits, cache);
  StudentBuild build = stage(place, graded, submission);
  compile_files(place, build);
  link_submission(place, build, provided);
  return build;
}

}  // namespace dtk::grade
