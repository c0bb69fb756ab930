#include "similarity.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "submission.hpp"
#include "text.hpp"

namespace dtk::grade {

namespace fs = std::filesystem;

namespace {

// What `argv` prints on stdout, run in `cwd`; throws std::runtime_error when it cannot run.
std::string output_of(const std::vector<std::string>& argv, const std::string& cwd) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) throw std::runtime_error("cannot run " + argv[0] + ": no pipe");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot run " + argv[0] + ": fork failed");
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    if (chdir(cwd.c_str()) != 0) _exit(126);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  std::string output;
  char buffer[65536];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) output.append(buffer, n);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    throw std::runtime_error(argv[0] +
                             " is not installed: apt-get install similarity-tester (Debian's "
                             "package of Dick Grune's similarity tester)");
  }
  return output;
}

std::string whitespace_free(const std::string& line) {
  std::string kept;
  for (char c : line) {
    if (c != ' ' && c != '\t' && c != '\r') kept += c;
  }
  return kept;
}

// `text` without the lines that also appear in `starter` (whitespace aside; blank lines kept,
// so that line numbers stay close).
std::string without_starter_lines(const std::string& text, const std::set<std::string>& starter) {
  std::istringstream lines(text);
  std::string kept;
  for (std::string line; std::getline(lines, line);) {
    const std::string bare = whitespace_free(line);
    kept += (!bare.empty() && starter.count(bare) ? "" : line) + "\n";
  }
  return kept;
}

std::set<std::string> lines_of(const std::string& path) {
  std::ifstream file(path);
  std::set<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.insert(whitespace_free(line));
  lines.erase("");
  return lines;
}

std::string flat(std::string file) {
  std::replace(file.begin(), file.end(), '/', '_');
  return file;
}

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

// The page of one pair: sim's matching runs side by side, then both files whole.
void write_view(const std::string& dir, const SimilarPair& pair, const std::string& path) {
  const std::string a = pair.a + ".cpp", b = pair.b + ".cpp";
  const std::string runs = output_of({"sim_c++", "-w", "180", a, b}, dir);
  std::ofstream page(path, std::ios::trunc);
  page << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>"
       << shown_html(pair.a) << " and " << shown_html(pair.b)
       << "</title><style>body{font-family:sans-serif;margin:1em}"
       << "pre{font-size:12px;white-space:pre;overflow:auto}.two{display:flex;gap:1em}"
       << ".two>div{flex:1;min-width:0}</style></head><body>\n<h1>" << shown_html(pair.file) << ": "
       << shown_html(pair.a) << " and " << shown_html(pair.b) << ", " << pair.percent << " %</h1>\n"
       << "<p>The starter's lines are left out of both. Below, sim_c++'s runs of matching "
          "tokens (identifiers, layout and comments aside), then both files.</p>\n<pre>"
       << shown_html(runs) << "</pre>\n<div class='two'><div><h2>" << shown_html(pair.a)
       << "</h2><pre>" << shown_html(read_text(dir + "/" + a)) << "</pre></div><div><h2>"
       << shown_html(pair.b) << "</h2><pre>" << shown_html(read_text(dir + "/" + b))
       << "</pre></div></div></body></html>\n";
}

}  // namespace

std::vector<SimilarPair> find_similar_pairs(const std::vector<HandIn>& hand_ins,
                                            const std::vector<std::string>& files,
                                            const std::string& starter_dir, const std::string& out,
                                            std::size_t top) {
  std::map<std::string, Submission> submissions;
  for (const HandIn& hand_in : hand_ins)
    submissions[hand_in.student] = read_submission(hand_in.path, files);
  std::vector<SimilarPair> listed;
  const std::regex consists(R"(^(.+)\.cpp consists for (\d+) % of (.+)\.cpp material$)");
  for (const std::string& file : files) {
    const std::string dir = out + "/similarity/" + flat(file);
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::set<std::string> starter = lines_of(starter_dir + "/" + file);
    std::vector<std::string> argv = {"sim_c++", "-p", "-e", "-s"};
    for (const auto& [student, submission] : submissions) {
      const auto found = submission.files.find(file);
      if (found == submission.files.end()) continue;
      std::ofstream(dir + "/" + student + ".cpp") << without_starter_lines(found->second, starter);
      argv.push_back(student + ".cpp");
    }
    if (argv.size() < 6) continue;  // fewer than two hand-ins hold this file
    std::map<std::pair<std::string, std::string>, int> percent;  // (a, b), a < b
    std::istringstream lines(output_of(argv, dir));
    for (std::string line; std::getline(lines, line);) {
      std::smatch match;
      if (!std::regex_match(line, match, consists)) continue;
      std::string a = match[1].str(), b = match[3].str();
      if (b < a) std::swap(a, b);
      int& best = percent[{a, b}];
      best = std::max(best, std::stoi(match[2].str()));
    }
    std::vector<SimilarPair> pairs;
    for (const auto& [students, value] : percent)
      pairs.push_back({file, students.first, students.second, value, ""});
    std::stable_sort(pairs.begin(), pairs.end(), [](const SimilarPair& x, const SimilarPair& y) {
      return x.percent > y.percent;
    });
    if (pairs.size() > top) pairs.resize(top);
    for (SimilarPair& pair : pairs) {
      pair.view = "similarity/" + flat(file) + "/" + pair.a + "--" + pair.b + ".html";
      write_view(dir, pair, out + "/" + pair.view);
      listed.push_back(pair);
    }
  }
  return listed;
}

}  // namespace dtk::grade
