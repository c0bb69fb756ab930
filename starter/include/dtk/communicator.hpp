// Communicator: a thin wrapper around an MPI communicator that counts the bytes it sends.
//
// This is the only way your code talks to other ranks. It offers exactly the collectives the
// assignment needs (Allreduce, Allgather, Reduce_scatter) plus Split to make sub-groups.
//
// Buffers. `src` and `dst` are contiguous, row-major xtensor containers (xt::xtensor,
// xt::xarray) holding the same value type (float, double, std::int32_t or std::int64_t). `dst`
// must already have the right size: the Communicator never resizes it. Shapes do not matter to
// MPI, only element counts and memory order do: a (2, 3) tensor is sent as its 6 values in
// row-major order. Allreduce may take the same container as `src` and `dst` (done in place).
// A size mismatch throws std::invalid_argument naming the call and both sizes.
//
// Byte accounting. Each call adds to total_bytes_transferred() an estimate of the bytes this
// rank sends, assuming the ring algorithms MPI libraries use for large messages. With p =
// Get_size() ranks and n = the byte size named below:
//   Allreduce       n = bytes of src   adds  2 * (p - 1) * n / p   (reduce-scatter + all-gather)
//   Allgather       n = bytes of src   adds  (p - 1) * n           (pass every block around)
//   Reduce_scatter  n = bytes of dst   adds  (p - 1) * n           (one block per step)
// Integer division; a communicator of one rank sends nothing. The counter belongs to the
// communicator, not to the rank: copies of a Communicator share it (see below).
//
// Copies. Copying a Communicator copies a handle: both copies use the same MPI communicator and
// the same byte counter. A communicator made by Split is freed once, when its last copy goes.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

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

// Raw description of one buffer, so that the MPI calls live in communicator.cpp only.
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

template <class C>
Buffer describe(const C& container) {
  using T = typename C::value_type;
  return {container.data(), container.size(), mpi_datatype<T>(), sizeof(T)};
}
}  // namespace detail

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

  // Collective: ranks passing the same `color` end up in one new communicator, ordered by `key`
  // (ties broken by their rank here). The new communicator starts its own byte counter at 0.
  Communicator Split(int color, int key) const;

  std::uint64_t total_bytes_transferred() const;
  MPI_Comm handle() const;

 private:
  struct Shared;  // the MPI handle, whether we own it, and the byte counter
  explicit Communicator(std::shared_ptr<Shared> shared);

  void allreduce(const detail::Buffer& src, void* dst, std::size_t dst_count, MPI_Op op);
  void allgather(const detail::Buffer& src, void* dst, std::size_t dst_count);
  void reduce_scatter(const detail::Buffer& src, void* dst, std::size_t dst_count, MPI_Op op);

  std::shared_ptr<Shared> shared_;
};

}  // namespace dtk
