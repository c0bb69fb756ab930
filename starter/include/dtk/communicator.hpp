// Communicator: a thin wrapper around an MPI communicator that counts the bytes it sends.
//
// This is the only way your code talks to other ranks. It offers exactly the collectives the
// assignments need (Allreduce, Allgather, Reduce_scatter; Alltoall and Alltoallv for Part 12),
// Split to make sub-groups, point-to-point messages (Send, Recv, Sendrecv) to build
// collectives of your own (Part 7), and non-blocking ones (Isend, Irecv) that run while your
// code goes on (assignment 4).
//
// Buffers. `src` and `dst` are contiguous, row-major xtensor containers (xt::xtensor,
// xt::xarray) holding the same value type (float, double, std::int32_t or std::int64_t). `dst`
// must already have the right size: the Communicator never resizes it. Shapes do not matter to
// MPI, only element counts and memory order do: a (2, 3) tensor is sent as its 6 values in
// row-major order. Allreduce may take the same container as `src` and `dst` (done in place).
// A size mismatch throws std::invalid_argument naming the call and both sizes. (A std::vector
// of those types is a buffer too.)
//
// Byte accounting. Each call adds to total_bytes_transferred() an estimate of the bytes this
// rank sends, assuming the ring algorithms MPI libraries use for large messages. With p =
// Get_size() ranks and n = the byte size named below:
//   Allreduce       n = bytes of src   adds  2 * (p - 1) * n / p   (reduce-scatter + all-gather)
//   Allgather       n = bytes of src   adds  (p - 1) * n           (pass every block around)
//   Reduce_scatter  n = bytes of dst   adds  (p - 1) * n           (one block per step)
//   Alltoall        n = bytes of send  adds  (p - 1) * n / p       (every block but its own)
//   Alltoallv                          adds  the bytes of the blocks for the other ranks
//   Send, Isend     n = bytes sent     adds  n                     (Isend: when it is posted)
//   Sendrecv        n = bytes sent     adds  n                     (what it receives: nothing)
//   Recv, Irecv                        adds  0                     (the sender counts them)
// Integer division; a communicator of one rank sends nothing in a collective. The counter belongs
// to the communicator, not to the rank: copies of a Communicator share it (see below).
// estimated_bytes_sent below is the table's collectives as code.
//
// Copies. Copying a Communicator copies a handle: both copies use the same MPI communicator and
// the same byte counter. A communicator made by Split is freed once, when its last copy goes.
//
// Observing. set_communication_observer lets the kit see every call this process makes (the
// trace of unified_train --trace); it changes nothing about what the calls do.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

namespace dtk {

namespace detail {
// The MPI datatype of one element of type T (float, double, std::int32_t or std::int64_t).
template <class T>
MPI_Datatype mpi_datatype() {
  if constexpr (std::is_same_v<T, float>) {
    return MPI_FLOAT;
  } else if constexpr (std::is_same_v<T, double>) {
    return MPI_DOUBLE;
  } else if constexpr (std::is_same_v<T, std::int32_t>) {
    return MPI_INT32_T;
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return MPI_INT64_T;
  } else {
    static_assert(!sizeof(T), "Communicator buffers hold float, double, int32_t or int64_t");
  }
}

// Raw description of one buffer, so that the MPI calls live in communicator.cpp only. A buffer
// that is received into is described the same way (communicator.cpp writes through `data`).
struct Buffer {
  const void* data;
  std::size_t count;  // elements
  MPI_Datatype type;
  std::size_t element_bytes;
};

template <class S, class D>
void check_same_value_type() {
  static_assert(std::is_same_v<typename S::value_type, typename D::value_type>,
                "Communicator: src and dst must hold the same value type (both float, or both "
                "double, ...); MPI would otherwise reinterpret the bytes");
}

// void, for container arguments only: keeps Send(ptr, count, dest) from matching the
// container form Send(buf, dest, tag) with a pointer as the "container".
template <class C, class R = void>
using if_container = std::enable_if_t<!std::is_pointer_v<C>, R>;

template <class T>
Buffer describe(const T* data, std::size_t count) {
  return {data, count, mpi_datatype<T>(), sizeof(T)};
}

template <class C>
Buffer describe(const C& container) {
  return describe(container.data(), container.size());
}
}  // namespace detail

// A non-blocking Isend or Irecv in flight. Wait() blocks until it has completed; Test() says
// whether it has, without blocking (and completes it if so). Until it has completed, its buffer
// belongs to MPI: do not write a buffer being sent, read a buffer being received into, or
// destroy either. Open MPI moves a large message only while some rank is inside an MPI call:
// a request nobody waits on or tests may make no progress at all.
// A Request is moved, never copied. One destroyed while still in flight is waited for first:
// a forgotten Wait costs time, never a buffer written after it was freed.
class Request {
 public:
  Request();  // no operation: already complete
  Request(Request&&) noexcept;
  Request& operator=(Request&&) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request();

  void Wait();
  bool Test();
  bool complete() const;  // Wait or a successful Test has run (no MPI call)

  struct State;  // opaque: the MPI request and what its completion checks and reports

 private:
  friend class Communicator;
  explicit Request(std::unique_ptr<State> state);
  void wait_if_in_flight() noexcept;
  std::unique_ptr<State> state_;
};

class Communicator {
 public:
  // Wraps `comm` without taking ownership (MPI_COMM_WORLD by default).
  explicit Communicator(MPI_Comm comm = MPI_COMM_WORLD);

  int Get_rank() const;
  int Get_size() const;
  void Barrier() const;

  // dst[i] = op over all ranks of src[i]. Requires dst.size() == src.size().
  template <class S, class D>
  void Allreduce(const S& src, D& dst, MPI_Op op = MPI_SUM) {
    detail::check_same_value_type<S, D>();
    allreduce(detail::describe(src), dst.data(), dst.size(), op);
  }

  // dst = the src of rank 0, then the src of rank 1, ... one block after another in memory.
  // Requires dst.size() == Get_size() * src.size(). Note: gathering (b, k) blocks into a
  // (b, p*k) tensor does NOT place rank r's block in columns [r*k, (r+1)*k): the blocks land
  // one after another in row-major memory, i.e. as the rows of a (p*b, k) tensor.
  template <class S, class D>
  void Allgather(const S& src, D& dst) {
    detail::check_same_value_type<S, D>();
    allgather(detail::describe(src), dst.data(), dst.size());
  }

  // Block form (MPI_Reduce_scatter_block): src is Get_size() equal blocks of dst.size()
  // elements; rank r receives the op-reduction over all ranks of block r.
  // Requires src.size() == Get_size() * dst.size().
  template <class S, class D>
  void Reduce_scatter(const S& src, D& dst, MPI_Op op = MPI_SUM) {
    detail::check_same_value_type<S, D>();
    reduce_scatter(detail::describe(src), dst.data(), dst.size(), op);
  }

  // Part 12. Block q of `send` goes to rank q, where it lands as block r of `recv` (r = this
  // rank): Get_size() equal blocks each way. Requires recv.size() == send.size(), a multiple of
  // Get_size().
  template <class S, class D>
  void Alltoall(const S& send, D& recv) {
    detail::check_same_value_type<S, D>();
    alltoall(detail::describe(send), recv.data(), recv.size());
  }

  // The same with blocks of any size: send_counts[q] elements go to rank q and recv_counts[q]
  // come from it, counts in elements, one per rank, blocks packed in rank order in `send` and
  // `recv`. Requires send.size() and recv.size() to be the sums of their counts, and
  // recv_counts[q] to be what rank q sends this rank: a rank cannot guess it, so exchange the
  // counts first (an Alltoall of one count per rank). The Communicator compares the counts
  // (without counting those bytes) and, when they disagree, every rank throws
  // std::invalid_argument naming the pair.
  template <class S, class D>
  void Alltoallv(const S& send, const std::vector<int>& send_counts, D& recv,
                 const std::vector<int>& recv_counts) {
    detail::check_same_value_type<S, D>();
    alltoallv(detail::describe(send), send_counts, recv.data(), recv.size(), recv_counts);
  }

  // Point-to-point (Part 7). Ranks are those of this communicator; `tag` tells apart messages
  // between the same two ranks. Recv needs `buf` pre-sized to exactly the message sent: a
  // shorter message throws std::runtime_error naming both lengths, a longer one stops the
  // program with MPI's "message truncated" error.
  //
  // Send blocks until MPI may reuse `buf`: for messages above a few KB that means until the
  // destination posts its Recv, so two ranks that Send large messages to each other first
  // wait for each other forever. Sendrecv sends and receives at once and never deadlocks
  // that way: use it whenever ranks exchange data (a ring step, a swap).
  template <class S>
  detail::if_container<S> Send(const S& buf, int dest, int tag = 0) {
    send(detail::describe(buf), dest, tag);
  }
  template <class D>
  detail::if_container<D> Recv(D& buf, int source, int tag = 0) {
    recv(detail::describe(buf), source, tag);
  }
  // Sends `send` to `dest` and receives into the pre-sized `recv` from `source`, in one call.
  // `send` and `recv` must be different buffers.
  template <class S, class D>
  void Sendrecv(const S& send, int dest, D& recv, int source, int tag = 0) {
    detail::check_same_value_type<S, D>();
    sendrecv(detail::describe(send), dest, detail::describe(recv), source, tag);
  }

  // Non-blocking forms: they return at once, before the message has moved; the Request
  // completes it (see Request above). Messages between the same two ranks with the same tag
  // are matched in the order they were posted. Irecv needs `buf` pre-sized as Recv does; its
  // length is checked when the request completes (Wait or Test throws std::runtime_error). With
  // non-blocking calls no order of sends and receives deadlocks: post what you will receive,
  // post what you send, then wait for all of it.
  template <class S>
  [[nodiscard]] detail::if_container<S, Request> Isend(const S& buf, int dest, int tag = 0) {
    return isend(detail::describe(buf), dest, tag);
  }
  template <class D>
  [[nodiscard]] detail::if_container<D, Request> Irecv(D& buf, int source, int tag = 0) {
    return irecv(detail::describe(buf), source, tag);
  }

  // Pointer forms, to send or receive part of a buffer: `count` elements starting at `data`
  // (e.g. one chunk of a tensor: tensor.data() + offset). T: float, double, int32_t, int64_t.
  template <class T>
  void Send(const T* data, std::size_t count, int dest, int tag = 0) {
    send(detail::describe(data, count), dest, tag);
  }
  template <class T>
  void Recv(T* data, std::size_t count, int source, int tag = 0) {
    recv(detail::describe(data, count), source, tag);
  }
  template <class T>
  void Sendrecv(const T* send, std::size_t send_count, int dest, T* recv, std::size_t recv_count,
                int source, int tag = 0) {
    sendrecv(detail::describe(send, send_count), dest, detail::describe(recv, recv_count), source,
             tag);
  }

  // Collective: ranks passing the same `color` end up in one new communicator, ordered by `key`
  // (ties broken by their rank here). The new communicator starts its own byte counter at 0.
  Communicator Split(int color, int key) const;

  std::uint64_t total_bytes_transferred() const;
  MPI_Comm handle() const;
  // The world rank of this communicator's rank `rank` (-1 stays -1): the communication observer
  // (below) names peers by world rank.
  int world_rank_of(int rank) const;

 private:
  struct Shared;  // the MPI handle, whether we own it, and the byte counter
  explicit Communicator(std::shared_ptr<Shared> shared);

  void allreduce(const detail::Buffer& src, void* dst, std::size_t dst_count, MPI_Op op);
  void allgather(const detail::Buffer& src, void* dst, std::size_t dst_count);
  void reduce_scatter(const detail::Buffer& src, void* dst, std::size_t dst_count, MPI_Op op);
  void alltoall(const detail::Buffer& send, void* recv, std::size_t recv_count);
  void alltoallv(const detail::Buffer& send, const std::vector<int>& send_counts, void* recv,
                 std::size_t recv_count, const std::vector<int>& recv_counts);
  void send(const detail::Buffer& buf, int dest, int tag);
  void recv(const detail::Buffer& buf, int source, int tag);
  void sendrecv(const detail::Buffer& send, int dest, const detail::Buffer& recv, int source,
                int tag);
  Request isend(const detail::Buffer& buf, int dest, int tag);
  Request irecv(const detail::Buffer& buf, int source, int tag);

  std::shared_ptr<Shared> shared_;
};

// What one collective adds to total_bytes_transferred() (the table above): on p ranks, with n
// the byte size the table names. The grader counts the collectives a rank makes the same way.
enum class Collective { allreduce, allgather, reduce_scatter, alltoall };
std::uint64_t estimated_bytes_sent(Collective collective, std::uint64_t p, std::uint64_t n);

// One completed Communicator call, as a trace records it.
struct CommunicationCall {
  const char* call;  // "Send", "Recv", "Sendrecv", "Isend", "Irecv" (posted), "Wait" (an Isend
                     // or Irecv completed, by Wait or Test), "Allreduce", "Allgather",
                     // "Reduce_scatter", "Alltoall", "Alltoallv", "Barrier"
  int peer = -1;     // world rank of Send's and Isend's dest, Recv's and Irecv's source,
                     // Sendrecv's dest, the peer of the request a Wait completed; -1: collective
  int second_peer = -1;       // world rank of Sendrecv's source; -1 otherwise
  std::size_t bytes = 0;      // what the call added to total_bytes_transferred()
  double begin = 0, end = 0;  // MPI_Wtime() before and after the MPI call
};
using CommunicationObserver = std::function<void(const CommunicationCall&)>;

// From now on, every Communicator call of this process that returns normally is reported to
// `observer` (an empty function: to no one, the default). Process-wide, not thread-safe.
void set_communication_observer(CommunicationObserver observer);

}  // namespace dtk
