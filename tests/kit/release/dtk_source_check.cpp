// dtk_source_check: keeps the student tree (starter/) and the reference (solutions/) one source,
// and the student bundle free of reference code. A kit tool, never shipped to students.
//
//   dtk_source_check single-source STARTER_DIR SOLUTIONS_DIR FILE...
//       For each student FILE (a path relative to both trees), the two versions must agree on
//       everything but the bodies students write: the #include lines, the signature of every
//       function defined at namespace scope outside anonymous namespaces (students and the
//       reference may add helpers in anonymous namespaces), and the provided block from the
//       "Do not edit below this line" marker to the end of the file, byte for byte.
//
//   dtk_source_check no-solution-code STARTER_DIR SOLUTIONS_DIR BUNDLE_DIR FILE...
//       No text file under BUNDLE_DIR may contain the body of a reference function (helpers
//       included) that differs from the starter's stub, compared token by token and with all
//       whitespace removed, so neither reformatting nor other comments hide a copy.
//
//   dtk_source_check list FILE
//       Prints the directives and functions the parser finds in FILE (to debug this tool).
//
// Exit status: 0 all agree, 1 a check failed (each difference is printed), 2 usage or I/O error.
// The parser is deliberately small: it understands comments, string and character literals,
// preprocessor lines and braces, which is all the student files need.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

constexpr const char* kMarker = "Do not edit below this line";
// A reference body shorter than this (e.g. `return x;`) is too common to mean a leak.
constexpr std::size_t kMinBodyTokens = 12;

struct Token {
  std::string text;
  int line;  // 1-based
};

// A C++ source file cut into tokens (comments dropped; a string or character literal is one
// token; every punctuation character is a token of its own) and preprocessor directives.
struct Lexed {
  std::vector<Token> tokens;
  std::vector<Token> directives;  // whole lines, whitespace collapsed, e.g. "#include <x>"
};

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

Lexed lex(const std::string& src) {
  Lexed out;
  int line = 1;
  bool line_start = true;  // only whitespace so far on this line
  std::size_t i = 0;
  const std::size_t n = src.size();
  auto newline = [&] {
    ++line;
    line_start = true;
  };
  while (i < n) {
    const char c = src[i];
    if (c == '\n') {
      newline();
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (src.compare(i, 2, "//") == 0) {
      while (i < n && src[i] != '\n') ++i;
    } else if (src.compare(i, 2, "/*") == 0) {
      const std::size_t end = src.find("*/", i + 2);
      const std::size_t stop = end == std::string::npos ? n : end + 2;
      line += static_cast<int>(std::count(src.begin() + i, src.begin() + stop, '\n'));
      i = stop;
    } else if (c == '#' && line_start) {
      // A directive runs to the end of the line, continued by a trailing backslash.
      std::string text;
      const int first_line = line;
      while (i < n && src[i] != '\n') {
        if (src[i] == '\\' && i + 1 < n && src[i + 1] == '\n') {
          text += ' ';
          i += 2;
          ++line;
        } else {
          text += src[i++];
        }
      }
      std::istringstream words(text);
      std::string word, collapsed;
      while (words >> word) collapsed += (collapsed.empty() ? "" : " ") + word;
      out.directives.push_back({collapsed, first_line});
    } else if (c == '"' || c == '\'') {
      // A string or character literal (a digit separator, as in 1'000, is part of its number).
      std::size_t j = i + 1;
      while (j < n && src[j] != c && src[j] != '\n') j += src[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, n);
      out.tokens.push_back({src.substr(i, j - i), line});
      line_start = false;
      i = j;
    } else if (is_word_char(c)) {
      std::size_t j = i;
      const bool number = std::isdigit(static_cast<unsigned char>(c));
      while (j < n && (is_word_char(src[j]) || (number && src[j] == '\''))) ++j;
      out.tokens.push_back({src.substr(i, j - i), line});
      line_start = false;
      i = j;
    } else {
      out.tokens.push_back({std::string(1, c), line});
      line_start = false;
      ++i;
    }
  }
  return out;
}

std::string join(const std::vector<Token>& tokens, std::size_t begin, std::size_t end) {
  std::string text;
  for (std::size_t k = begin; k < end; ++k) {
    const std::string& t = tokens[k].text;
    // Spaces only where they help reading: "template<class T> xt::xtensor<T, 2> f(int& x)".
    const char last = text.empty() ? ' ' : text.back();
    if (is_word_char(t.front()) &&
        (is_word_char(last) || std::string(">&*)").find(last) != std::string::npos)) {
      text += ' ';
    }
    text += t;
    if (t == ",") text += ' ';
  }
  return text;
}

struct Function {
  std::string signature;  // tokens joined, e.g. "ParallelInfo get_info(const Communicator& ..."
  std::string body;       // tokens of the body joined without spaces where possible
  std::size_t body_tokens;
  bool anonymous;  // defined inside an anonymous namespace (a helper)
  int line;
};

// Index of the token closing the bracket opened at tokens[open].
std::size_t matching(const std::vector<Token>& tokens, std::size_t open) {
  const std::string o = tokens[open].text, c = o == "{" ? "}" : o == "(" ? ")" : "]";
  int depth = 0;
  for (std::size_t k = open; k < tokens.size(); ++k) {
    if (tokens[k].text == o) ++depth;
    if (tokens[k].text == c && --depth == 0) return k;
  }
  return tokens.size();
}

// Whether the tokens [begin, end) before a '{' at namespace scope declare a function: a '('
// and no '=' outside parentheses (that would be a variable, perhaps holding a lambda).
bool declares_function(const std::vector<Token>& tokens, std::size_t begin, std::size_t end) {
  if (begin == end) return false;
  const std::string& first = tokens[begin].text;
  if (first == "class" || first == "struct" || first == "union" || first == "enum") return false;
  bool paren = false;
  int depth = 0;
  for (std::size_t k = begin; k < end; ++k) {
    const std::string& t = tokens[k].text;
    if (t == "(") paren = true, ++depth;
    if (t == ")") --depth;
    if (t == "=" && depth == 0 && !(k > begin && tokens[k - 1].text == "operator")) return false;
  }
  return paren;
}

// Every function defined at namespace scope in tokens (stopping before line `stop_line`).
std::vector<Function> functions(const std::vector<Token>& all, int stop_line) {
  std::vector<Token> tokens;
  for (const Token& t : all) {
    if (t.line < stop_line) tokens.push_back(t);
  }
  std::vector<bool> scopes;  // open namespaces: true for an anonymous one
  std::vector<Function> found;
  std::size_t statement = 0;  // where the current declaration began
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    const std::string& t = tokens[k].text;
    if (t == ";") {
      statement = k + 1;
    } else if (t == "}") {
      if (!scopes.empty()) scopes.pop_back();
      statement = k + 1;
    } else if (t == "{") {
      if (tokens[statement].text == "namespace" ||
          (tokens[statement].text == "inline" && k > statement + 1 &&
           tokens[statement + 1].text == "namespace")) {
        scopes.push_back(tokens[k - 1].text == "namespace");
        statement = k + 1;
        continue;
      }
      const std::size_t close = matching(tokens, k);
      if (declares_function(tokens, statement, k)) {
        const bool anonymous = std::find(scopes.begin(), scopes.end(), true) != scopes.end();
        found.push_back({join(tokens, statement, k), join(tokens, k + 1, close), close - k - 1,
                         anonymous, tokens[statement].line});
        statement = close + 1;
      }
      k = close;  // a class, enum or initializer: skip it; the ';' after it ends the statement
    }
  }
  return found;
}

struct SourceFile {
  std::string path;  // as shown in messages, e.g. "starter/model/func_impl.cpp"
  std::vector<std::string> lines;
  Lexed lexed;
  int marker_line = 0;  // 1-based line of the "Do not edit below" marker, 0 if none
};

bool read_text(const fs::path& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

SourceFile load(const fs::path& path, const std::string& shown) {
  SourceFile file;
  file.path = shown;
  std::string text;
  if (!read_text(path, text)) {
    std::cerr << "dtk_source_check: cannot read " << path.string() << "\n";
    std::exit(2);
  }
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    file.lines.push_back(line);
    if (file.marker_line == 0 && line.find(kMarker) != std::string::npos) {
      file.marker_line = static_cast<int>(file.lines.size());
    }
  }
  file.lexed = lex(text);
  return file;
}

int end_of_code(const SourceFile& f) {
  return f.marker_line ? f.marker_line : static_cast<int>(f.lines.size()) + 1;
}

// Appends "  only in <a>: x" lines for the entries of `a` missing from `b` (as multisets).
void only_in(const std::string& name, std::vector<std::string> a, std::vector<std::string> b,
             const std::string& hint, std::ostringstream& report) {
  for (const std::string& entry : a) {
    const auto it = std::find(b.begin(), b.end(), entry);
    if (it != b.end()) {
      b.erase(it);
    } else {
      report << "    only in " << name << ": " << entry << hint << "\n";
    }
  }
}

// "get_info" for "ParallelInfo get_info(const Communicator& comm, ...)".
std::string function_name(const std::string& signature) {
  std::size_t end = signature.find('(');
  while (end > 0 && signature[end - 1] == ' ') --end;
  std::size_t begin = end;
  while (begin > 0 && is_word_char(signature[begin - 1])) --begin;
  return signature.substr(begin, end - begin);
}

// The single-source check of one student file; returns the differences found ("" if none).
std::string compare(const SourceFile& starter, const SourceFile& solution, std::string& summary) {
  std::ostringstream report;
  const std::string s_name = "starter", r_name = "solutions";

  std::vector<std::string> s_includes, r_includes;
  for (const Token& d : starter.lexed.directives) {
    if (d.line < end_of_code(starter) && d.text.rfind("#include", 0) == 0)
      s_includes.push_back(d.text);
  }
  for (const Token& d : solution.lexed.directives) {
    if (d.line < end_of_code(solution) && d.text.rfind("#include", 0) == 0)
      r_includes.push_back(d.text);
  }
  if (s_includes != r_includes) {
    report << "  the #include lines differ:\n";
    only_in(s_name, s_includes, r_includes, "", report);
    only_in(r_name, r_includes, s_includes, "", report);
    if (std::is_permutation(s_includes.begin(), s_includes.end(), r_includes.begin(),
                            r_includes.end())) {
      report << "    (the same lines, in a different order)\n";
    }
  }

  std::vector<std::string> s_sigs, r_sigs;
  for (const Function& f : functions(starter.lexed.tokens, end_of_code(starter))) {
    if (!f.anonymous) s_sigs.push_back(f.signature);
  }
  for (const Function& f : functions(solution.lexed.tokens, end_of_code(solution))) {
    if (!f.anonymous) r_sigs.push_back(f.signature);
  }
  std::vector<std::string> s_sorted = s_sigs, r_sorted = r_sigs;
  std::sort(s_sorted.begin(), s_sorted.end());
  std::sort(r_sorted.begin(), r_sorted.end());
  if (s_sorted != r_sorted) {
    report << "  the function signatures differ:\n";
    only_in(s_name, s_sigs, r_sigs, "", report);
    // A reference function whose name the starter lacks is most likely a helper.
    std::vector<std::string> names;
    std::transform(s_sigs.begin(), s_sigs.end(), std::back_inserter(names), function_name);
    for (const std::string& extra : r_sigs) {
      if (std::find(s_sigs.begin(), s_sigs.end(), extra) != s_sigs.end()) continue;
      const bool helper =
          std::find(names.begin(), names.end(), function_name(extra)) == names.end();
      report << "    only in " << r_name << ": " << extra
             << (helper ? "\n      (a helper? define it inside `namespace { ... }`)" : "") << "\n";
    }
  }

  if (!starter.marker_line != !solution.marker_line) {
    const SourceFile& without = starter.marker_line ? solution : starter;
    report << "  the \"" << kMarker << "\" marker is missing from " << without.path << "\n";
  } else if (starter.marker_line) {
    const std::size_t s0 = starter.marker_line - 1, r0 = solution.marker_line - 1;
    const std::size_t s_len = starter.lines.size() - s0, r_len = solution.lines.size() - r0;
    for (std::size_t k = 0; k < std::max(s_len, r_len); ++k) {
      const bool s_has = k < s_len, r_has = k < r_len;
      if (s_has && r_has && starter.lines[s0 + k] == solution.lines[r0 + k]) continue;
      report << "  the provided block (from the \"" << kMarker << "\" marker on) differs:\n"
             << "    " << s_name << " line " << s0 + k + 1 << ": "
             << (s_has ? starter.lines[s0 + k] : "(end of file)") << "\n"
             << "    " << r_name << " line " << r0 + k + 1 << ": "
             << (r_has ? solution.lines[r0 + k] : "(end of file)") << "\n";
      break;
    }
  }
  const auto count = [](std::size_t n, const std::string& what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  };
  summary = count(s_includes.size(), "#include line") + ", " +
            count(s_sigs.size(), "function signature") +
            (starter.marker_line
                 ? " and the provided block (" +
                       count(starter.lines.size() - starter.marker_line + 1, "line") + ") agree"
                 : " agree (no provided block)");
  return report.str();
}

int single_source(const fs::path& starter_dir, const fs::path& solutions_dir,
                  const std::vector<std::string>& files) {
  int failures = 0;
  for (const std::string& file : files) {
    const SourceFile starter = load(starter_dir / file, "starter/" + file);
    const SourceFile solution = load(solutions_dir / file, "solutions/" + file);
    std::string summary;
    const std::string differences = compare(starter, solution, summary);
    if (differences.empty()) {
      std::cout << "ok: " << file << ": " << summary << "\n";
    } else {
      ++failures;
      std::cout << "DRIFT: starter/" << file << " and solutions/" << file
                << " must differ only in the bodies students write, but:\n"
                << differences;
    }
  }
  if (failures) {
    std::cout << failures << " of " << files.size()
              << " student files drifted: change starter/ and solutions/ together.\n";
  }
  return failures ? 1 : 0;
}

// Two views of a text file in which to look for a reference body: its C++ tokens run together
// (comments dropped: a copy with other comments still matches) and all its text with the
// whitespace removed. The lexer is safe on any text: literals end at the end of a line.
std::vector<std::string> haystacks(const std::string& text) {
  std::string tokens, squeezed;
  for (const Token& t : lex(text).tokens) tokens += t.text;
  std::copy_if(text.begin(), text.end(), std::back_inserter(squeezed),
               [](char c) { return !std::isspace(static_cast<unsigned char>(c)); });
  return {tokens, squeezed};
}

int no_solution_code(const fs::path& starter_dir, const fs::path& solutions_dir,
                     const fs::path& bundle_dir, const std::vector<std::string>& files) {
  struct Body {
    std::string where, text;
  };
  std::vector<Body> bodies;
  for (const std::string& file : files) {
    const SourceFile starter = load(starter_dir / file, "starter/" + file);
    const SourceFile solution = load(solutions_dir / file, "solutions/" + file);
    std::map<std::string, std::string> stubs;
    for (const Function& f : functions(starter.lexed.tokens, end_of_code(starter))) {
      stubs[f.signature] = f.body;
    }
    for (const Function& f : functions(solution.lexed.tokens, end_of_code(solution))) {
      const auto stub = stubs.find(f.signature);
      if (stub != stubs.end() && stub->second == f.body) continue;  // still the stub
      if (f.body_tokens < kMinBodyTokens) continue;
      std::string text;
      std::copy_if(f.body.begin(), f.body.end(), std::back_inserter(text),
                   [](char c) { return !std::isspace(static_cast<unsigned char>(c)); });
      bodies.push_back({"solutions/" + file + ":" + std::to_string(f.line), text});
    }
  }
  int leaks = 0;
  std::size_t scanned = 0;
  for (const auto& entry : fs::recursive_directory_iterator(bundle_dir)) {
    if (!entry.is_regular_file()) continue;
    std::string text;
    if (!read_text(entry.path(), text) || text.find('\0') != std::string::npos) continue;
    ++scanned;
    const std::vector<std::string> views = haystacks(text);
    for (const Body& body : bodies) {
      const bool found = std::any_of(views.begin(), views.end(), [&](const std::string& view) {
        return view.find(body.text) != std::string::npos;
      });
      if (found) {
        ++leaks;
        std::cout << "LEAK: " << fs::relative(entry.path(), bundle_dir).string()
                  << " contains the body of the reference function at " << body.where << "\n";
      }
    }
  }
  if (leaks) return 1;
  std::cout << "ok: none of the " << bodies.size() << " reference function bodies appears in the "
            << scanned << " text files of " << bundle_dir.string() << "\n";
  return 0;
}

// Prints what the parser finds in one file: a debugging aid for whoever changes this tool.
int list(const fs::path& path) {
  const SourceFile file = load(path, path.string());
  for (const Token& d : file.lexed.directives)
    std::cout << "directive " << d.line << ": " << d.text << "\n";
  for (const Function& f : functions(file.lexed.tokens, end_of_code(file))) {
    std::cout << (f.anonymous ? "helper " : "function ") << f.line << ": " << f.signature << "  ["
              << f.body_tokens << " body tokens]\n";
  }
  std::cout << "marker line: " << file.marker_line << "\n";
  return 0;
}

int usage() {
  std::cerr << "usage: dtk_source_check single-source STARTER_DIR SOLUTIONS_DIR FILE...\n"
               "       dtk_source_check no-solution-code STARTER_DIR SOLUTIONS_DIR BUNDLE_DIR "
               "FILE...\n"
               "       dtk_source_check list FILE\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 4 && args[0] == "single-source") {
    return single_source(args[1], args[2], {args.begin() + 3, args.end()});
  }
  if (args.size() >= 5 && args[0] == "no-solution-code") {
    return no_solution_code(args[1], args[2], args[3], {args.begin() + 4, args.end()});
  }
  if (args.size() == 2 && args[0] == "list") return list(args[1]);
  return usage();
}
