// Part 7: your own collectives, built from point-to-point messages only.
// Declared, with the exact contract of every function, in include/dtk/my_collectives.hpp.
// Only comm.Send, comm.Recv and comm.Sendrecv may move data here.
#include <dtk/my_collectives.hpp>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtk {

namespace {

// n elements cut into p contiguous chunks as evenly as possible: the first n % p chunks hold
// one element more than the others (so some chunks are empty when n < p).
class Chunks {
 public:
  Chunks(std::size_t n, int p) : total_(n), base_(n / p), extra_(n % p) {}
  std::size_t total() const { return total_; }
  std::size_t begin(int i) const { return i * base_ + std::min<std::size_t>(i, extra_); }
  std::size_t size(int i) const { return base_ + (static_cast<std::size_t>(i) < extra_); }

 private:
  std::size_t total_, base_, extra_;
};

// i modulo p, for any i > -p.
int wrap(int i, int p) { return (i + p) % p; }

void require(bool ok, const std::string& function, const std::string& what) {
  if (!ok) throw std::invalid_argument(function + ": " + what);
}

void require_supported_op(MPI_Op op, const std::string& function) {
  require(op == MPI_SUM || op == MPI_MIN || op == MPI_MAX, function,
          "op must be MPI_SUM, MPI_MIN or MPI_MAX");
}

template <class T, class Combine>
void combine_with(T* acc, const T* in, std::size_t n, Combine combine) {
  for (std::size_t i = 0; i < n; ++i) acc[i] = combine(acc[i], in[i]);
}

// acc[i] = acc[i] op in[i] for i < n. The op is chosen once, outside the loop, so that the
// loop compiles to straight vector code.
template <class T>
void combine(T* acc, const T* in, std::size_t n, MPI_Op op) {
  if (op == MPI_SUM) {
    combine_with(acc, in, n, std::plus<T>());
  } else if (op == MPI_MIN) {
    combine_with(acc, in, n, [](T a, T b) { return std::min(a, b); });
  } else {
    combine_with(acc, in, n, [](T a, T b) { return std::max(a, b); });
  }
}

// Ring reduce-scatter over `chunks` of `src`, into `work` (as long as src). Rank r sends to
// r + 1 and receives from r - 1; in each of the p - 1 steps it passes on the partial reduction
// it last completed and folds its own values into the chunk it receives. Afterwards chunk
// (r + shift) mod p of `work` holds the reduction over all ranks; other chunks hold partials.
template <class T>
void ring_reduce_scatter(const T* src, T* work, const Chunks& chunks, int shift, MPI_Op op,
                         Communicator& comm) {
  const int p = comm.Get_size();
  const int r = comm.Get_rank();
  if (p == 1) {
    std::copy_n(src, chunks.total(), work);
    return;
  }
  for (int step = 0; step < p - 1; ++step) {
    const int send = wrap(r + shift - 1 - step, p);
    const int recv = wrap(r + shift - 2 - step, p);
    // Step 0 sends this rank's own values; later steps send what the previous step reduced.
    const T* outgoing = (step == 0 ? src : work) + chunks.begin(send);
    T* incoming = work + chunks.begin(recv);
    comm.Sendrecv(outgoing, chunks.size(send), (r + 1) % p, incoming, chunks.size(recv),
                  wrap(r - 1, p));
    combine(incoming, src + chunks.begin(recv), chunks.size(recv), op);
  }
}

// Ring all-gather in place: rank r starts with chunk (r + shift) mod p of `work` complete;
// in each of the p - 1 steps it passes the chunk it received last on to r + 1. Afterwards
// every chunk is complete on every rank.
template <class T>
void ring_allgather(T* work, const Chunks& chunks, int shift, Communicator& comm) {
  const int p = comm.Get_size();
  const int r = comm.Get_rank();
  for (int step = 0; step < p - 1; ++step) {
    const int send = wrap(r + shift - step, p);
    const int recv = wrap(r + shift - 1 - step, p);
    comm.Sendrecv(work + chunks.begin(send), chunks.size(send), (r + 1) % p,
                  work + chunks.begin(recv), chunks.size(recv), wrap(r - 1, p));
  }
}

}  // namespace

template <class T>
void my_allreduce(const xt::xtensor<T, 1>& src, xt::xtensor<T, 1>& dst, MPI_Op op,
                  Communicator& comm) {
  require(dst.size() == src.size(), "my_allreduce", "dst.size() must equal src.size()");
  require_supported_op(op, "my_allreduce");
  const Chunks chunks(src.size(), comm.Get_size());
  // Reduce-scatter leaves rank r with chunk r + 1 reduced; the all-gather starts from there.
  ring_reduce_scatter(src.data(), dst.data(), chunks, /*shift=*/1, op, comm);
  ring_allgather(dst.data(), chunks, /*shift=*/1, comm);
}

template <class T>
void my_allgather(const xt::xtensor<T, 1>& src, xt::xtensor<T, 1>& dst, Communicator& comm) {
  const int p = comm.Get_size();
  const std::size_t k = src.size();
  require(dst.size() == p * k, "my_allgather", "dst.size() must equal Get_size() * src.size()");
  std::copy_n(src.data(), k, dst.data() + comm.Get_rank() * k);
  ring_allgather(dst.data(), Chunks(p * k, p), /*shift=*/0, comm);
}

template <class T>
void my_reduce_scatter(const xt::xtensor<T, 1>& src, xt::xtensor<T, 1>& dst, MPI_Op op,
                       Communicator& comm) {
  const int p = comm.Get_size();
  const std::size_t k = dst.size();
  require(src.size() == p * k, "my_reduce_scatter",
          "src.size() must equal Get_size() * dst.size()");
  require_supported_op(op, "my_reduce_scatter");
  std::vector<T> work(p * k);
  ring_reduce_scatter(src.data(), work.data(), Chunks(p * k, p), /*shift=*/0, op, comm);
  std::copy_n(work.data() + comm.Get_rank() * k, k, dst.data());
}

template <class T>
void my_alltoall(const xt::xtensor<T, 1>& src, xt::xtensor<T, 1>& dst, Communicator& comm) {
  const int p = comm.Get_size();
  const int r = comm.Get_rank();
  require(dst.size() == src.size(), "my_alltoall", "dst.size() must equal src.size()");
  require(src.size() % p == 0, "my_alltoall", "src.size() must be a multiple of Get_size()");
  const std::size_t k = src.size() / p;
  std::copy_n(src.data() + r * k, k, dst.data() + r * k);
  // Pairwise exchange: in step s, send to r + s what it needs and receive from r - s, so that
  // every pair of ranks meets exactly once and no rank waits on a busy partner.
  for (int step = 1; step < p; ++step) {
    const int to = (r + step) % p;
    const int from = wrap(r - step, p);
    comm.Sendrecv(src.data() + to * k, k, to, dst.data() + from * k, k, from);
  }
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float, double and int32_t. Do not edit below this
// line: the tests and collectives_bench link against exactly these.
// -------------------------------------------------------------------------------------------
#define DTK_INSTANTIATE_MY_COLLECTIVES(T)                                                     \
  template void my_allreduce<T>(const xt::xtensor<T, 1>&, xt::xtensor<T, 1>&, MPI_Op,         \
                                Communicator&);                                               \
  template void my_allgather<T>(const xt::xtensor<T, 1>&, xt::xtensor<T, 1>&, Communicator&); \
  template void my_reduce_scatter<T>(const xt::xtensor<T, 1>&, xt::xtensor<T, 1>&, MPI_Op,    \
                                     Communicator&);                                          \
  template void my_alltoall<T>(const xt::xtensor<T, 1>&, xt::xtensor<T, 1>&, Communicator&);

DTK_INSTANTIATE_MY_COLLECTIVES(float)
DTK_INSTANTIATE_MY_COLLECTIVES(double)
DTK_INSTANTIATE_MY_COLLECTIVES(std::int32_t)

}  // namespace dtk
