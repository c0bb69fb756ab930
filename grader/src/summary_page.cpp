#include "summary_page.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "text.hpp"

namespace dtk::grade {

namespace {

constexpr int kBins = 10;               // a histogram's bars: tenths of the maximum
constexpr std::size_t kTopFailed = 10;  // the tests failed most often, listed
constexpr std::size_t kSampleChars = 1500;

// How many scores fall in each tenth of `max` (a full score in the last bar).
std::vector<int> binned(const std::vector<double>& scores, double max) {
  std::vector<int> bins(kBins, 0);
  for (double score : scores) {
    const int bin = max > 0 ? static_cast<int>(score / max * kBins) : 0;
    ++bins[std::clamp(bin, 0, kBins - 1)];
  }
  return bins;
}

// A bar chart of the scores, 0 to max points, with the count over each bar.
std::string histogram_svg(const std::string& title, const std::vector<double>& scores, double max) {
  const std::vector<int> bins = binned(scores, max);
  const int most = std::max(1, *std::max_element(bins.begin(), bins.end()));
  const int width = 34, gap = 4, height = 110, left = 10, top = 28, axis = top + height;
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" +
                    std::to_string(left * 2 + kBins * (width + gap)) + "' height='" +
                    std::to_string(axis + 34) + "' role='img' aria-label='" + shown_html(title) +
                    "'>";
  svg += "<text x='" + std::to_string(left) + "' y='16' font-size='13' font-weight='bold'>" +
         shown_html(title) + "</text>";
  for (int b = 0; b < kBins; ++b) {
    const int x = left + b * (width + gap), h = bins[b] * height / most;
    svg += "<rect x='" + std::to_string(x) + "' y='" + std::to_string(axis - h) + "' width='" +
           std::to_string(width) + "' height='" + std::to_string(h) + "' fill='#4878a8'/>";
    if (bins[b] > 0) {
      svg += "<text x='" + std::to_string(x + width / 2) + "' y='" + std::to_string(axis - h - 3) +
             "' font-size='11' text-anchor='middle'>" + std::to_string(bins[b]) + "</text>";
    }
    svg += "<text x='" + std::to_string(x + width / 2) + "' y='" + std::to_string(axis + 14) +
           "' font-size='10' text-anchor='middle'>" + formatted("%g", max * b / kBins) + "</text>";
  }
  svg += "<line x1='" + std::to_string(left) + "' y1='" + std::to_string(axis) + "' x2='" +
         std::to_string(left + kBins * (width + gap)) + "' y2='" + std::to_string(axis) +
         "' stroke='#333'/>";
  svg += "<text x='" + std::to_string(left + kBins * (width + gap) / 2) + "' y='" +
         std::to_string(axis + 30) +
         "' font-size='11' text-anchor='middle'>points (bars: " + "tenths of " +
         formatted("%g", max) + ")</text></svg>";
  return svg;
}

// The class ranked by each leaderboard entry of results.json (Part 7's speed ratios, lower first;
// Part 13's mean MFU, higher first), ties by name.
std::string leaderboard_tables(const std::vector<GradebookRow>& rows) {
  std::map<std::string, std::vector<std::pair<const GradebookRow*, LeaderboardEntry>>> boards;
  for (const GradebookRow& row : rows) {
    for (const LeaderboardEntry& entry : row.leaderboard)
      boards[entry.name].push_back({&row, entry});
  }
  std::string html;
  for (auto& [name, ranked] : boards) {
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      const double x = a.second.value, y = b.second.value;
      if (x != y) return a.second.higher_is_better ? x > y : x < y;
      return a.first->student < b.first->student;
    });
    html += "<h2>Leaderboard: " + shown_html(name) + "</h2>\n<p>" +
            (ranked.front().second.higher_is_better ? "Higher" : "Lower") +
            " is better.</p>\n<table><tr><th>rank</th><th>student</th><th>" + shown_html(name) +
            "</th></tr>\n";
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      html += "<tr><td>" + std::to_string(i + 1) + "</td><td>" +
              shown_html(ranked[i].first->student) + "</td><td>" +
              formatted("%.4f", ranked[i].second.value) + "</td></tr>\n";
    }
    html += "</table>\n";
  }
  return html;
}

}  // namespace

void write_summary_page(const std::string& path, const Manifest& manifest,
                        const std::vector<GradebookRow>& rows, std::uint64_t seed,
                        const std::vector<SimilarPair>& similar) {
  std::string page =
      "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>dtk-grade: "
      "assignment " +
      std::to_string(manifest.assignment) +
      "</title><style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
      "figure{display:inline-block;margin:0 1.5em 1.5em 0}table{border-collapse:collapse}"
      "td,th{border:1px solid #bbb;padding:4px 8px;text-align:left;vertical-align:top}"
      "pre{white-space:pre-wrap;font-size:12px;max-height:22em;overflow:auto;margin:0}"
      "</style></head><body>\n";
  std::size_t graded = 0;
  for (const GradebookRow& row : rows) graded += row.status == "graded";
  page += "<h1>Assignment " + std::to_string(manifest.assignment) + ": " +
          std::to_string(rows.size()) + " hand-ins</h1>\n<p>Seed " + std::to_string(seed) + "; " +
          std::to_string(graded) + " graded";
  if (graded < rows.size())
    page += ", <strong>" + std::to_string(rows.size() - graded) +
            " not</strong> (see the gradebook's status)";
  page += ".</p>\n<h2>Scores</h2>\n";

  double max_total = 0;
  std::vector<double> totals;
  for (const GradebookRow& row : rows) totals.push_back(row.total);
  for (const Part& part : manifest.parts) {
    max_total += part.points;
    std::vector<double> scores;
    for (const GradebookRow& row : rows) scores.push_back(row.parts.at(part.number));
    page += "<figure>" +
            histogram_svg("Part " + std::to_string(part.number) + ": " + part.title, scores,
                          part.points) +
            "</figure>\n";
  }
  page += "<figure>" + histogram_svg("Total", totals, max_total) + "</figure>\n";

  // The tests failed most often, each with the feedback of its first student.
  std::map<std::string, std::pair<int, const GradebookRow*>> failed;
  for (const GradebookRow& row : rows) {
    for (const auto& [test, output] : row.failed) {
      auto& [count, sample] = failed[test];
      if (count++ == 0) sample = &row;
    }
  }
  std::vector<std::pair<std::string, std::pair<int, const GradebookRow*>>> ranked(failed.begin(),
                                                                                  failed.end());
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  page += "<h2>Hidden tests failed most often</h2>\n";
  if (ranked.empty()) {
    page += "<p>None: every graded hand-in passed every test.</p>\n";
  } else {
    page += "<table><tr><th>test</th><th>failed by</th><th>sample feedback</th></tr>\n";
    for (std::size_t i = 0; i < ranked.size() && i < kTopFailed; ++i) {
      const auto& [test, seen] = ranked[i];
      std::string sample = seen.second->failed.at(test);
      if (sample.size() > kSampleChars) sample = sample.substr(0, kSampleChars) + "\n[...]";
      page += "<tr><td>" + shown_html(test) + "</td><td>" + std::to_string(seen.first) + " of " +
              std::to_string(rows.size()) + "</td><td><pre>" + shown_html(seen.second->student) +
              ":\n" + shown_html(sample) + "</pre></td></tr>\n";
    }
    page += "</table>\n";
  }

  page += leaderboard_tables(rows);

  std::vector<double> seconds;
  for (const GradebookRow& row : rows) {
    if (row.seconds > 0) seconds.push_back(row.seconds);
  }
  page += "<h2>Grading time</h2>\n";
  if (!seconds.empty()) {
    std::sort(seconds.begin(), seconds.end());
    double sum = 0;
    for (double s : seconds) sum += s;
    page += "<p>Per hand-in: median " + formatted("%.1f", seconds[seconds.size() / 2]) +
            " s, mean " + formatted("%.1f", sum / seconds.size()) + " s, fastest " +
            formatted("%.1f", seconds.front()) + " s, slowest " +
            formatted("%.1f", seconds.back()) + " s (" + std::to_string(seconds.size()) +
            " gradings; several at once with --jobs).</p>\n";
  }
  if (!similar.empty()) {
    page +=
        "<h2>Most similar hand-ins</h2>\n<p>By sim_c++ (token runs: renamed identifiers, "
        "layout and comments do not hide a copy), with the starter's own lines left out. "
        "A high percentage is a reason to look, not a verdict.</p>\n<table><tr><th>file</th>"
        "<th>hand-ins</th><th>similar</th><th></th></tr>\n";
    for (const SimilarPair& pair : similar) {
      page += "<tr><td>" + shown_html(pair.file) + "</td><td>" + shown_html(pair.a) + " and " +
              shown_html(pair.b) + "</td><td>" + std::to_string(pair.percent) +
              " %</td><td><a href='" + shown_html(pair.view) + "'>side by side</a></td></tr>\n";
    }
    page += "</table>\n";
  }
  page += "</body></html>\n";
  std::ofstream file(path, std::ios::trunc);
  file << page;
  if (!file.flush()) throw std::runtime_error("cannot write " + path);
}

}  // namespace dtk::grade
