#include "class/similarity.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "compile/submission.hpp"
#include "files.hpp"
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

// `text` as a <pre> block. HTML drops a newline right after <pre>: one is added, so that a file
// beginning with a blank line (its first line was the starter's) is shown whole.
std::string pre_block(const std::string& text) { return "<pre>\n" + shown_html(text) + "</pre>"; }

// The page of one pair, made of the files `a` and `b` in `dir`: sim's matching runs side by side
// (in which the generated file names stand for the students), then both files whole.
void write_view(const std::string& dir, const SimilarPair& pair, const std::string& a,
                const std::string& b, const std::string& path) {
  const std::string runs = output_of({"sim_c++", "-w", "180", a, b}, dir);
  std::string page =
      "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
      "<meta name='viewport' content='width=device-width, initial-scale=1'><title>" +
      shown_html(pair.a) + " and " + shown_html(pair.b) +
      "</title><style>body{font-family:sans-serif;margin:1em}"
      "pre{font-size:12px;white-space:pre;overflow:auto}.two{display:flex;flex-wrap:wrap;gap:1em}"
      ".two>div{flex:1 1 30em;min-width:0}</style></head><body>\n<h1>" +
      shown_html(pair.file) + ": " + shown_html(pair.a) + " and " + shown_html(pair.b) + ", " +
      std::to_string(pair.percent) +
      " %</h1>\n<p>The starter's lines are left out of both. "
      "Below, sim_c++'s runs of matching tokens (identifiers, layout and comments aside; " +
      shown_html(a) + " is " + shown_html(pair.a) + "'s file, " + shown_html(b) + " " +
      shown_html(pair.b) + "'s), then both files.</p>\n" + pre_block(runs) +
      "\n<div class='two'><div><h2>" + shown_html(pair.a) + "</h2>" +
      pre_block(read_text(dir + "/" + a)) + "</div><div><h2>" + shown_html(pair.b) + "</h2>" +
      pre_block(read_text(dir + "/" + b)) + "</div></div></body></html>\n";
  write_file(path, page, 0600);  // the course staff's only, like the whole batch
}

}  // namespace

std::vector<SimilarPair> find_similar_pairs(const std::vector<HandIn>& hand_ins,
                                            const std::vector<std::string>& files,
                                            const std::string& starter_dir, const std::string& out,
                                            std::size_t top) {
  // sim_c++ is given generated file names, h<index>.cpp: a student named "-o" would be an
  // option of its command line, and names go into the pages' file names.
  std::map<std::string, Submission> submissions;  // by generated name
  std::map<std::string, std::string> students;    // generated name -> student
  for (std::size_t i = 0; i < hand_ins.size(); ++i) {
    const std::string name = "h" + std::to_string(i);
    submissions[name] = read_submission(hand_ins[i].path, files);
    students[name] = hand_ins[i].student;
  }
  std::vector<SimilarPair> listed;
  const std::regex consists(R"(^(h\d+)\.cpp consists for (\d+) % of (h\d+)\.cpp material$)");
  for (const std::string& file : files) {
    const std::string dir = out + "/similarity/" + flat(file);
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::set<std::string> starter = lines_of(starter_dir + "/" + file);
    std::vector<std::string> argv = {"sim_c++", "-p", "-e", "-s"};
    for (const auto& [name, submission] : submissions) {
      const auto found = submission.files.find(file);
      if (found == submission.files.end()) continue;
      write_file(dir + "/" + name + ".cpp", without_starter_lines(found->second, starter), 0600);
      argv.push_back(name + ".cpp");
    }
    if (argv.size() < 6) continue;  // fewer than two hand-ins hold this file
    // (a, b) by generated name, students in order -> the larger percentage
    std::map<std::pair<std::string, std::string>, int> percent;
    std::istringstream lines(output_of(argv, dir));
    for (std::string line; std::getline(lines, line);) {
      std::smatch match;
      if (!std::regex_match(line, match, consists)) continue;
      std::string a = match[1].str(), b = match[3].str();
      if (!students.count(a) || !students.count(b)) continue;
      if (students[b] < students[a]) std::swap(a, b);
      int& best = percent[{a, b}];
      best = std::max(best, std::stoi(match[2].str()));
    }
    std::vector<std::pair<std::pair<std::string, std::string>, int>> ranked(percent.begin(),
                                                                            percent.end());
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& x, const auto& y) { return x.second > y.second; });
    if (ranked.size() > top) ranked.resize(top);
    for (const auto& [names, value] : ranked) {
      const auto& [a, b] = names;
      SimilarPair pair{file, students[a], students[b], value,
                       "similarity/" + flat(file) + "/" + a + "--" + b + ".html"};
      write_view(dir, pair, a + ".cpp", b + ".cpp", out + "/" + pair.view);
      listed.push_back(pair);
    }
  }
  return listed;
}

}  // namespace dtk::grade
