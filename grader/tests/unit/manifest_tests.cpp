// The manifest: the kit's own loads; every kind of mistake is refused with a message that names
// the file, the place and the problem.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "manifest.hpp"

using namespace dtk::grade;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

const std::string kKitManifests = DTK_KIT_MANIFESTS_DIR;
const std::string kKitManifest = kKitManifests + "/assignment1.json";
const std::string kKitManifest2 = kKitManifests + "/assignment2.json";
const std::string kKitManifest3 = kKitManifests + "/assignment3.json";

json read_json(const std::string& path) {
  std::ifstream file(path);
  REQUIRE(file);
  return json::parse(file);
}

// A kit manifest with what it includes merged in: one self-contained manifest to change.
json kit_manifest(const std::string& path = kKitManifest) {
  json manifest = read_json(path);
  if (manifest.contains("include")) {
    const json base = read_json(kKitManifests + "/" + manifest["include"].get<std::string>());
    for (const auto& [key, value] : base.items()) {
      if (key != "about") manifest[key] = value;
    }
    manifest.erase("include");
  }
  return manifest;
}

// A scratch directory, removed with it.
struct ScratchDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("dtk_unit_manifest_" + std::to_string(getpid()));
  ScratchDir() { std::filesystem::create_directories(path); }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

// Writes `text` to a scratch file and loads it as a manifest.
Manifest load_text(const std::string& text) {
  const ScratchDir scratch;
  return load_manifest(scratch.write("manifest.json", text));
}

Manifest load_json(const json& manifest) { return load_text(manifest.dump()); }

}  // namespace

TEST_CASE("the kit's manifest loads, its limits and rules from the file", "[manifest]") {
  const json source = kit_manifest();
  const Manifest manifest = load_manifest(kKitManifest);
  CHECK(manifest.timeouts.test_seconds == source["timeouts"]["test_seconds"].get<int>());
  CHECK(manifest.timeouts.group_seconds == source["timeouts"]["group_seconds"].get<int>());
  CHECK(manifest.timeouts.retry_test_seconds ==
        source["timeouts"]["retry_test_seconds"].get<int>());
  CHECK(manifest.timeouts.retry_test_seconds > manifest.timeouts.test_seconds);
  CHECK(manifest.max_ranks == source["max_ranks"].get<int>());
  CHECK(manifest.tolerances.float_rtol == source["tolerances"]["float"].get<double>());
  CHECK(manifest.assignment == 1);
  CHECK(manifest.forbidden_call_costs == "part");
  REQUIRE_FALSE(manifest.parts.empty());
  CHECK(manifest.parts.front().allowed_mpi.count("MPI_Allreduce") == 1);
  CHECK(manifest.parts.front().allowed_mpi.count("MPI_Bcast") == 0);
  CHECK(manifest.forbidden_symbols.count("fork") == 1);
  CHECK(manifest.parts.front().number == source["parts"][0]["part"].get<int>());
  CHECK_FALSE(manifest.parts.front().tests.empty());
}

TEST_CASE("a limit changed in the manifest is the limit used", "[manifest]") {
  json changed = kit_manifest();
  changed["timeouts"]["test_seconds"] = 7;
  changed["allowed_mpi"].push_back("MPI_Bcast");
  const Manifest manifest = load_json(changed);
  CHECK(manifest.timeouts.test_seconds == 7);
  CHECK(manifest.parts.front().allowed_mpi.count("MPI_Bcast") == 1);
}

TEST_CASE("assignment 2's manifest: Part 7's own rules and its speed bonus", "[manifest]") {
  const Manifest manifest = load_manifest(kKitManifest2);
  CHECK(manifest.assignment == 2);
  CHECK(manifest.forbidden_call_costs == "function");
  REQUIRE(manifest.parts.size() >= 1);
  const Part& part7 = manifest.parts.front();
  CHECK(part7.number == 7);
  CHECK(part7.allowed_communicator == std::set<std::string>{"Send", "Recv", "Sendrecv"});
  REQUIRE(part7.speed_bonus);
  CHECK(part7.speed_bonus->functions == std::vector<std::string>{"my_allreduce", "my_alltoall"});
  CHECK(part7.speed_bonus->ranks == 2);
  REQUIRE(part7.speed_bonus->tiers.size() == 2);
  CHECK(part7.speed_bonus->tiers[0].within < part7.speed_bonus->tiers[1].within);
  double points = 0;  // Part 7's functions: 12, 6, 6 and 6 of its 30 points
  for (const RubricItem& item : part7.rubric)
    points += item.function == "my_allreduce" ? item.weight : 0;
  CHECK(points == 12);
}

// Part 13, the last part of assignment 3's manifest.
json& part13_test(json& manifest) { return manifest["parts"].back()["tests"][0]; }

TEST_CASE("assignment 3's manifest: Part 13 is optional and scored by tiers of MFU", "[manifest]") {
  const Manifest manifest = load_manifest(kKitManifest3);
  const Part& part13 = manifest.parts.back();
  CHECK(part13.number == 13);
  CHECK(part13.optional);
  REQUIRE(part13.tiers.count("plan_training") == 1);
  const Tiers& tiers = part13.tiers.at("plan_training");
  CHECK(tiers.value == "mfu");
  CHECK(tiers.leaderboard == "Part 13: mean MFU");
  REQUIRE(tiers.levels.size() == 4);
  CHECK(tiers.levels.front().share == 1);
  double weights = 0;
  for (const RubricItem& item : part13.rubric) weights += item.weight;
  CHECK(weights == part13.points);
}

TEST_CASE("tiers are checked like the rest", "[manifest]") {
  json manifest = kit_manifest(kKitManifest3);
  std::swap(part13_test(manifest)["tiers"]["levels"][0],
            part13_test(manifest)["tiers"]["levels"][1]);
  CHECK_THROWS_WITH(load_json(manifest), Contains("best first"));
  manifest = kit_manifest(kKitManifest3);
  part13_test(manifest)["tiers"]["levels"][0]["share"] = 1.5;
  CHECK_THROWS_WITH(load_json(manifest), Contains("\"share\" must be in (0, 1]"));
  manifest = kit_manifest(kKitManifest3);
  part13_test(manifest)["tiers"]["levels"][3]["at_least"] = 0;
  CHECK_THROWS_WITH(load_json(manifest), Contains("\"at_least\" must be a ratio > 0"));
  manifest = kit_manifest(kKitManifest3);
  part13_test(manifest)["tiers"].erase("leaderboard");
  CHECK_THROWS_WITH(load_json(manifest), Contains("tiers: missing key \"leaderboard\""));
  manifest = kit_manifest(kKitManifest3);
  part13_test(manifest)["tiers"]["value"] = "";
  CHECK_THROWS_WITH(load_json(manifest), Contains("\"value\" must name"));
  manifest = kit_manifest(kKitManifest3);
  part13_test(manifest)["tiers"]["levels"] = json::array();
  CHECK_THROWS_WITH(load_json(manifest), Contains("\"levels\" must be a non-empty list"));
}

TEST_CASE("a speed bonus is checked like the rest", "[manifest]") {
  json manifest = kit_manifest(kKitManifest2);
  manifest["parts"][0]["speed_bonus"]["functions"] = {"my_allgather"};
  CHECK_THROWS_WITH(load_json(manifest), Contains("\"my_allgather\" cannot be timed"));
  manifest = kit_manifest(kKitManifest2);
  std::swap(manifest["parts"][0]["speed_bonus"]["tiers"][0],
            manifest["parts"][0]["speed_bonus"]["tiers"][1]);
  CHECK_THROWS_WITH(load_json(manifest), Contains("best first"));
  manifest = kit_manifest(kKitManifest2);
  manifest["parts"][0]["speed_bonus"]["ranks"] = 1;
  CHECK_THROWS_WITH(load_json(manifest), Contains("\"ranks\" must be at least 2"));
  manifest = kit_manifest(kKitManifest2);
  manifest["forbidden_call_costs"] = "test";
  CHECK_THROWS_WITH(load_json(manifest), Contains("\"forbidden_call_costs\" must be"));
}

TEST_CASE("a manifest includes the shared base once: a key defined twice is refused",
          "[manifest]") {
  const ScratchDir scratch;
  json base = read_json(kKitManifests + "/common.json");
  scratch.write("common.json", base.dump());
  json own = read_json(kKitManifest);
  CHECK(load_manifest(scratch.write("own.json", own.dump())).max_ranks == base["max_ranks"]);

  own["limits"] = base["limits"];
  const std::string twice = scratch.write("twice.json", own.dump());
  CHECK_THROWS_WITH(load_manifest(twice), Contains("\"limits\" is defined in both " + twice) &&
                                              Contains("common.json: keep one"));

  own = read_json(kKitManifest);
  own["include"] = "elsewhere.json";
  const std::string missing = scratch.write("missing.json", own.dump());
  CHECK_THROWS_WITH(load_manifest(missing),
                    Contains("elsewhere.json: cannot be read (" + missing + " includes it"));

  base["include"] = "other.json";
  scratch.write("common.json", base.dump());
  CHECK_THROWS_WITH(load_manifest(scratch.write("nested.json", read_json(kKitManifest).dump())),
                    Contains("common.json: an included file includes no other"));
}

TEST_CASE("every limit is required: the C++ holds no default", "[manifest]") {
  json manifest = kit_manifest();
  manifest["timeouts"].erase("test_seconds");
  CHECK_THROWS_WITH(load_json(manifest), Contains("missing key \"test_seconds\""));
  manifest = kit_manifest();
  manifest.erase("limits");
  CHECK_THROWS_WITH(load_json(manifest), Contains("missing key \"limits\""));
  for (const char* rule :
       {"allowed_mpi", "allowed_communicator", "forbidden_call_costs", "assignment"}) {
    manifest = kit_manifest();
    manifest.erase(rule);
    CHECK_THROWS_WITH(load_json(manifest), Contains("missing key \"" + std::string(rule) + "\""));
  }
}

TEST_CASE("a disabled part is left out, and named as disabled", "[manifest]") {
  json manifest = kit_manifest();
  const std::size_t parts = manifest["parts"].size();
  CHECK(load_json(manifest).disabled_parts.empty());
  manifest["parts"][parts - 1]["enabled"] = false;  // Part 6
  const Manifest loaded = load_json(manifest);
  CHECK(loaded.parts.size() == parts - 1);
  CHECK(loaded.parts.back().number == 5);
  CHECK(loaded.disabled_parts == std::vector<int>{6});
}

TEST_CASE("bad manifests are refused with a message naming the problem", "[manifest]") {
  CHECK_THROWS_AS(load_manifest("/no/such/manifest.json"), ManifestError);
  CHECK_THROWS_WITH(load_manifest("/no/such/manifest.json"), Contains("/no/such/manifest.json"));
  CHECK_THROWS_WITH(load_text("{ \"parts\": [ }"), Contains("not valid JSON"));

  json manifest = kit_manifest();
  manifest["max_rank"] = 8;  // a typo
  CHECK_THROWS_WITH(load_json(manifest), Contains("unknown key \"max_rank\""));

  manifest = kit_manifest();
  manifest["timeouts"]["group_seconds"] = 0;
  CHECK_THROWS_WITH(load_json(manifest), Contains("\"group_seconds\" must be positive"));

  manifest = kit_manifest();
  manifest["timeouts"]["test_seconds"] = "two";
  CHECK_THROWS_WITH(load_json(manifest), Contains("\"test_seconds\" has the wrong type"));

  // A test run again alone gets more time than among others, never less.
  manifest = kit_manifest();
  manifest["timeouts"]["retry_test_seconds"] = 0;
  CHECK_THROWS_WITH(load_json(manifest), Contains("\"retry_test_seconds\" must be positive"));
  manifest["timeouts"]["retry_test_seconds"] = 1;
  CHECK_THROWS_WITH(load_json(manifest),
                    Contains("\"retry_test_seconds\" must be at least \"test_seconds\""));
  manifest["timeouts"].erase("retry_test_seconds");
  CHECK_THROWS_WITH(load_json(manifest), Contains("missing key \"retry_test_seconds\""));

  manifest = kit_manifest();
  manifest["visibility"] = "secret";
  CHECK_THROWS_WITH(load_json(manifest), Contains("\"visibility\""));

  manifest = kit_manifest();
  manifest["parts"][1]["part"] = manifest["parts"][0]["part"];
  CHECK_THROWS_WITH(load_json(manifest), Contains("twice"));

  manifest = kit_manifest();
  json& tests = manifest["parts"][0]["tests"][0];
  tests["cases"].push_back(tests["cases"][0]);
  CHECK_THROWS_WITH(load_json(manifest), Contains("listed twice"));

  manifest = kit_manifest();
  manifest["parts"][0]["tests"][0]["public"] = {"mp=3 dp=3 float"};
  CHECK_THROWS_WITH(load_json(manifest), Contains("is not one of its cases"));

  manifest = kit_manifest();
  manifest["parts"][0]["tests"][0]["cases"] = {"mp=two dp=1 float"};
  CHECK_THROWS_WITH(load_json(manifest), Contains("parts[0], tests[0]") && Contains("mp=two"));
}

TEST_CASE("--parts keeps only the parts asked for, and names the others when one is not there",
          "[manifest]") {
  Manifest manifest = load_manifest(kKitManifest3);
  keep_only_parts(manifest, {11, 13});
  REQUIRE(manifest.parts.size() == 2);
  CHECK(manifest.parts[0].number == 11);
  CHECK(manifest.parts[1].number == 13);

  manifest = load_manifest(kKitManifest3);
  CHECK_THROWS_WITH(
      keep_only_parts(manifest, {10, 7}),
      Contains("assignment 3 has no Part 7") && Contains("its graded parts are 10, 11, 12 and 13"));
  CHECK(manifest.parts.size() == 4);  // unchanged

  json disabled = kit_manifest();
  disabled["parts"][disabled["parts"].size() - 1]["enabled"] = false;  // Part 6
  manifest = load_json(disabled);
  CHECK_THROWS_WITH(keep_only_parts(manifest, {6}),
                    Contains("Part 6 of assignment 1 is not assigned") &&
                        Contains("its graded parts are 1, 2, 3, 4 and 5"));
}
