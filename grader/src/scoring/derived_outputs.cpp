#include "scoring/derived_outputs.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

#include "files.hpp"
#include "keys.hpp"
#include "launch_file.hpp"

namespace dtk::grade {

namespace {

constexpr std::size_t kMaxDerivedFile = 32 << 20;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream file(path);
  file << text;
  if (!file.flush()) throw std::runtime_error("cannot write " + path);
}

}  // namespace

void add_derived_outputs(const Launcher& reference, std::map<std::string, TestRun>& runs,
                         const std::string& dir) {
  std::vector<std::string> ids;
  int ranks = 0;
  for (const auto& [id, run] : runs) {
    const TestCase test = parse_test_id(id);
    if (!test.check().derived || !run.finished) continue;
    ids.push_back(id);
    ranks = std::max(ranks, test.ranks());
  }
  if (ids.empty()) return;
  std::filesystem::create_directories(dir);
  chmod(dir.c_str(), 0700);
  const std::string key = random_key_hex();
  write_text(dir + "/key", key + "\n");
  write_text(dir + "/seed", std::to_string(reference.seed) + "\n");
  for (int r = 0; r < ranks; ++r) {
    RecordWriter in(dir + "/rank" + std::to_string(r) + ".in", key);
    for (const std::string& id : ids) {
      const TestRun& run = runs.at(id);
      if (r >= static_cast<int>(run.ranks.size())) continue;
      in.begin(id);
      in.outputs_of(run.ranks[r]);
      in.end(id);
    }
  }
  Command command;
  command.argv = {reference.runner, "--derive", dir, "--configs", reference.configs_dir};
  command.argv.insert(command.argv.end(), ids.begin(), ids.end());
  command.cwd = dir;
  command.sandboxed = false;
  command.timeout_seconds = reference.timeouts.group_seconds;
  command.env = {"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1"};
  const Outcome outcome = reference.sandbox->run(command);

  for (const std::string& id : ids) {
    TestRun& run = runs.at(id);
    for (std::size_t r = 0; r < run.ranks.size(); ++r) {
      std::string text, problem;
      const std::string path = rank_records_path(dir, r);
      RankOutput derived;
      if (read_regular_file(path, kMaxDerivedFile, text, problem))
        derived = parse_rank_output(text, key);
      const auto found = derived.find(id);
      if (!outcome.ok() || found == derived.end() || !found->second.complete) {
        run.finished = false;
        run.problem = "the grader could not judge this test's outputs (its derivation " +
                      (outcome.ok() ? std::string("wrote nothing") : outcome.describe()) +
                      "): a problem of the grading kit. " + outcome.output;
        break;
      }
      TestOutput& output = run.ranks[r];
      const TestOutput& more = found->second;
      output.values.insert(output.values.end(), more.values.begin(), more.values.end());
      output.outcomes.insert(output.outcomes.end(), more.outcomes.begin(), more.outcomes.end());
      output.errors.insert(output.errors.end(), more.errors.begin(), more.errors.end());
    }
  }
}

}  // namespace dtk::grade
