// The summary page of a batch (summary.html, one self-contained file that opens from disk):
// per-part score histograms drawn as SVG, the hidden tests failed most often with one sample
// of their feedback, the class ranked by each leaderboard entry of the results (Part 7's speed
// ratios, Part 13's mean MFU), how long the gradings took and, when asked, the most similar
// hand-ins.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "class/batch.hpp"
#include "class/similarity.hpp"
#include "manifest.hpp"

namespace dtk::grade {

// Throws std::runtime_error when the file cannot be written.
void write_summary_page(const std::string& path, const Manifest& manifest,
                        const std::vector<GradebookRow>& rows, std::uint64_t seed,
                        const std::vector<SimilarPair>& similar);

}  // namespace dtk::grade
