#include "dtk/trace/timeline.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace dtk {

// gather_timeline ships events as JSON: names are strings of any length, and nlohmann writes
// doubles so that they read back exactly.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TimelineEvent, rank, step, kind, microbatch, name, begin, end,
                                   bytes)

namespace {

bool is_compute(const TimelineEvent& event) { return event.kind != WorkKind::Communication; }

// "Send to 2", "Recv from 1", "Sendrecv 2/1" (to 2, from 1), "Isend to 2", "Irecv from 1",
// "Wait on 2" (a request with rank 2 completed), or the collective's name.
std::string communication_name(const CommunicationCall& call) {
  const std::string name = call.call;
  if (name == "Send" || name == "Isend") return name + " to " + std::to_string(call.peer);
  if (name == "Recv" || name == "Irecv") return name + " from " + std::to_string(call.peer);
  if (name == "Wait") return "Wait on " + std::to_string(call.peer);
  if (name == "Sendrecv") {
    return "Sendrecv " + std::to_string(call.peer) + "/" + std::to_string(call.second_peer);
  }
  return name;
}

// rank_labels[rank], or "rank <rank>" for a rank the caller gave no label.
std::string label_of(const std::vector<std::string>& labels, int rank) {
  return rank < static_cast<int>(labels.size()) ? labels[rank] : "rank " + std::to_string(rank);
}

// How many ranks a picture or trace shows: every labelled rank and every rank with an event.
int rank_count(const std::vector<TimelineEvent>& events, std::size_t labels) {
  int count = static_cast<int>(labels);
  for (const TimelineEvent& event : events) count = std::max(count, event.rank + 1);
  return count;
}

}  // namespace

// ---- Recording -----------------------------------------------------------------------------

TimelineRecorder::TimelineRecorder(int world_rank, double start)
    : rank_(world_rank), start_(start) {
  set_communication_observer([this](const CommunicationCall& call) { observe(call); });
}

TimelineRecorder::~TimelineRecorder() { set_communication_observer(nullptr); }

void TimelineRecorder::set_step(int step) { step_ = step; }

void TimelineRecorder::set_recording(bool on) { recording_ = on; }

void TimelineRecorder::add(WorkKind kind, int microbatch, std::string name, double begin_wtime,
                           double end_wtime) {
  if (!recording_) return;
  events_.push_back(
      {rank_, step_, kind, microbatch, std::move(name), begin_wtime - start_, end_wtime - start_});
}

const std::vector<TimelineEvent>& TimelineRecorder::events() const { return events_; }

void TimelineRecorder::observe(const CommunicationCall& call) {
  if (!recording_) return;
  events_.push_back({rank_, step_, WorkKind::Communication, -1, communication_name(call),
                     call.begin - start_, call.end - start_, call.bytes});
}

// ---- Gathering -----------------------------------------------------------------------------

std::vector<TimelineEvent> gather_timeline(const std::vector<TimelineEvent>& mine,
                                           const Communicator& world) {
  const MPI_Comm comm = world.handle();
  const int rank = world.Get_rank();
  const int size = world.Get_size();
  const std::string text = nlohmann::json(mine).dump();
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(rank == 0 ? size : 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm);
  std::vector<int> offsets(lengths.size());
  std::vector<char> all;
  if (rank == 0) {
    for (int r = 1; r < size; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
    all.resize(offsets.back() + lengths.back());
  }
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
              0, comm);

  std::vector<TimelineEvent> events;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    const char* begin = all.data() + offsets[r];
    const auto theirs =
        nlohmann::json::parse(begin, begin + lengths[r]).get<std::vector<TimelineEvent>>();
    events.insert(events.end(), theirs.begin(), theirs.end());
  }
  std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
    return std::make_pair(a.rank, a.begin) < std::make_pair(b.rank, b.begin);
  });
  return events;
}

// ---- Chrome trace --------------------------------------------------------------------------

namespace {

const char* category(WorkKind kind) {
  switch (kind) {
    case WorkKind::Forward:
      return "forward";
    case WorkKind::Backward:
      return "backward";
    default:
      return "communication";
  }
}

// A complete ("X") event: compute on thread 0 of the rank's process, communication on thread 1.
nlohmann::json complete_event(const TimelineEvent& event) {
  nlohmann::json args = {{"step", event.step}, {"microbatch", event.microbatch}};
  if (!is_compute(event)) args["bytes"] = event.bytes;
  return {{"name", event.name},
          {"cat", category(event.kind)},
          {"ph", "X"},
          {"pid", event.rank},
          {"tid", is_compute(event) ? 0 : 1},
          {"ts", event.begin * 1e6},
          {"dur", (event.end - event.begin) * 1e6},
          {"args", args}};
}

// Metadata ("M") events: a rank's process named by its label and sorted by rank, its two threads
// named.
std::vector<nlohmann::json> rank_metadata(int rank, const std::string& label) {
  auto metadata = [rank](const char* name, int tid, nlohmann::json args) {
    return nlohmann::json{{"name", name}, {"ph", "M"}, {"pid", rank}, {"tid", tid}, {"args", args}};
  };
  return {metadata("process_name", 0, {{"name", label}}),
          metadata("process_sort_index", 0, {{"sort_index", rank}}),
          metadata("thread_name", 0, {{"name", "compute"}}),
          metadata("thread_name", 1, {{"name", "communication"}})};
}

}  // namespace

// One event per line: the file stays readable and diffable, and still one JSON object.
void write_chrome_trace(std::ostream& out, const std::vector<TimelineEvent>& events,
                        const std::vector<std::string>& rank_labels) {
  std::vector<nlohmann::json> lines;
  for (int rank = 0; rank < rank_count(events, rank_labels.size()); ++rank) {
    for (auto& event : rank_metadata(rank, label_of(rank_labels, rank))) lines.push_back(event);
  }
  for (const TimelineEvent& event : events) lines.push_back(complete_event(event));
  out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    out << "  " << lines[i].dump() << (i + 1 < lines.size() ? ",\n" : "\n");
  }
  out << "]}\n";
}

// ---- SVG timeline --------------------------------------------------------------------------

namespace {

// Tableau 10, the kit's figures' palette (figs/pipeline_schedules.svg): micro-batch mb has
// colour mb % 10, so neighbours always differ; the number in the box tells 0 from 10.
constexpr const char* kBackwardColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                            "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr int kColours = 10;

// Geometry, in px. The plot spans [plot_left, plot_right]; the idle share goes to its right.
constexpr double kWidth = 1000, kRightColumn = 70, kRowsTop = 74;
constexpr double kBoxHeight = 28, kMarkGap = 3, kMarkHeight = 5, kRowPitch = 46;
constexpr double kCharWidth = 7.6;  // of the 14 px sans-serif labels, generously

// The forward colour: the backward one mixed with 55% white, as in the kit's figures.
std::string forward_colour(const std::string& backward) {
  char light[8];
  unsigned r = 0, g = 0, b = 0;
  std::sscanf(backward.c_str(), "#%2x%2x%2x", &r, &g, &b);
  auto lighten = [](unsigned c) {
    return static_cast<unsigned>(std::lround(c + (255 - c) * 0.55));
  };
  std::snprintf(light, sizeof light, "#%02x%02x%02x", lighten(r), lighten(g), lighten(b));
  return light;
}

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '"') {
      out += "&quot;";
    } else {
      out += c;
    }
  }
  return out;
}

std::string number(double value, int decimals = 1) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// The start of a <rect ...>: the caller adds its other attributes and closes it.
std::string rect(double x, double y, double width, double height, const std::string& classes) {
  return "<rect x=\"" + number(x) + "\" y=\"" + number(y) + "\" width=\"" + number(width) +
         "\" height=\"" + number(height) + "\" class=\"" + classes + "\"";
}

std::string text(double x, double y, const std::string& classes, const std::string& content) {
  return "<text x=\"" + number(x) + "\" y=\"" + number(y) + "\" class=\"" + classes + "\">" +
         escaped(content) + "</text>";
}

std::string line(double x1, double y1, double x2, double y2) {
  return "<line x1=\"" + number(x1) + "\" y1=\"" + number(y1) + "\" x2=\"" + number(x2) +
         "\" y2=\"" + number(y2) + "\" class=\"axis\"/>";
}

// Characters, not bytes: labels hold "·" and "—".
std::size_t text_length(const std::string& text) {
  return std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; });
}

// Where things go: one row per rank, time [t0, t1] (seconds) across the plot.
struct Frame {
  int rows;
  double plot_left, plot_right, t0, t1;

  double x(double t) const { return plot_left + (t - t0) / (t1 - t0) * (plot_right - plot_left); }
  double row_top(int row) const { return kRowsTop + row * kRowPitch; }
  double rows_bottom() const {
    return row_top(rows) - kRowPitch + kBoxHeight + kMarkGap + kMarkHeight;
  }
};

Frame frame_of(const std::vector<TimelineEvent>& events, const TimelineStyle& style) {
  Frame frame{rank_count(events, style.row_labels.size()), 0, kWidth - kRightColumn, 0, 0};
  std::size_t longest = 0;
  for (int rank = 0; rank < frame.rows; ++rank) {
    longest = std::max(longest, text_length(label_of(style.row_labels, rank)));
  }
  frame.plot_left = std::max(80.0, 24 + kCharWidth * longest);
  if (!events.empty()) {
    frame.t0 = events.front().begin;
    frame.t1 = events.front().end;
    for (const TimelineEvent& event : events) {
      frame.t0 = std::min(frame.t0, event.begin);
      frame.t1 = std::max(frame.t1, event.end);
    }
  }
  if (frame.t1 <= frame.t0) frame.t1 = frame.t0 + 1e-3;  // nothing to draw: an empty 1 ms
  return frame;
}

void write_header(std::ostream& out, double height, const TimelineStyle& style) {
  const std::string size = number(kWidth, 0) + "\" height=\"" + number(height, 0);
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << size << "\" viewBox=\"0 0 "
      << number(kWidth, 0) << " " << number(height, 0)
      << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"14\">\n"
      << "  <title>" << escaped(style.title) << "</title>\n"
      << R"(  <style>
    text { fill: #222222; }
    .heading { font-size: 17px; font-weight: bold; }
    .sub { font-size: 13px; fill: #555555; }
    .code { font-family: DejaVu Sans Mono, Menlo, Consolas, monospace; font-size: 12px; }
    .box { stroke: #444444; stroke-width: 1; }
    .lane { fill: #f4f4f4; }
    .outlined { stroke: #bbbbbb; stroke-width: 1; }
    .comm { fill: #555555; }
    .axis { stroke: #444444; stroke-width: 1; }
    .mid { text-anchor: middle; }
    .end { text-anchor: end; }
)";
  for (int c = 0; c < kColours; ++c) {
    out << "    .f" << c << " { fill: " << forward_colour(kBackwardColours[c]) << "; } .b" << c
        << " { fill: " << kBackwardColours[c] << "; }\n";
  }
  out << "  </style>\n  <rect width=\"" << size << "\" fill=\"#ffffff\"/>\n  "
      << text(kWidth / 2, 28, "heading mid", style.title) << "\n";
}

// "1.25–3.50 ms", the event's interval in the step's time, for tooltips.
std::string interval(const TimelineEvent& event, const Frame& frame) {
  return number((event.begin - frame.t0) * 1e3, 2) + "–" + number((event.end - frame.t0) * 1e3, 2) +
         " ms";
}

// One F or B box, its micro-batch written inside when it fits, its times in a tooltip.
void write_box(std::ostream& out, const TimelineEvent& event, const Frame& frame) {
  constexpr double kCodeCharWidth = 7.4;  // of the 12 px monospace box labels
  const bool forward = event.kind == WorkKind::Forward;
  const std::string letter = forward ? "F" : "B";
  const double x = frame.x(event.begin);
  const double width = std::max(1.0, frame.x(event.end) - x);
  const double y = frame.row_top(event.rank);
  const int colour = ((event.microbatch % kColours) + kColours) % kColours;
  out << "  "
      << rect(x, y, width, kBoxHeight,
              "box " + std::string(forward ? "f" : "b") + std::to_string(colour))
      << " data-rank=\"" << event.rank << "\" data-kind=\"" << letter << "\" data-mb=\""
      << event.microbatch << "\"><title>" << escaped(event.name) << ": " << interval(event, frame)
      << "</title></rect>\n";
  // "F12" if it fits, else "12", else nothing.
  const std::string label = letter + std::to_string(event.microbatch);
  for (const std::string& shown : {label, label.substr(1)}) {
    if (width >= kCodeCharWidth * shown.size() + 4) {
      out << "  " << text(x + width / 2, y + kBoxHeight / 2 + 4, "mid code", shown) << "\n";
      return;
    }
  }
}

// A communication call: a thin mark under the row's boxes, at least 1 px wide.
void write_mark(std::ostream& out, const TimelineEvent& event, const Frame& frame) {
  const double x = frame.x(event.begin);
  out << "  "
      << rect(x, frame.row_top(event.rank) + kBoxHeight + kMarkGap,
              std::max(1.0, frame.x(event.end) - x), kMarkHeight, "comm")
      << "><title>" << escaped(event.name) << ", " << event.bytes
      << " bytes sent: " << interval(event, frame) << "</title></rect>\n";
}

// Each row's label, its empty lane (idle time shows through) and its idle share of the step.
void write_lanes(std::ostream& out, const std::vector<TimelineEvent>& events, const Frame& frame,
                 const TimelineStyle& style) {
  std::vector<double> busy(frame.rows, 0.0);
  for (const TimelineEvent& event : events) {
    if (is_compute(event)) busy[event.rank] += event.end - event.begin;
  }
  const double idle_x = frame.plot_right + kRightColumn / 2;
  out << "  " << text(idle_x, kRowsTop - 8, "sub mid", "idle") << "\n";
  for (int row = 0; row < frame.rows; ++row) {
    const double y = frame.row_top(row);
    const double idle = 1 - busy[row] / (frame.t1 - frame.t0);
    out << "  " << text(frame.plot_left - 12, y + 19, "end", label_of(style.row_labels, row))
        << rect(frame.plot_left, y, frame.plot_right - frame.plot_left, kBoxHeight, "lane") << "/>"
        << text(idle_x, y + 19, "mid", number(100 * idle, 0) + "%") << "\n";
  }
}

// A round tick spacing (1, 2 or 5 times a power of ten, in ms) giving about eight ticks.
double tick_spacing(double span_ms) {
  const double raw = span_ms / 8;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0}) {
    if (factor * magnitude >= raw) return factor * magnitude;
  }
  return 10 * magnitude;
}

void write_axis(std::ostream& out, const Frame& frame, double y) {
  const double span_ms = (frame.t1 - frame.t0) * 1e3;
  const double spacing = tick_spacing(span_ms);
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(spacing))));
  out << "  " << line(frame.plot_left, y, frame.plot_right, y) << "\n";
  for (double ms = 0; ms <= span_ms + 1e-9; ms += spacing) {
    const double x = frame.x(frame.t0 + ms / 1e3);
    out << "  " << line(x, y, x, y + 5) << text(x, y + 20, "sub mid", number(ms, decimals)) << "\n";
  }
  out << "  "
      << text((frame.plot_left + frame.plot_right) / 2, y + 40, "sub mid",
              "time since the step's first event (ms)")
      << "\n";
}

// What the marks mean, then (when they fit on one line) which colour is which micro-batch.
void write_legend(std::ostream& out, const Frame& frame, double y, int num_microbatches) {
  double x = frame.plot_left;
  auto item = [&](double mark_y, double mark_height, const std::string& classes,
                  const std::string& meaning) {
    out << "  " << rect(x, mark_y, 22, mark_height, classes) << "/>" << text(x + 28, y, "", meaning)
        << "\n";
    x += 28 + kCharWidth * text_length(meaning) + 28;
  };
  item(y - 12, 16, "box f0", "forward F");
  item(y - 12, 16, "box b0", "backward B");
  item(y - 4, kMarkHeight, "comm", "communication");
  item(y - 12, 16, "lane outlined", "idle (the bubble)");

  constexpr double kPitch = 42;
  if (num_microbatches * kPitch > frame.plot_right - frame.plot_left) return;
  out << "  " << text(frame.plot_left - 12, y + 30, "end", "micro-batch") << "\n";
  for (int mb = 0; mb < num_microbatches; ++mb) {
    const double left = frame.plot_left + kPitch * mb;
    const std::string colour = std::to_string(mb % kColours);
    out << "  " << rect(left, y + 18, 11, 16, "box f" + colour) << "/>"
        << rect(left + 11, y + 18, 11, 16, "box b" + colour) << "/>"
        << text(left + 26, y + 30, "code", std::to_string(mb)) << "\n";
  }
}

}  // namespace

void write_timeline_svg(std::ostream& out, const std::vector<TimelineEvent>& events, int step,
                        const TimelineStyle& style) {
  std::vector<TimelineEvent> shown;
  std::copy_if(events.begin(), events.end(), std::back_inserter(shown),
               [step](const TimelineEvent& event) { return event.step == step; });
  const Frame frame = frame_of(shown, style);
  const double axis_y = frame.rows_bottom() + 8;
  const double legend_y = axis_y + 72;
  const double height = legend_y + 50;
  write_header(out, height, style);
  write_lanes(out, shown, frame, style);
  for (const TimelineEvent& event : shown) {
    if (is_compute(event)) {
      write_box(out, event, frame);
    } else {
      write_mark(out, event, frame);
    }
  }
  write_axis(out, frame, axis_y);
  write_legend(out, frame, legend_y, style.num_microbatches);
  out << "</svg>\n";
}

}  // namespace dtk
