// Kit self-test of the timeline behind unified_train's --trace and --timeline
// (include/dtk/trace/timeline.hpp): the Chrome trace and the SVG of a simulated pipeline run
// hold its events and its schedule's order, and the recorder sees every rank's Communicator
// calls with world ranks. Rank 0 also leaves the SVGs it drew in the working directory
// (timeline_1f1b.svg, timeline_gpipe.svg), for kit_timeline_svg_wellformed to check with xmllint.
//   mpirun -n 2 build/tests/kit/kit_timeline
#include "dtk_test.hpp"

#include <dtk/pipeline.hpp>
#include <dtk/trace/timeline.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int kRanks = 2;
using Schedule = std::vector<dtk::PipeStep>;
using ScheduleOf = Schedule (*)(int stage, int num_stages, int num_microbatches);

// One step of a pipeline run as an ideal machine would run it: a forward takes 1 ms, a backward
// 2 ms, a message arrives 0.1 ms after its Send starts, and a stage waits in Recv for its input.
// Stage s is rank s; the step starts `start` seconds into the run.
class SimulatedStep {
 public:
  SimulatedStep(ScheduleOf schedule_of, int stages, int m, int step, double start)
      : stages_(stages), step_(step), next_(stages, 0), free_at_(stages, start) {
    for (int s = 0; s < stages; ++s) schedules_.push_back(schedule_of(s, stages, m));
    for (dtk::PipeOp op : {dtk::PipeOp::Forward, dtk::PipeOp::Backward}) {
      arrival_[op].assign(stages, std::vector<double>(m, -1));
    }
    for (int mb = 0; mb < m; ++mb) arrival_[dtk::PipeOp::Forward][0][mb] = start;
  }

  // Runs every stage's next op whose input is there, until all ops ran.
  std::vector<dtk::TimelineEvent> run() {
    for (bool progress = true; progress;) {
      progress = false;
      for (int s = 0; s < stages_; ++s) progress = run_next_op(s) || progress;
    }
    return events_;
  }

 private:
  bool run_next_op(int s) {
    constexpr double kForward = 1e-3, kBackward = 2e-3, kMessage = 1e-4;
    if (next_[s] == schedules_[s].size()) return false;
    const dtk::PipeStep op = schedules_[s][next_[s]];
    const bool forward = op.op == dtk::PipeOp::Forward, last = s == stages_ - 1;
    const bool receives = forward ? s > 0 : !last, sends = forward ? !last : s > 0;
    // The last stage's backward starts from its own forward's output: nothing to wait for.
    const double ready = forward || !last ? arrival_[op.op][s][op.microbatch] : free_at_[s];
    if (ready < 0) return false;

    const double begin = std::max(free_at_[s], ready);
    if (receives) add(s, -1, "Recv from " + std::to_string(forward ? s - 1 : s + 1), begin);
    const double end = begin + (forward ? kForward : kBackward);
    add(s, op.microbatch, (forward ? "F" : "B") + std::to_string(op.microbatch), end);
    if (sends) {
      const int to = forward ? s + 1 : s - 1;
      add(s, -1, "Send to " + std::to_string(to), end + kMessage);
      arrival_[op.op][to][op.microbatch] = end + kMessage;
    }
    ++next_[s];
    return true;
  }

  // Stage s's next event: from the end of its previous one (a Recv waits from then) to `end`.
  void add(int s, int mb, std::string name, double end) {
    const dtk::WorkKind kind = name[0] == 'F'   ? dtk::WorkKind::Forward
                               : name[0] == 'B' ? dtk::WorkKind::Backward
                                                : dtk::WorkKind::Communication;
    events_.push_back({s, step_, kind, mb, std::move(name), free_at_[s], end});
    free_at_[s] = end;
  }

  int stages_, step_;
  std::vector<Schedule> schedules_;
  std::vector<std::size_t> next_;  // per stage: its schedule's next op
  std::vector<double> free_at_;    // per stage: when its last event ended
  // arrival_[op][stage][mb]: when the input of that op is there (< 0: not computed yet).
  std::map<dtk::PipeOp, std::vector<std::vector<double>>> arrival_;
  std::vector<dtk::TimelineEvent> events_;
};

std::vector<std::string> stage_labels(int stages) {
  std::vector<std::string> labels;
  for (int s = 0; s < stages; ++s) {
    labels.push_back("rank " + std::to_string(s) + " · stage " + std::to_string(s));
  }
  return labels;
}

// Steps 1 and 2 of a run; step 2 begins 1 s after step 1.
std::vector<dtk::TimelineEvent> two_steps(ScheduleOf schedule_of, int stages, int m) {
  std::vector<dtk::TimelineEvent> events = SimulatedStep(schedule_of, stages, m, 1, 0.0).run();
  for (const auto& event : SimulatedStep(schedule_of, stages, m, 2, 1.0).run()) {
    events.push_back(event);
  }
  return events;
}

// The F/B boxes of an SVG, read back: per rank, "F0 F1 B0 ..." in the order of their x.
std::map<int, std::string> box_order(const std::string& svg) {
  const std::regex box(
      "<rect x=\"([0-9.]+)\"[^>]* data-rank=\"([0-9]+)\" data-kind=\"([FB])\" "
      "data-mb=\"([0-9]+)\"");
  std::map<int, std::vector<std::pair<double, std::string>>> boxes;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), box); it != std::sregex_iterator();
       ++it) {
    boxes[std::stoi((*it)[2])].emplace_back(std::stod((*it)[1]), (*it)[3].str() + (*it)[4].str());
  }
  std::map<int, std::string> order;
  for (auto& [rank, row] : boxes) {
    std::stable_sort(row.begin(), row.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [x, name] : row) order[rank] += (order[rank].empty() ? "" : " ") + name;
  }
  return order;
}

std::string schedule_text(const Schedule& schedule) {
  std::string text;
  for (const dtk::PipeStep& step : schedule) {
    text += (text.empty() ? "" : " ") + std::string(step.op == dtk::PipeOp::Forward ? "F" : "B") +
            std::to_string(step.microbatch);
  }
  return text;
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

}  // namespace

TEST_CASE("kit | write_chrome_trace: JSON, one named process per rank, X events in µs", "[kit]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    const auto events = two_steps(dtk::one_f_one_b_schedule, 2, 4);
    std::ostringstream text;
    dtk::write_chrome_trace(text, events, stage_labels(2));
    nlohmann::json trace;
    try {
      trace = nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::parse_error& e) {
      check.that(false, std::string("the trace is not JSON: ") + e.what());
      return;
    }
    check.that(trace.value("displayTimeUnit", "") == "ms", "displayTimeUnit is not \"ms\"");
    std::map<int, std::string> process_names;
    std::vector<nlohmann::json> complete;
    for (const auto& event : trace.at("traceEvents")) {
      if (event.at("ph") == "X") complete.push_back(event);
      if (event.at("ph") == "M" && event.at("name") == "process_name") {
        process_names[event.at("pid")] = event.at("args").at("name");
      }
    }
    check.that(process_names ==
                   std::map<int, std::string>{{0, "rank 0 · stage 0"}, {1, "rank 1 · stage 1"}},
               "process_name metadata: not one per rank with its label");
    check.equal("X events", events.size(), complete.size());
    for (std::size_t i = 0; i < std::min(events.size(), complete.size()); ++i) {
      const dtk::TimelineEvent& want = events[i];
      const nlohmann::json& got = complete[i];
      const bool compute = want.kind != dtk::WorkKind::Communication;
      const bool same =
          got.at("name") == want.name && got.at("pid") == want.rank &&
          got.at("tid") == (compute ? 0 : 1) &&
          std::abs(got.at("ts").get<double>() - want.begin * 1e6) < 1e-6 &&
          std::abs(got.at("dur").get<double>() - (want.end - want.begin) * 1e6) < 1e-6 &&
          got.at("args").at("step") == want.step &&
          got.at("cat") ==
              (compute ? (want.name[0] == 'F' ? "forward" : "backward") : "communication");
      check.that(same, "X event " + std::to_string(i) + " " + got.dump() + " is not " + want.name +
                           " of rank " + std::to_string(want.rank) + " from " +
                           std::to_string(want.begin * 1e6) + " µs");
    }
  });
}

TEST_CASE("kit | write_timeline_svg: one box per F/B of the step, each row in schedule order",
          "[kit]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    const int rank = dtk::Communicator().Get_rank();
    for (const auto& [name, schedule_of] : std::map<std::string, ScheduleOf>{
             {"1F1B", dtk::one_f_one_b_schedule}, {"GPipe", dtk::gpipe_schedule}}) {
      for (const auto& [stages, m] : std::vector<std::pair<int, int>>{{2, 4}, {4, 8}}) {
        const std::string title = name + ", " + std::to_string(stages) + " stages, " +
                                  std::to_string(m) + " micro-batches (simulated) — step 2";
        const std::string run = title + ": ";
        std::ostringstream picture;
        dtk::write_timeline_svg(picture, two_steps(schedule_of, stages, m), 2,
                                {title, stage_labels(stages), m});
        const std::string svg = picture.str();
        check.equal(run + "F/B boxes in step 2's picture", 2 * stages * m,
                    count_of(svg, "data-kind="));
        std::map<int, std::string> expected;
        for (int s = 0; s < stages; ++s) expected[s] = schedule_text(schedule_of(s, stages, m));
        const std::map<int, std::string> drawn = box_order(svg);
        for (int s = 0; s < stages; ++s) {
          const auto row = drawn.find(s);
          const std::string got = row == drawn.end() ? "(no boxes)" : row->second;
          check.that(got == expected[s], run + "row " + std::to_string(s) + " reads " + got +
                                             ", its schedule is " + expected[s]);
        }
        check.that(svg.find("<title>" + title + "</title>") != std::string::npos,
                   run + "the SVG has no <title> with the style's title");
        if (rank == 0 && stages == 4) {
          std::ofstream(name == "GPipe" ? "timeline_gpipe.svg" : "timeline_1f1b.svg") << svg;
        }
      }
    }
  });
}

TEST_CASE("kit | TimelineRecorder and gather_timeline: every rank's calls, with world ranks",
          "[kit]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int rank = world.Get_rank();
    // Comm ranks in the reverse of world ranks: the trace must translate them.
    dtk::Communicator reversed = world.Split(/*color=*/0, /*key=*/-rank);
    const int peer = 1 - reversed.Get_rank();
    xt::xtensor<double, 1> mine = xt::ones<double>({5}), theirs = xt::zeros<double>({5});
    std::vector<dtk::TimelineEvent> gathered;
    {
      world.Barrier();
      dtk::TimelineRecorder recorder(rank, MPI_Wtime());
      recorder.set_step(3);
      reversed.Sendrecv(mine, peer, theirs, peer);
      const double begin = MPI_Wtime();  // after the call: F0 sorts after it
      recorder.add(dtk::WorkKind::Forward, 0, "F0", begin, MPI_Wtime());
      recorder.set_recording(false);
      reversed.Sendrecv(mine, peer, theirs, peer);
      recorder.add(dtk::WorkKind::Backward, 0, "B0", begin, MPI_Wtime());
      check.equal("events recorded on this rank", 2, recorder.events().size());
      gathered = dtk::gather_timeline(recorder.events(), world);
    }
    check.equal("bytes counted with an observer", 2 * 5 * sizeof(double),
                reversed.total_bytes_transferred());
    if (rank != 0) {
      check.equal("events gathered on a rank other than 0", 0, gathered.size());
      return;
    }
    check.equal("events gathered on rank 0", 2 * kRanks, gathered.size());
    for (int r = 0; r < kRanks && gathered.size() == 2 * kRanks; ++r) {
      const dtk::TimelineEvent& call = gathered[2 * r];
      const dtk::TimelineEvent& work = gathered[2 * r + 1];
      const std::string peers = std::to_string(1 - r) + "/" + std::to_string(1 - r);
      check.that(call.rank == r && call.kind == dtk::WorkKind::Communication &&
                     call.name == "Sendrecv " + peers && call.bytes == 5 * sizeof(double) &&
                     call.step == 3,
                 "rank " + std::to_string(r) + "'s first event: " + call.name + " of rank " +
                     std::to_string(call.rank) + ", " + std::to_string(call.bytes) +
                     " bytes, step " + std::to_string(call.step) + "; expected Sendrecv " + peers +
                     " of 40 bytes, step 3");
      check.that(work.rank == r && work.kind == dtk::WorkKind::Forward && work.name == "F0" &&
                     work.microbatch == 0 && work.step == 3,
                 "rank " + std::to_string(r) + "'s second event: " + work.name + " of rank " +
                     std::to_string(work.rank) + "; expected F0 of micro-batch 0, step 3");
      check.that(0 <= call.begin && call.begin <= call.end && call.end <= work.end && work.end < 60,
                 "rank " + std::to_string(r) + "'s times are not seconds since the start, " +
                     "in order: " + std::to_string(call.begin) + ", " + std::to_string(call.end) +
                     ", " + std::to_string(work.end));
    }
  });
}
