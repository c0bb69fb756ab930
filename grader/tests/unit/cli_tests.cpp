// dtk-grade's command line: --parts' list of part numbers, and what it may go with.
#include <catch2/catch.hpp>

#include <initializer_list>
#include <string>
#include <vector>

#include "cli.hpp"

using namespace dtk::grade;
using Catch::Matchers::Contains;

namespace {

// parse_command_line on "dtk-grade ARGS...".
std::optional<Options> parse(std::initializer_list<std::string> args) {
  std::vector<std::string> words = {"dtk-grade"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("--parts takes part numbers separated by commas", "[cli]") {
  CHECK(parse_part_list("10") == std::set<int>{10});
  CHECK(parse_part_list("2,3,6") == std::set<int>{2, 3, 6});
  CHECK(parse_part_list("6,2,2") == std::set<int>{2, 6});
  for (const char* bad : {"", ",", "2,", ",2", "2,,3", "two", "2 3", "-1", "2.5", "1000"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_part_list(bad), UsageError);
  }
  CHECK_THROWS_WITH(parse_part_list("2;3"),
                    Contains("part numbers separated by commas") && Contains("not \"2;3\""));
}

TEST_CASE("--parts grades one submission: not a batch, not a bonus timed alone", "[cli]") {
  const std::optional<Options> options = parse({"handin.tar", "--parts", "10,12"});
  REQUIRE(options);
  CHECK(options->parts == std::set<int>{10, 12});
  CHECK(parse({"handin.tar"})->parts.empty());
  CHECK_THROWS_WITH(parse({"--parts"}), Contains("--parts needs a value"));
  CHECK_THROWS_WITH(parse({"--batch", "class", "--parts", "7"}), Contains("--parts"));
  CHECK_THROWS_WITH(parse({"handin.tar", "--bonus-only", "--parts", "7"}),
                    Contains("not with --parts"));
}
