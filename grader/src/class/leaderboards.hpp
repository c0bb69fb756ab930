// A class's leaderboards, ranked and verified: once a batch is graded, the hand-ins at the top of
// each leaderboard are graded again, one at a time with nothing else of the batch running, and
// each of their entries is marked verified or changed. A computed entry (Part 13's mean MFU) must
// come out the same (a planner whose plan depends on how busy the machine was does not); a timed
// one (a speed bonus's ratio) must earn the same bonus points, its new ratio shown beside.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "class/batch.hpp"
#include "manifest.hpp"

namespace dtk::grade {

// Each leaderboard of `rows` (results.json's entries, by name), its students best first, ties by
// name.
using RankedEntry = std::pair<const GradebookRow*, LeaderboardEntry>;
std::map<std::string, std::vector<RankedEntry>> ranked_leaderboards(
    const std::vector<GradebookRow>& rows);

// Where a student's verdicts go, in its directory of the batch: {"entry name": "verified", ...}.
inline const std::string kLeaderboardCheckFile = "leaderboard_check.json";

// How many of each leaderboard's best are graded again.
constexpr std::size_t kLeaderboardChecked = 3;

// The parts that put entries on results.json's leaderboard (a tiers' or a speed bonus's).
std::vector<int> leaderboard_parts(const Manifest& manifest);

// The students among the kLeaderboardChecked best of any leaderboard of `rows`, each once.
std::vector<std::string> leaderboard_leaders(const std::vector<GradebookRow>& rows);

// The state of a graded hand-in's speed bonus, from its results.json: "timed", "pending",
// "deferred" (extra_data.speed_bonus), or "" when it has none to time.
std::string speed_bonus_state(const nlohmann::json& results);

// Each leaderboard entry of `first` (a results.json) against the same hand-in's results.json
// graded again alone, `again`: entry name -> "verified", or what changed ("changed: 0.4410 alone,
// 3 of 5 bonus points"), or why it could not be told ("not timed again: the machine was busy").
std::map<std::string, std::string> compare_leaderboards(const Manifest& manifest,
                                                        const nlohmann::json& first,
                                                        const nlohmann::json& again);

}  // namespace dtk::grade
