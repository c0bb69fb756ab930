// What the runner watches of MPI at run time (PMPI interposition): the MPI calls a student's
// code makes outside the allowed ones, the Communicator calls it makes outside the allowed ones
// (a collective reached through a helper in another student file, say), and the bytes its
// calls move between ranks.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace dtk::grade {

// The MPI calls (allowed_mpi) and the Communicator calls (allowed_communicator) the manifest
// allows the code of each graded function, passed by dtk-grade as --allowed-mpi and
// --allowed-communicator FUNCTION=CALL,...: a watched call allowed to the function under test
// is forwarded without a record. Called once, before any test runs.
void allow_calls(std::map<std::string, std::set<std::string>> mpi_by_function,
                 std::map<std::string, std::set<std::string>> communicator_by_function);

// The test about to run checks `function`: its rules apply until the next call ("": no test
// runs, every trapped call is recorded... or ignored when the runner itself makes it).
void apply_rules_of(const std::string& function);

// What the student's calls of one test moved between this rank and the other ranks, counted
// where MPI is (in the interposed MPI functions below), whatever Communicator object, MPI
// communicator or thread carried it: point-to-point messages as MPI delivered them (a rank's
// messages to itself are not counted), collectives by the Communicator's estimates
// (estimated_bytes_sent; Alltoallv exactly, without the blocks a rank keeps). By element type
// ("float", "double", "int32", "int64", "other"), so that a check can judge its payload alone.
struct Traffic {
  std::map<std::string, std::uint64_t> sent_by_type, received_by_type;
  std::uint64_t sent(const std::string& type = "") const;  // "": every type
  std::uint64_t received(const std::string& type = "") const;
  void add(const Traffic& other);
};

// While one lives, a student call is running (on a thread of its own: student_thread.hpp):
// every Communicator call of the process, from any thread, is the student's, checked against
// the function's allowed_communicator, and every byte any thread moves between ranks goes to
// `traffic`. Outside one, the Communicator's calls are the runner's own. One at a time.
class StudentCall {
 public:
  explicit StudentCall(Traffic& traffic);
  ~StudentCall();
  StudentCall(const StudentCall&) = delete;
  StudentCall& operator=(const StudentCall&) = delete;
};

// One MPI call a student call made, as a check that judges the order of the messages sees it
// (Part 15: a bucket's reduction posted while the backward runs, requests tested between layers),
// or a mark of the check's own between them (the computation a student call called back).
struct MpiEvent {
  enum class Kind {
    post,      // an Isend or Irecv posted
    test,      // MPI_Test of a posted request: `completed` says whether it found it complete
    wait,      // MPI_Wait of a posted request
    blocking,  // any other watched call (Send, Recv, a collective, ...): it may wait
    begin,     // the check's mark (mark_event): its callback starts, `tag` says which call
    end        // the check's mark: that callback returns
  };
  Kind kind = Kind::blocking;
  int tag = -1;               // post, test, wait: the message's tag; begin, end: the mark's
  std::uint64_t request = 0;  // post, test, wait: which posting (1, 2, ... in posting order)
  bool send = false;          // post: an Isend (else an Irecv)
  int peer = -1;              // post: the destination's or source's rank in its communicator
  bool completed = false;     // test: found complete (wait: always complete)
  std::string call;           // blocking: the MPI function, e.g. "MPI_Send"
};

// While one lives, the MPI calls of student calls (from any thread) are appended to `log`. One
// at a time.
class MpiEventRecording {
 public:
  explicit MpiEventRecording(std::vector<MpiEvent>& log);
  ~MpiEventRecording();
  MpiEventRecording(const MpiEventRecording&) = delete;
  MpiEventRecording& operator=(const MpiEventRecording&) = delete;
};

// Appends a mark (kind begin or end) to the recording's log, between the MPI calls around it:
// called by a check's own code that a student call calls back. Nothing outside a student call.
void mark_event(MpiEvent::Kind kind, int tag);

// Inside a StudentCall: "Communicator::<call>" when MPI call `call`, made by the Communicator,
// is a Communicator call the function under test may not make; "" otherwise.
std::string forbidden_communicator_call(const char* call);

// The function whose rules apply now (apply_rules_of's).
const std::string& function_under_test();

// Called by every interposed MPI function the manifest does not allow, before it forwards to
// PMPI_*. Records the call in the current test's output unless the caller is the runner's own
// executable (the provided helpers, e.g. print_in_rank_order, use MPI_Gather; student code
// lives in libdtk_student.so) outside a StudentCall; inside one, the runner's Communicator
// calls are the student's, whichever thread makes them.
void report_forbidden_call(const char* call, const void* return_address);

}  // namespace dtk::grade
