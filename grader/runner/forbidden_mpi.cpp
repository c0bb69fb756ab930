// The MPI functions the runner watches. The runner executable defines them, so the dynamic
// linker binds the student library's calls here first (and the Communicator's, compiled into
// the runner); each one reports the call unless the manifest allows it, then does what was
// asked through the profiling interface (PMPI_*), so the test still runs to its end and only
// the judge decides. Which calls are allowed is the manifest's decision alone; this file only
// lists the calls that can be watched. The symbol audit catches direct PMPI_* calls.
#include <mpi.h>

#include <dtk/communicator.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "forbidden_mpi.hpp"

namespace dtk::grade {
namespace {

using Rules = std::map<std::string, std::set<std::string>>;
Rules& mpi_rules() {
  static Rules by_function;
  return by_function;
}
Rules& communicator_rules() {
  static Rules by_function;
  return by_function;
}

const std::set<std::string>* current_mpi_rules = nullptr;           // the function under test's
const std::set<std::string>* current_communicator_rules = nullptr;  // likewise
std::string current_function;

// The student call running now, if any, and where its bytes go: process-wide, since a student
// call may start threads of its own (the runner's main thread waits meanwhile).
std::atomic<bool> in_student_call{false};
Traffic* student_traffic = nullptr;
std::mutex traffic_mutex;

bool is_allowed_mpi_call(const char* call) {
  return current_mpi_rules != nullptr && current_mpi_rules->count(call) != 0;
}

// The Communicator call that makes MPI call `call` (communicator.cpp), or "".
std::string communicator_call_of(const std::string& call) {
  static const std::map<std::string, std::string> calls = {
      {"MPI_Send", "Send"},
      {"MPI_Recv", "Recv"},
      {"MPI_Sendrecv", "Sendrecv"},
      {"MPI_Isend", "Isend"},
      {"MPI_Irecv", "Irecv"},
      {"MPI_Barrier", "Barrier"},
      {"MPI_Allreduce", "Allreduce"},
      {"MPI_Allgather", "Allgather"},
      {"MPI_Reduce_scatter_block", "Reduce_scatter"},
      {"MPI_Alltoall", "Alltoall"},
      {"MPI_Alltoallv", "Alltoallv"},
      {"MPI_Comm_split", "Split"}};
  const auto found = calls.find(call);
  return found == calls.end() ? "" : found->second;
}

int own_rank(MPI_Comm comm) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  return rank;
}

int ranks_of(MPI_Comm comm) {
  int size = 1;
  PMPI_Comm_size(comm, &size);
  return size;
}

std::uint64_t bytes_of(long long count, MPI_Datatype type) {
  int size = 0;
  PMPI_Type_size(type, &size);
  return count > 0 && size > 0 ? static_cast<std::uint64_t>(count) * size : 0;
}

// The element type's name, as Traffic keys it.
std::string type_name(MPI_Datatype type) {
  if (type == MPI_FLOAT) return "float";
  if (type == MPI_DOUBLE) return "double";
  if (type == MPI_INT32_T || type == MPI_INT) return "int32";
  if (type == MPI_INT64_T || type == MPI_LONG || type == MPI_LONG_LONG) return "int64";
  return "other";
}

// Adds bytes a student call sent to, and received from, other ranks.
void count(MPI_Datatype type, std::uint64_t sent, std::uint64_t received) {
  if (!in_student_call || (sent == 0 && received == 0)) return;
  const std::lock_guard<std::mutex> lock(traffic_mutex);
  if (student_traffic == nullptr) return;
  const std::string name = type_name(type);
  student_traffic->sent_by_type[name] += sent;
  student_traffic->received_by_type[name] += received;
}

void count_sent(MPI_Comm comm, int to, int n, MPI_Datatype type) {
  if (to != MPI_PROC_NULL && to != own_rank(comm)) count(type, bytes_of(n, type), 0);
}

void count_received(MPI_Comm comm, const MPI_Status& status, MPI_Datatype type) {
  if (status.MPI_SOURCE == MPI_PROC_NULL || status.MPI_SOURCE == own_rank(comm)) return;
  int n = 0;
  PMPI_Get_count(&status, type, &n);
  if (n != MPI_UNDEFINED) count(type, 0, bytes_of(n, type));
}

// The receives posted by Irecv and not yet completed, with what their completion counts: a
// message's length is known only then. Keyed by the MPI request, which MPI_Wait and MPI_Test
// reset to MPI_REQUEST_NULL once it completes.
struct PendingReceive {
  MPI_Comm comm;
  MPI_Datatype type;
};
std::map<MPI_Request, PendingReceive>& pending_receives() {
  static std::map<MPI_Request, PendingReceive> by_request;
  return by_request;
}
std::mutex pending_mutex;

void remember_receive(MPI_Request request, MPI_Comm comm, MPI_Datatype type) {
  const std::lock_guard<std::mutex> lock(pending_mutex);
  pending_receives()[request] = {comm, type};
}

// Called with the request as it was before MPI_Wait or MPI_Test completed it.
void count_completed(MPI_Request request, const MPI_Status& status) {
  PendingReceive receive{};
  {
    const std::lock_guard<std::mutex> lock(pending_mutex);
    const auto found = pending_receives().find(request);
    if (found == pending_receives().end()) return;  // an Isend: counted when posted
    receive = found->second;
    pending_receives().erase(found);
  }
  count_received(receive.comm, status, receive.type);
}

// The events of student calls, while a check records them (MpiEventRecording), and each request
// in flight's tag and posting number, kept from one recording to the next (a request posted in
// one student call is tested in the next). Keyed by where the caller keeps its MPI_Request, not
// by the handle: Open MPI hands every small send that completed at once the same handle.
std::vector<MpiEvent>* event_log = nullptr;
std::map<const MPI_Request*, std::pair<int, std::uint64_t>> posted_requests;
std::uint64_t postings = 0;
std::mutex events_mutex;

void log_event(MpiEvent event) {
  if (!in_student_call) return;
  const std::lock_guard<std::mutex> lock(events_mutex);
  if (event_log != nullptr) event_log->push_back(std::move(event));
}

void log_posted(const MPI_Request* request, int tag, bool send, int peer) {
  if (!in_student_call) return;
  const std::lock_guard<std::mutex> lock(events_mutex);
  if (event_log == nullptr) return;
  posted_requests[request] = {tag, ++postings};
  MpiEvent event;
  event.kind = MpiEvent::Kind::post;
  event.tag = tag;
  event.request = postings;
  event.send = send;
  event.peer = peer;
  event_log->push_back(event);
}

// A test or wait of the request kept at `request` (completed: whether it completed).
void log_completion(const MPI_Request* request, MpiEvent::Kind kind, bool completed) {
  if (!in_student_call) return;
  const std::lock_guard<std::mutex> lock(events_mutex);
  const auto found = posted_requests.find(request);
  if (event_log == nullptr || found == posted_requests.end()) return;
  MpiEvent event;
  event.kind = kind;
  event.tag = found->second.first;
  event.request = found->second.second;
  event.completed = completed;
  event_log->push_back(event);
  if (completed) posted_requests.erase(found);
}

// A collective's bytes, by the Communicator's estimates: what a rank sends and, rings being
// symmetric, receives.
void count_collective(MPI_Comm comm, dtk::Collective collective, long long n, MPI_Datatype type) {
  const std::uint64_t bytes = dtk::estimated_bytes_sent(
      collective, static_cast<std::uint64_t>(ranks_of(comm)), bytes_of(n, type));
  count(type, bytes, bytes);
}

// A broadcast from `root`: it sends the buffer to each other rank, which receives it once.
void count_broadcast(MPI_Comm comm, int root, int n, MPI_Datatype type) {
  const std::uint64_t bytes = bytes_of(n, type);
  if (own_rank(comm) == root) {
    count(type, static_cast<std::uint64_t>(ranks_of(comm) - 1) * bytes, 0);
  } else {
    count(type, 0, bytes);
  }
}

// An Alltoallv's blocks for, and from, the other ranks.
void count_alltoallv(MPI_Comm comm, const int send_counts[], MPI_Datatype send_type,
                     const int recv_counts[], MPI_Datatype recv_type) {
  const int p = ranks_of(comm), me = own_rank(comm);
  std::uint64_t sent = 0, received = 0;
  for (int q = 0; q < p; ++q) {
    if (q == me) continue;
    sent += bytes_of(send_counts[q], send_type);
    received += bytes_of(recv_counts[q], recv_type);
  }
  count(send_type, sent, received);
}

void watch(const char* call, const void* return_address) {
  if (!is_allowed_mpi_call(call)) report_forbidden_call(call, return_address);
  const std::string name = call;
  if (name != "MPI_Isend" && name != "MPI_Irecv") {  // logged once posted (log_posted)
    MpiEvent event;
    event.call = name;
    log_event(std::move(event));
  }
}

}  // namespace

namespace {

std::uint64_t total(const std::map<std::string, std::uint64_t>& by_type, const std::string& type) {
  std::uint64_t sum = 0;
  for (const auto& [name, bytes] : by_type) {
    if (type.empty() || name == type) sum += bytes;
  }
  return sum;
}

}  // namespace

std::uint64_t Traffic::sent(const std::string& type) const { return total(sent_by_type, type); }

std::uint64_t Traffic::received(const std::string& type) const {
  return total(received_by_type, type);
}

void Traffic::add(const Traffic& other) {
  for (const auto& [type, bytes] : other.sent_by_type) sent_by_type[type] += bytes;
  for (const auto& [type, bytes] : other.received_by_type) received_by_type[type] += bytes;
}

StudentCall::StudentCall(Traffic& traffic) {
  const std::lock_guard<std::mutex> lock(traffic_mutex);
  student_traffic = &traffic;
  in_student_call = true;
}

StudentCall::~StudentCall() {
  const std::lock_guard<std::mutex> lock(traffic_mutex);
  in_student_call = false;
  student_traffic = nullptr;
}

MpiEventRecording::MpiEventRecording(std::vector<MpiEvent>& log) {
  const std::lock_guard<std::mutex> lock(events_mutex);
  event_log = &log;
}

void mark_event(MpiEvent::Kind kind, int tag) {
  MpiEvent event;
  event.kind = kind;
  event.tag = tag;
  log_event(std::move(event));
}

MpiEventRecording::~MpiEventRecording() {
  const std::lock_guard<std::mutex> lock(events_mutex);
  event_log = nullptr;
}

void allow_calls(Rules mpi_by_function, Rules communicator_by_function) {
  mpi_rules() = std::move(mpi_by_function);
  communicator_rules() = std::move(communicator_by_function);
}

void apply_rules_of(const std::string& function) {
  const auto mpi = mpi_rules().find(function);
  current_mpi_rules = mpi == mpi_rules().end() ? nullptr : &mpi->second;
  const auto communicator = communicator_rules().find(function);
  current_communicator_rules =
      communicator == communicator_rules().end() ? nullptr : &communicator->second;
  current_function = function;
}

std::string forbidden_communicator_call(const char* call) {
  if (!in_student_call || current_communicator_rules == nullptr) return "";
  const std::string communicator = communicator_call_of(call);
  if (communicator.empty() || current_communicator_rules->count(communicator)) return "";
  return "Communicator::" + communicator;
}

const std::string& function_under_test() { return current_function; }

}  // namespace dtk::grade

#define DTK_FORBID(name, params, args)                            \
  extern "C" int MPI_##name params {                              \
    dtk::grade::watch("MPI_" #name, __builtin_return_address(0)); \
    return PMPI_##name args;                                      \
  }

using Buf = const void*;
using Dt = MPI_Datatype;

// Point to point: what the Communicator's Send, Recv and Sendrecv use also counts the bytes.
extern "C" int MPI_Send(Buf b, int n, Dt t, int to, int tag, MPI_Comm c) {
  dtk::grade::watch("MPI_Send", __builtin_return_address(0));
  const int error = PMPI_Send(b, n, t, to, tag, c);
  if (error == MPI_SUCCESS) dtk::grade::count_sent(c, to, n, t);
  return error;
}
extern "C" int MPI_Recv(void* b, int n, Dt t, int from, int tag, MPI_Comm c, MPI_Status* s) {
  dtk::grade::watch("MPI_Recv", __builtin_return_address(0));
  MPI_Status own;
  MPI_Status* status = s == MPI_STATUS_IGNORE ? &own : s;
  const int error = PMPI_Recv(b, n, t, from, tag, c, status);
  if (error == MPI_SUCCESS) dtk::grade::count_received(c, *status, t);
  return error;
}
extern "C" int MPI_Sendrecv(Buf sb, int sn, Dt st, int to, int stag, void* rb, int rn, Dt rt,
                            int from, int rtag, MPI_Comm c, MPI_Status* s) {
  dtk::grade::watch("MPI_Sendrecv", __builtin_return_address(0));
  MPI_Status own;
  MPI_Status* status = s == MPI_STATUS_IGNORE ? &own : s;
  const int error = PMPI_Sendrecv(sb, sn, st, to, stag, rb, rn, rt, from, rtag, c, status);
  if (error == MPI_SUCCESS) {
    dtk::grade::count_sent(c, to, sn, st);
    dtk::grade::count_received(c, *status, rt);
  }
  return error;
}
DTK_FORBID(Ssend, (Buf b, int n, Dt t, int to, int tag, MPI_Comm c), (b, n, t, to, tag, c))
DTK_FORBID(Bsend, (Buf b, int n, Dt t, int to, int tag, MPI_Comm c), (b, n, t, to, tag, c))
DTK_FORBID(Rsend, (Buf b, int n, Dt t, int to, int tag, MPI_Comm c), (b, n, t, to, tag, c))
// Non-blocking: Isend counts when posted, Irecv when MPI_Wait or MPI_Test completes it (the
// calls the Communicator's Request makes; they move no data of their own, so they are not
// watched).
extern "C" int MPI_Isend(Buf b, int n, Dt t, int to, int tag, MPI_Comm c, MPI_Request* r) {
  dtk::grade::watch("MPI_Isend", __builtin_return_address(0));
  const int error = PMPI_Isend(b, n, t, to, tag, c, r);
  if (error == MPI_SUCCESS) {
    dtk::grade::count_sent(c, to, n, t);
    dtk::grade::log_posted(r, tag, /*send=*/true, to);
  }
  return error;
}
extern "C" int MPI_Irecv(void* b, int n, Dt t, int from, int tag, MPI_Comm c, MPI_Request* r) {
  dtk::grade::watch("MPI_Irecv", __builtin_return_address(0));
  const int error = PMPI_Irecv(b, n, t, from, tag, c, r);
  if (error == MPI_SUCCESS) {
    dtk::grade::remember_receive(*r, c, t);
    dtk::grade::log_posted(r, tag, /*send=*/false, from);
  }
  return error;
}
extern "C" int MPI_Wait(MPI_Request* r, MPI_Status* s) {
  const MPI_Request request = *r;
  MPI_Status own;
  MPI_Status* status = s == MPI_STATUS_IGNORE ? &own : s;
  const int error = PMPI_Wait(r, status);
  if (error == MPI_SUCCESS) {
    dtk::grade::count_completed(request, *status);
    dtk::grade::log_completion(r, dtk::grade::MpiEvent::Kind::wait, true);
  }
  return error;
}
extern "C" int MPI_Test(MPI_Request* r, int* done, MPI_Status* s) {
  const MPI_Request request = *r;
  MPI_Status own;
  MPI_Status* status = s == MPI_STATUS_IGNORE ? &own : s;
  const int error = PMPI_Test(r, done, status);
  if (error == MPI_SUCCESS && *done) dtk::grade::count_completed(request, *status);
  if (error == MPI_SUCCESS) {
    dtk::grade::log_completion(r, dtk::grade::MpiEvent::Kind::test, *done != 0);
  }
  return error;
}
DTK_FORBID(Issend, (Buf b, int n, Dt t, int to, int tag, MPI_Comm c, MPI_Request* r),
           (b, n, t, to, tag, c, r))
DTK_FORBID(Sendrecv_replace,
           (void* b, int n, Dt t, int to, int stag, int from, int rtag, MPI_Comm c, MPI_Status* s),
           (b, n, t, to, stag, from, rtag, c, s))
DTK_FORBID(Probe, (int from, int tag, MPI_Comm c, MPI_Status* s), (from, tag, c, s))
DTK_FORBID(Iprobe, (int from, int tag, MPI_Comm c, int* f, MPI_Status* s), (from, tag, c, f, s))
DTK_FORBID(Send_init, (Buf b, int n, Dt t, int to, int tag, MPI_Comm c, MPI_Request* r),
           (b, n, t, to, tag, c, r))
DTK_FORBID(Recv_init, (void* b, int n, Dt t, int from, int tag, MPI_Comm c, MPI_Request* r),
           (b, n, t, from, tag, c, r))

// Collectives. Assignment 1 allows the first ones; Part 7 builds them from point-to-point calls.
// The collectives a part may allow also count their bytes (count_collective).
#define DTK_COUNTED(name, params, args, counting)                 \
  extern "C" int MPI_##name params {                              \
    dtk::grade::watch("MPI_" #name, __builtin_return_address(0)); \
    const int error = PMPI_##name args;                           \
    if (error == MPI_SUCCESS) counting;                           \
    return error;                                                 \
  }

using dtk::Collective;
using dtk::grade::count_collective;

DTK_COUNTED(Allreduce, (Buf sb, void* rb, int n, Dt t, MPI_Op op, MPI_Comm c),
            (sb, rb, n, t, op, c), count_collective(c, Collective::allreduce, n, t))
DTK_COUNTED(Allgather, (Buf sb, int sn, Dt st, void* rb, int rn, Dt rt, MPI_Comm c),
            (sb, sn, st, rb, rn, rt, c), count_collective(c, Collective::allgather, sn, st))
DTK_COUNTED(Reduce_scatter_block, (Buf sb, void* rb, int n, Dt t, MPI_Op op, MPI_Comm c),
            (sb, rb, n, t, op, c), count_collective(c, Collective::reduce_scatter, n, t))
DTK_COUNTED(Reduce_scatter, (Buf sb, void* rb, const int n[], Dt t, MPI_Op op, MPI_Comm c),
            (sb, rb, n, t, op, c),
            count_collective(c, Collective::reduce_scatter, n[dtk::grade::own_rank(c)], t))
DTK_FORBID(Barrier, (MPI_Comm c), (c))
// A broadcast a manifest allows moves bytes too: the root sends its buffer to every other rank.
DTK_COUNTED(Bcast, (void* b, int n, Dt t, int root, MPI_Comm c), (b, n, t, root, c),
            dtk::grade::count_broadcast(c, root, n, t))
DTK_FORBID(Gather, (Buf sb, int sn, Dt st, void* rb, int rn, Dt rt, int root, MPI_Comm c),
           (sb, sn, st, rb, rn, rt, root, c))
DTK_FORBID(Gatherv,
           (Buf sb, int sn, Dt st, void* rb, const int rn[], const int d[], Dt rt, int root,
            MPI_Comm c),
           (sb, sn, st, rb, rn, d, rt, root, c))
DTK_FORBID(Scatter, (Buf sb, int sn, Dt st, void* rb, int rn, Dt rt, int root, MPI_Comm c),
           (sb, sn, st, rb, rn, rt, root, c))
DTK_FORBID(Scatterv,
           (Buf sb, const int sn[], const int d[], Dt st, void* rb, int rn, Dt rt, int root,
            MPI_Comm c),
           (sb, sn, d, st, rb, rn, rt, root, c))
DTK_FORBID(Allgatherv,
           (Buf sb, int sn, Dt st, void* rb, const int rn[], const int d[], Dt rt, MPI_Comm c),
           (sb, sn, st, rb, rn, d, rt, c))
DTK_COUNTED(Alltoall, (Buf sb, int sn, Dt st, void* rb, int rn, Dt rt, MPI_Comm c),
            (sb, sn, st, rb, rn, rt, c),
            count_collective(c, Collective::alltoall,
                             static_cast<long long>(sn) * dtk::grade::ranks_of(c), st))
DTK_COUNTED(Alltoallv,
            (Buf sb, const int sn[], const int sd[], Dt st, void* rb, const int rn[],
             const int rd[], Dt rt, MPI_Comm c),
            (sb, sn, sd, st, rb, rn, rd, rt, c), dtk::grade::count_alltoallv(c, sn, st, rn, rt))
DTK_FORBID(Reduce, (Buf sb, void* rb, int n, Dt t, MPI_Op op, int root, MPI_Comm c),
           (sb, rb, n, t, op, root, c))
DTK_FORBID(Scan, (Buf sb, void* rb, int n, Dt t, MPI_Op op, MPI_Comm c), (sb, rb, n, t, op, c))
DTK_FORBID(Exscan, (Buf sb, void* rb, int n, Dt t, MPI_Op op, MPI_Comm c), (sb, rb, n, t, op, c))

// Non-blocking collectives.
DTK_FORBID(Ibcast, (void* b, int n, Dt t, int root, MPI_Comm c, MPI_Request* r),
           (b, n, t, root, c, r))
DTK_FORBID(Iallreduce, (Buf sb, void* rb, int n, Dt t, MPI_Op op, MPI_Comm c, MPI_Request* r),
           (sb, rb, n, t, op, c, r))
DTK_FORBID(Iallgather, (Buf sb, int sn, Dt st, void* rb, int rn, Dt rt, MPI_Comm c, MPI_Request* r),
           (sb, sn, st, rb, rn, rt, c, r))
DTK_FORBID(Ireduce_scatter_block,
           (Buf sb, void* rb, int n, Dt t, MPI_Op op, MPI_Comm c, MPI_Request* r),
           (sb, rb, n, t, op, c, r))
DTK_FORBID(Ireduce,
           (Buf sb, void* rb, int n, Dt t, MPI_Op op, int root, MPI_Comm c, MPI_Request* r),
           (sb, rb, n, t, op, root, c, r))
DTK_FORBID(Igather,
           (Buf sb, int sn, Dt st, void* rb, int rn, Dt rt, int root, MPI_Comm c, MPI_Request* r),
           (sb, sn, st, rb, rn, rt, root, c, r))
DTK_FORBID(Ialltoall, (Buf sb, int sn, Dt st, void* rb, int rn, Dt rt, MPI_Comm c, MPI_Request* r),
           (sb, sn, st, rb, rn, rt, c, r))
DTK_FORBID(Ibarrier, (MPI_Comm c, MPI_Request* r), (c, r))

// Communicators (the Communicator's Split).
DTK_FORBID(Comm_split, (MPI_Comm c, int color, int key, MPI_Comm* out), (c, color, key, out))

// One-sided communication starts with a window; processes can also be spawned.
DTK_FORBID(Win_create, (void* b, MPI_Aint n, int u, MPI_Info i, MPI_Comm c, MPI_Win* w),
           (b, n, u, i, c, w))
DTK_FORBID(Win_allocate, (MPI_Aint n, int u, MPI_Info i, MPI_Comm c, void* b, MPI_Win* w),
           (n, u, i, c, b, w))
DTK_FORBID(Win_allocate_shared, (MPI_Aint n, int u, MPI_Info i, MPI_Comm c, void* b, MPI_Win* w),
           (n, u, i, c, b, w))
DTK_FORBID(Win_create_dynamic, (MPI_Info i, MPI_Comm c, MPI_Win* w), (i, c, w))
DTK_FORBID(Comm_spawn,
           (const char* cmd, char* argv[], int n, MPI_Info i, int root, MPI_Comm c, MPI_Comm* ic,
            int errs[]),
           (cmd, argv, n, i, root, c, ic, errs))
