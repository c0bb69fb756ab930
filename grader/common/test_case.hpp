// A hidden test case: one student function, checked on one configuration.
//
// The manifest names each case by the function it checks and a short case text; together they
// form the test's id, e.g. "naive_collect_forward_input mp=4 dp=2 float". The grader passes ids
// to the runner, which parses them back, so this file is shared by both.
//
// Case texts, by the kind of argument the function takes:
//   layout  "mp=M dp=D [float|double]": the (mp, dp) grid and the value type (get_info has none)
//   config  a config name from grader/configs ("gpt2_small"), "random llama" / "random gpt2"
//           (a config of fixed structure whose sizes are drawn from the seed; add a tag,
//           "random gpt2 b", for a second one), or a broken config the function must refuse
//           with std::runtime_error: "missing file", "malformed JSON", "missing key"
//   budget  a training budget in FLOPs ("1.23e22"), or "random" ("random b", ...)
//   buffer  "p=P count=N float|double|int32 [sum|min|max]": a collective of your own on P ranks
//           (assignment 2, Part 7); N counts the elements of each rank's src for all-reduce and
//           of one block (what one rank sends another) for the others; the op is given exactly
//           for the functions that reduce
//           "speed p=P bytes=B repetitions=N": times the function against its MPI counterpart
//           (CheckInfo::timed_against) on B bytes of floats, summed; the speed bonus's
//           measurement, planned by the grader from the manifest's speed_bonus
//   pipeline "p=P m=M [layers=L [costs=PROFILE]] [gpipe|1f1b] [float|double] [width=W]"
//           (assignment 2, Part 8): P stages, M micro-batches, L layers to partition and the
//           profile of their costs (random, heavy-ends, dominant-first or zero-layers: the
//           structure, fixed by the case; the seed draws the values), the schedule, the value
//           type and the activation width; the run_pipeline_schedule checks run on P ranks
//   layout   with "pp=P" too for get_pipeline_info: the (mp, dp, pp) grid of mp * dp * pp ranks
//   zero    "psi=7.5e9 dp=64 [k=12]" or "random [tag]" (9.1: Ψ, N_d and k drawn from the seed),
//           "numel=10 dp=4 [float|double]" (9.2 to 9.5; the collectives run on dp ranks)
//   fields  "p=P [float|double] key=value ... word ...": the general form, for checks that need
//           no syntax of their own: P ranks (default 1), the type (typed checks), and the keys
//           and words the check declares (CheckInfo::case_words), numbers as values
//   plan    "model=NAME cluster=NAME tokens=T seq=S" (assignment 3, Part 13): a model config and
//           a cluster config from grader/configs (each NAME.json), a global batch of T tokens
//           in sequences of S (a batch that is not a positive multiple of S: one to refuse)
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "check_registry.hpp"

namespace dtk::grade {

// The broken configs of a config check, refused with std::runtime_error.
const std::vector<std::string>& broken_configs();

struct TestCase {
  std::string function;
  int mp = 1, dp = 1;
  std::string type;        // "float" or "double" (typed checks only; buffer checks: or "int32")
  std::string arg;         // config name, "random <model_type>", budget or "random"
  int p = 1;               // buffer checks: the ranks
  std::size_t count = 0;   // buffer checks: elements (see the case texts above)
  std::string op;          // buffer checks that reduce: "sum", "min" or "max"
  std::size_t bytes = 0;   // speed measurements: the message size
  int repetitions = 0;     // speed measurements: how many timings of each (0: not one)
  int pp = 1;              // layout checks: pipeline stages (get_pipeline_info)
  int m = 0, layers = 0;   // pipeline checks: micro-batches, layers to partition
  std::size_t width = 0;   // pipeline checks: activation width (0: the check's default)
  std::string schedule;    // pipeline checks: "gpipe" or "1f1b"
  std::string costs;       // partition checks: the layer costs' profile ("" = random)
  double psi = 0, k = 12;  // zero checks: parameters and optimizer bytes per parameter
  std::size_t numel = 0;   // zero checks: the flat vector's length
  std::map<std::string, double> values;  // fields checks: key=value
  std::vector<std::string> words;        // fields checks: plain words, in the text's order
  std::string model, cluster;            // plan checks: config names
  double tokens = 0;                     // plan checks: the global batch, tokens
  int seq = 0;                           // plan checks: the sequence length

  const CheckInfo& check() const;
  int ranks() const;  // MPI ranks the test runs on
  bool is_speed() const { return repetitions > 0; }
  // fields checks: the value of key=value, or `otherwise` when the text has no such key.
  double value(const std::string& key, double otherwise) const;
  bool has_word(const std::string& word) const;
  std::string case_text() const;
  std::string id() const { return function + " " + case_text(); }
};

// Throws std::invalid_argument with a message naming the problem.
TestCase parse_test_case(const std::string& function, const std::string& case_text);
TestCase parse_test_id(const std::string& id);

}  // namespace dtk::grade
