// The MPI functions the runner watches. The runner executable defines them, so the dynamic
// linker binds the student library's calls here first; each one reports the call unless the
// manifest allows it, then does what was asked through the profiling interface (PMPI_*), so the
// test still runs to its end and only the judge decides. Which calls are allowed is the
// manifest's decision alone; this file only lists the calls that can be watched. The symbol
// audit catches direct PMPI_* calls.
#include <mpi.h>

#include <map>
#include <set>
#include <string>
#include <utility>

#include "forbidden_mpi.hpp"

namespace dtk::grade {
namespace {
std::map<std::string, std::set<std::string>>& rules() {
  static std::map<std::string, std::set<std::string>> by_function;
  return by_function;
}

const std::set<std::string>* current_rules = nullptr;  // the function under test's

bool is_allowed_mpi_call(const char* call) {
  return current_rules != nullptr && current_rules->count(call) != 0;
}
}  // namespace

void allow_mpi_calls(std::map<std::string, std::set<std::string>> by_function) {
  rules() = std::move(by_function);
}

void apply_rules_of(const std::string& function) {
  const auto found = rules().find(function);
  current_rules = found == rules().end() ? nullptr : &found->second;
}

}  // namespace dtk::grade

#define DTK_FORBID(name, params, args)                                              \
  extern "C" int MPI_##name params {                                                \
    if (!dtk::grade::is_allowed_mpi_call("MPI_" #name))                             \
      dtk::grade::report_forbidden_call("MPI_" #name, __builtin_return_address(0)); \
    return PMPI_##name args;                                                        \
  }

using Buf = const void*;
using Dt = MPI_Datatype;

// Point to point.
DTK_FORBID(Send, (Buf b, int n, Dt t, int to, int tag, MPI_Comm c), (b, n, t, to, tag, c))
DTK_FORBID(Ssend, (Buf b, int n, Dt t, int to, int tag, MPI_Comm c), (b, n, t, to, tag, c))
DTK_FORBID(Bsend, (Buf b, int n, Dt t, int to, int tag, MPI_Comm c), (b, n, t, to, tag, c))
DTK_FORBID(Rsend, (Buf b, int n, Dt t, int to, int tag, MPI_Comm c), (b, n, t, to, tag, c))
DTK_FORBID(Recv, (void* b, int n, Dt t, int from, int tag, MPI_Comm c, MPI_Status* s),
           (b, n, t, from, tag, c, s))
DTK_FORBID(Isend, (Buf b, int n, Dt t, int to, int tag, MPI_Comm c, MPI_Request* r),
           (b, n, t, to, tag, c, r))
DTK_FORBID(Issend, (Buf b, int n, Dt t, int to, int tag, MPI_Comm c, MPI_Request* r),
           (b, n, t, to, tag, c, r))
DTK_FORBID(Irecv, (void* b, int n, Dt t, int from, int tag, MPI_Comm c, MPI_Request* r),
           (b, n, t, from, tag, c, r))
DTK_FORBID(Sendrecv,
           (Buf sb, int sn, Dt st, int to, int stag, void* rb, int rn, Dt rt, int from, int rtag,
            MPI_Comm c, MPI_Status* s),
           (sb, sn, st, to, stag, rb, rn, rt, from, rtag, c, s))
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
DTK_FORBID(Allreduce, (Buf sb, void* rb, int n, Dt t, MPI_Op op, MPI_Comm c), (sb, rb, n, t, op, c))
DTK_FORBID(Allgather, (Buf sb, int sn, Dt st, void* rb, int rn, Dt rt, MPI_Comm c),
           (sb, sn, st, rb, rn, rt, c))
DTK_FORBID(Reduce_scatter_block, (Buf sb, void* rb, int n, Dt t, MPI_Op op, MPI_Comm c),
           (sb, rb, n, t, op, c))
DTK_FORBID(Reduce_scatter, (Buf sb, void* rb, const int n[], Dt t, MPI_Op op, MPI_Comm c),
           (sb, rb, n, t, op, c))
DTK_FORBID(Barrier, (MPI_Comm c), (c))
DTK_FORBID(Bcast, (void* b, int n, Dt t, int root, MPI_Comm c), (b, n, t, root, c))
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
DTK_FORBID(Alltoall, (Buf sb, int sn, Dt st, void* rb, int rn, Dt rt, MPI_Comm c),
           (sb, sn, st, rb, rn, rt, c))
DTK_FORBID(Alltoallv,
           (Buf sb, const int sn[], const int sd[], Dt st, void* rb, const int rn[], const int rd[],
            Dt rt, MPI_Comm c),
           (sb, sn, sd, st, rb, rn, rd, rt, c))
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
