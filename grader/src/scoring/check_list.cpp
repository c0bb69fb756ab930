#include "scoring/check_list.hpp"

#include <cstdio>
#include <set>
#include <string>

#include "manifest.hpp"
#include "text.hpp"

namespace dtk::grade {

namespace {

std::string ranks_of(const Part& part, const std::string& function) {
  std::set<int> ranks;
  for (const PlannedTest& planned : part.tests) {
    if (planned.test.function == function) ranks.insert(planned.test.ranks());
  }
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ",") + std::to_string(r);
  return text + (ranks.size() == 1 && *ranks.begin() == 1 ? " rank" : " ranks");
}

// "scored by tiers of mfu (its ratio to the reference's: >= 0.97 all, >= 0.9 0.75, ...)".
std::string tiers_text(const Tiers& tiers) {
  std::string text = "scored by tiers of " + tiers.value + " (its ratio to the reference's:";
  for (const TierLevel& level : tiers.levels) {
    text += (&level == &tiers.levels.front() ? " >= " : ", >= ") + formatted("%g", level.at_least) +
            (level.share == 1 ? " all" : " " + formatted("%g", level.share));
  }
  text += " of a case's points)";
  if (!tiers.leaderboard.empty()) text += "; leaderboard \"" + tiers.leaderboard + "\"";
  return text;
}

double total_weight(const Part& part) {
  double total = 0;
  for (const RubricItem& item : part.rubric) total += item.weight;
  return total;
}

}  // namespace

void print_check_list(const Toolchain& toolchain, std::ostream& out) {
  std::set<std::string> used;
  for (const auto& [assignment, files] : toolchain.assignment_files) {
    const std::string path = toolchain.manifest(assignment);
    out << "Assignment " << assignment << " (" << path << ")\n";
    const Manifest manifest = load_manifest(path);
    for (const Part& part : manifest.parts) {
      char points[32];
      std::snprintf(points, sizeof points, "%g", part.points);
      out << "  Part " << part.number << ": " << part.title << " (" << part.file << ", " << points
          << " points)\n";
      const double weight = total_weight(part);
      for (const std::string& function : part.functions) {
        used.insert(function);
        out << "    " << function << "  [" << kind_name(find_check(function)->kind) << ", "
            << ranks_of(part, function) << "]\n";
        const auto tiers = part.tiers.find(function);
        if (tiers != part.tiers.end()) out << "      " << tiers_text(tiers->second) << "\n";
        for (const RubricItem& item : part.rubric) {
          if (item.function != function) continue;
          std::snprintf(points, sizeof points, "%g", part.points * item.weight / weight);
          out << "      " << points << " pt  " << item.name << " (" << item.cases.size()
              << (item.cases.size() == 1 ? " case)\n" : " cases)\n");
        }
      }
    }
    for (int part : manifest.disabled_parts)
      out << "  Part " << part << ": disabled (\"enabled\": false), not graded\n";
  }
  std::string unused;
  for (const CheckInfo& check : all_checks()) {
    if (!used.count(check.function)) unused += "  " + check.function + "\n";
  }
  if (!unused.empty()) out << "Registered, in no manifest:\n" << unused;
}

}  // namespace dtk::grade
