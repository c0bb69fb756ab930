#include "class/leaderboards.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "report.hpp"
#include "text.hpp"

namespace dtk::grade {

using nlohmann::json;

namespace {

// A computed value graded again on the same inputs is the same, up to the last digits printed.
constexpr double kSameValue = 1e-9;

// The function a speed bonus's leaderboard entry names: "my_allreduce / MPI_Allreduce".
std::string timed_function(const std::string& entry) { return entry.substr(0, entry.find(" / ")); }

// The speed bonus a leaderboard entry times, or nullptr when the entry is computed, not timed.
const SpeedBonus* timing_bonus(const Manifest& manifest, const std::string& entry) {
  const std::string function = timed_function(entry);
  for (const Part& part : manifest.parts) {
    const auto& bonus = part.speed_bonus;
    if (bonus && bonus->leaderboard &&
        std::count(bonus->functions.begin(), bonus->functions.end(), function) > 0) {
      return &*bonus;
    }
  }
  return nullptr;
}

std::optional<double> entry_value(const json& results, const std::string& name) {
  for (const json& entry : results.value("leaderboard", json::array())) {
    if (entry.is_object() && entry.value("name", "") == name && entry["value"].is_number())
      return entry["value"].get<double>();
  }
  return std::nullopt;
}

// The points the speed bonus of `function` earned in `results` (its test "Part N | function:
// speed bonus").
double bonus_points(const json& results, const std::string& function) {
  for (const json& test : results.value("tests", json::array())) {
    const std::string name = test.value("name", "");
    if (is_speed_bonus_test(name) &&
        name.find("| " + function + kSpeedBonusTest) != std::string::npos)
      return test.value("score", 0.0);
  }
  return 0;
}

}  // namespace

std::vector<int> leaderboard_parts(const Manifest& manifest) {
  std::vector<int> parts;
  for (const Part& part : manifest.parts) {
    bool ranked = part.speed_bonus && part.speed_bonus->leaderboard;
    for (const auto& [function, tiers] : part.tiers) ranked |= !tiers.leaderboard.empty();
    if (ranked) parts.push_back(part.number);
  }
  return parts;
}

std::map<std::string, std::vector<RankedEntry>> ranked_leaderboards(
    const std::vector<GradebookRow>& rows) {
  std::map<std::string, std::vector<RankedEntry>> boards;
  for (const GradebookRow& row : rows) {
    for (const LeaderboardEntry& entry : row.leaderboard)
      boards[entry.name].push_back({&row, entry});
  }
  for (auto& [name, ranked] : boards) {
    std::stable_sort(ranked.begin(), ranked.end(), [](const RankedEntry& a, const RankedEntry& b) {
      const double x = a.second.value, y = b.second.value;
      if (x != y) return a.second.higher_is_better ? x > y : x < y;
      return a.first->student < b.first->student;
    });
  }
  return boards;
}

std::vector<std::string> leaderboard_leaders(const std::vector<GradebookRow>& rows) {
  std::vector<std::string> leaders;
  for (const auto& [name, ranked] : ranked_leaderboards(rows)) {
    for (std::size_t i = 0; i < std::min(kLeaderboardChecked, ranked.size()); ++i) {
      const std::string& student = ranked[i].first->student;
      if (std::find(leaders.begin(), leaders.end(), student) == leaders.end())
        leaders.push_back(student);
    }
  }
  return leaders;
}

std::string speed_bonus_state(const json& results) {
  if (!results.is_object() || !results.contains("extra_data")) return "";
  const json& extra = results["extra_data"];
  return extra.is_object() ? extra.value("speed_bonus", "") : "";
}

std::map<std::string, std::string> compare_leaderboards(const Manifest& manifest, const json& first,
                                                        const json& again) {
  std::map<std::string, std::string> verdicts;
  for (const json& entry : first.value("leaderboard", json::array())) {
    if (!entry.is_object() || !entry["value"].is_number()) continue;
    const std::string name = entry.value("name", "");
    const double was = entry["value"].get<double>();
    const std::optional<double> now = entry_value(again, name);
    const SpeedBonus* bonus = timing_bonus(manifest, name);
    std::string& verdict = verdicts[name];
    if (bonus && speed_bonus_state(again) == "deferred") {
      verdict = "not timed again: the machine was busy";
    } else if (!now) {
      verdict = "changed: no entry when graded again alone";
    } else if (bonus) {
      const std::string function = timed_function(name);
      const double points = bonus_points(first, function),
                   points_now = bonus_points(again, function);
      verdict = points == points_now ? "verified (" + formatted("%.4f", *now) + " alone)"
                                     : "changed: " + formatted("%.4f", *now) + " alone, " +
                                           formatted("%g", points_now) + " bonus points, not " +
                                           formatted("%g", points);
    } else {
      verdict = std::abs(*now - was) <= kSameValue * std::max(1.0, std::abs(was))
                    ? "verified"
                    : "changed: " + formatted("%.4f", *now) + " alone";
    }
  }
  return verdicts;
}

}  // namespace dtk::grade
