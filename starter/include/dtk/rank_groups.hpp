// Reporting what many ranks found: identical findings merged, their ranks named compactly.
// Used by the test harness and the grader alike; needs no MPI.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace dtk {

// A text and the ranks that produced it, in increasing order.
using RankGroup = std::pair<std::string, std::vector<int>>;

// per_rank[r] is what rank r found; ranks with identical texts form one group. Empty texts (no
// finding) are skipped. Groups come in the order of their first rank.
inline std::vector<RankGroup> group_identical(const std::vector<std::string>& per_rank) {
  std::vector<RankGroup> groups;
  for (int r = 0; r < static_cast<int>(per_rank.size()); ++r) {
    if (per_rank[r].empty()) continue;
    auto same = std::find_if(groups.begin(), groups.end(),
                             [&](const RankGroup& g) { return g.first == per_rank[r]; });
    if (same == groups.end()) {
      groups.push_back({per_rank[r], {r}});
    } else {
      same->second.push_back(r);
    }
  }
  return groups;
}

// "rank 3", "ranks 0-7", "ranks 1, 3, 5" (ranks in increasing order).
inline std::string rank_list(const std::vector<int>& ranks) {
  if (ranks.size() == 1) return "rank " + std::to_string(ranks[0]);
  if (ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size())) {
    return "ranks " + std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  }
  std::string text = "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

}  // namespace dtk
