#include "derive.hpp"

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "check_context.hpp"
#include "launch_file.hpp"

namespace dtk::grade {

namespace {

std::string file_text(const std::string& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

int fail(const std::string& message) {
  std::fprintf(stderr, "dtk-grade-runner --derive: %s\n", message.c_str());
  return 2;
}

}  // namespace

int derive_main(int argc, char** argv) {
  std::string dir, configs_dir;
  std::vector<std::string> tests;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i == 2) {
      dir = arg;
    } else if (arg == "--configs" && i + 1 < argc) {
      configs_dir = argv[++i];
    } else {
      tests.push_back(arg);
    }
  }
  std::string key = file_text(dir + "/key");
  if (!key.empty() && key.back() == '\n') key.pop_back();
  std::uint64_t seed = 0;
  if (key.size() != 32 || std::sscanf(file_text(dir + "/seed").c_str(), "%lu", &seed) != 1)
    return fail("cannot read " + dir + "/key and " + dir + "/seed");

  std::vector<RankOutput> inputs;
  std::vector<std::unique_ptr<RecordWriter>> writers;
  for (int r = 0;; ++r) {
    const std::string in = dir + "/rank" + std::to_string(r) + ".in";
    if (!std::ifstream(in)) break;
    inputs.push_back(parse_rank_output(file_text(in), key));
    writers.push_back(std::make_unique<RecordWriter>(rank_records_path(dir, r), key));
  }
  for (const std::string& id : tests) {
    TestCase test;
    try {
      test = parse_test_id(id);
    } catch (const std::exception& error) {
      return fail(error.what());
    }
    const DeriveFunction derive = derive_function(test.function);
    if (derive == nullptr || test.ranks() > static_cast<int>(inputs.size()))
      return fail("nothing to derive for " + id);
    std::vector<TestOutput> ranks;
    std::vector<RecordWriter*> out;
    for (int r = 0; r < test.ranks(); ++r) {
      const auto found = inputs[r].find(id);
      ranks.push_back(found == inputs[r].end() ? TestOutput{} : found->second);
      out.push_back(writers[r].get());
      out.back()->begin(id);
    }
    DeriveContext context{test, seed, configs_dir, ranks, out};
    try {
      derive(context);
    } catch (const std::exception& error) {
      for (RecordWriter* writer : out) writer->error(error.what());
    }
    for (RecordWriter* writer : out) writer->end(id);
  }
  return 0;
}

}  // namespace dtk::grade
