#include "class/summary_page.hpp"

#include "class/leaderboards.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "files.hpp"
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

// A bar chart of the scores, 0 to max points: the count over each bar (and in its tooltip),
// the bins' lower bounds under it, both axes named.
std::string histogram_svg(const std::string& title, const std::vector<double>& scores, double max) {
  const std::vector<int> bins = binned(scores, max);
  const int most = std::max(1, *std::max_element(bins.begin(), bins.end()));
  const int width = 34, gap = 4, height = 110, left = 26, top = 28, axis = top + height;
  const int right = left + kBins * (width + gap);
  auto at = [](int value) { return std::to_string(value); };
  // viewBox: a narrow window scales the chart down rather than cutting it.
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" + at(right + 10) +
                    "' height='" + at(axis + 34) + "' viewBox='0 0 " + at(right + 10) + " " +
                    at(axis + 34) + "' role='img' aria-label='" + shown_html(title) + "'>";
  svg += "<text x='" + at(left) + "' y='16' font-size='13' font-weight='bold'>" +
         shown_html(title) + "</text>";
  svg += "<text class='y-label' transform='translate(12," + at(top + height / 2) +
         ") rotate(-90)' font-size='11' text-anchor='middle'>hand-ins</text>";
  for (int b = 0; b < kBins; ++b) {
    const int x = left + b * (width + gap), h = bins[b] * height / most;
    const std::string from = formatted("%g", max * b / kBins),
                      to = formatted("%g", max * (b + 1) / kBins);
    svg += "<rect class='bar' x='" + at(x) + "' y='" + at(axis - h) + "' width='" + at(width) +
           "' height='" + at(h) + "' fill='#4878a8'><title>" + at(bins[b]) +
           (bins[b] == 1 ? " hand-in" : " hand-ins") + " with " + from +
           (b + 1 == kBins ? " to " + to : " to under " + to) + " points</title></rect>";
    if (bins[b] > 0) {
      svg += "<text class='count' x='" + at(x + width / 2) + "' y='" + at(axis - h - 3) +
             "' font-size='11' text-anchor='middle'>" + at(bins[b]) + "</text>";
    }
    svg += "<text x='" + at(x + width / 2) + "' y='" + at(axis + 14) +
           "' font-size='10' text-anchor='middle'>" + from + "</text>";
  }
  svg += "<line x1='" + at(left) + "' y1='" + at(axis) + "' x2='" + at(right) + "' y2='" +
         at(axis) + "' stroke='#333'/><line x1='" + at(left) + "' y1='" + at(top) + "' x2='" +
         at(left) + "' y2='" + at(axis) + "' stroke='#333'/>";
  svg += "<text class='x-label' x='" + at((left + right) / 2) + "' y='" + at(axis + 30) +
         "' font-size='11' text-anchor='middle'>points (bars: tenths of " + formatted("%g", max) +
         ")</text></svg>";
  return svg;
}

// The class ranked by each leaderboard entry of results.json (Part 7's speed ratios, lower first;
// Part 13's mean MFU, higher first), ties by name, with what grading the best again alone said.
std::string leaderboard_tables(const std::vector<GradebookRow>& rows) {
  std::string html;
  for (const auto& [name, ranked] : ranked_leaderboards(rows)) {
    html += "<h2>Leaderboard: " + shown_html(name) + "</h2>\n<p>" +
            (ranked.front().second.higher_is_better ? "Higher" : "Lower") +
            " is better. The best " + std::to_string(kLeaderboardChecked) +
            " were graded again alone, once the class was graded.</p>\n<table><tr><th>rank</th>"
            "<th>student</th><th>" +
            shown_html(name) + "</th><th>graded again alone</th></tr>\n";
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      const auto& checks = ranked[i].first->leaderboard_check;
      const auto check = checks.find(name);
      html += "<tr><td>" + std::to_string(i + 1) + "</td><td>" +
              shown_html(ranked[i].first->student) + "</td><td>" +
              formatted("%.4f", ranked[i].second.value) + "</td><td>" +
              (check == checks.end() ? "" : shown_html(check->second)) + "</td></tr>\n";
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
      "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
      "content='width=device-width, initial-scale=1'><title>dtk-grade: "
      "assignment " +
      std::to_string(manifest.assignment) +
      "</title><style>"
      "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
      "figure{display:inline-block;margin:0 1.5em 1.5em 0;max-width:100%}"
      "svg{max-width:100%;height:auto}table{border-collapse:collapse}"
      "td,th{border:1px solid #bbb;padding:4px 8px;text-align:left;vertical-align:top}"
      // Long names and feedback wrap anywhere on a narrow window; counts and links never do.
      "td{overflow-wrap:anywhere}.n{white-space:nowrap}"
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
      page += "<tr><td>" + shown_html(test) + "</td><td class='n'>" + std::to_string(seen.first) +
              " of " + std::to_string(rows.size()) + "</td><td><pre>" +
              shown_html(seen.second->student) + ":\n" + shown_html(sample) + "</pre></td></tr>\n";
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
              shown_html(pair.b) + "</td><td class='n'>" + std::to_string(pair.percent) +
              " %</td><td class='n'><a href='" + shown_html(pair.view) +
              "'>side by side</a></td></tr>\n";
    }
    page += "</table>\n";
  }
  page += "</body></html>\n";
  write_file(path, page, 0600);  // the course staff's only, like the whole batch
}

}  // namespace dtk::grade
