// What each rank did when, for unified_train's --trace and --timeline: compute intervals the
// trainer marks (the forward and backward of each micro-batch) and every Communicator call, seen
// through set_communication_observer, so the trace shows the sends and receives made inside the
// student's functions too.
//
//   TimelineRecorder recorder(world.Get_rank(), start);   // start: MPI_Wtime() after a Barrier
//   recorder.set_step(1);
//   recorder.add(WorkKind::Forward, 0, "F0", begin, MPI_Wtime());
//   auto all = gather_timeline(recorder.events(), world);  // on world rank 0
//   write_chrome_trace(file, all, labels);                 // Perfetto, chrome://tracing
//   write_timeline_svg(svg, all, 1, {title, labels, m});   // the GPipe / 1F1B paper picture
#pragma once

#include "dtk/communicator.hpp"

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace dtk {

enum class WorkKind { Forward, Backward, Communication };

struct TimelineEvent {
  int rank = 0;  // world rank
  int step = 0;  // training step, from 1
  WorkKind kind = WorkKind::Forward;
  int microbatch = -1;        // Forward/Backward: the micro-batch; -1 for communication
  std::string name;           // "F3", "B3", "Send to 2", "Recv from 1", "Sendrecv 2/1", ...
  double begin = 0, end = 0;  // seconds since the run's common start
  std::size_t bytes = 0;      // communication: the bytes this rank sent (CommunicationCall's)
};

// Records this process's events: the compute intervals the caller adds and, while recording,
// every Communicator call of the process. One recorder at a time: it installs the process's
// communication observer and removes it when destroyed.
class TimelineRecorder {
 public:
  // start: the MPI_Wtime() all ranks agreed on (read right after a Barrier); events are kept in
  // seconds since then.
  TimelineRecorder(int world_rank, double start);
  ~TimelineRecorder();
  TimelineRecorder(const TimelineRecorder&) = delete;  // the observer points to this one
  TimelineRecorder& operator=(const TimelineRecorder&) = delete;

  // Events from now on belong to this step (step 0 until the first call: set-up).
  void set_step(int step);
  // Off: nothing is recorded, neither added nor observed (e.g. during evaluation). On at first.
  void set_recording(bool on);
  // One interval of work, begin and end read with MPI_Wtime().
  void add(WorkKind kind, int microbatch, std::string name, double begin_wtime, double end_wtime);
  const std::vector<TimelineEvent>& events() const;

 private:
  void observe(const CommunicationCall& call);

  int rank_;
  double start_;
  int step_ = 0;
  bool recording_ = true;
  std::vector<TimelineEvent> events_;
};

// Collective over `world`: every rank's events, on world rank 0, sorted by rank, then begin;
// the other ranks get none. Raw MPI on world.handle(), so that gathering the timeline neither
// counts bytes nor shows up in it.
std::vector<TimelineEvent> gather_timeline(const std::vector<TimelineEvent>& mine,
                                           const Communicator& world);

// The events in the Chrome Trace Event Format, which Perfetto and chrome://tracing open: one
// process per rank (pid = rank, named rank_labels[rank], e.g. "rank 2 · stage 1 · dp 0"),
// compute on its thread 0 and communication on its thread 1, one complete ("X") event per
// interval, time in microseconds.
void write_chrome_trace(std::ostream& out, const std::vector<TimelineEvent>& events,
                        const std::vector<std::string>& rank_labels);

struct TimelineStyle {
  std::string title;                    // e.g. "1F1B, 4 stages, 8 micro-batches — step 3"
  std::vector<std::string> row_labels;  // one per rank, top to bottom in rank order
  int num_microbatches = 1;             // for the colour scale
};

// A self-contained SVG of one step, drawn as the GPipe and 1F1B papers draw schedules: a row per
// rank, forward (light) and backward (dark) boxes in the colour of their micro-batch,
// communication as thin marks under them, idle time left as an empty lane (the bubble), a time
// axis in ms and a legend. Events of other steps are left out. Each F/B box is a <rect> with
// data-rank, data-kind ("F" or "B") and data-mb, so tests can read the picture back.
void write_timeline_svg(std::ostream& out, const std::vector<TimelineEvent>& events, int step,
                        const TimelineStyle& style);

}  // namespace dtk
