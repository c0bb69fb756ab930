// Part 11: context parallelism, ring attention.
// Declared, with the exact contract of every function, in include/dtk/context_parallel.hpp.
// The attention of one block of keys is the provided kernels' (include/dtk/gpt/
// attention_kernels.hpp). Only cp_comm.Send, cp_comm.Recv and cp_comm.Sendrecv may move data
// here.
#include <dtk/communicator.hpp>
#include <dtk/context_parallel.hpp>
#include <dtk/gpt/attention_kernels.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dtk {

namespace {

void require(bool ok, const std::string& function, const std::string& what) {
  if (!ok) throw std::invalid_argument(function + ": " + what);
}

template <class Shape>
std::string shape_text(const Shape& shape) {
  return "(" + std::to_string(shape[0]) + ", " + std::to_string(shape[1]) + ")";
}

// q (and the backward's out and dout) must be (batch · S, heads · d); k and v (batch · S,
// kv · d) with kv dividing heads (grouped-query attention's key/value heads; kv = heads too).
template <class T>
void require_layout(const std::string& function, const std::vector<int>& positions, int batch,
                    int heads, const xt::xtensor<T, 2>& k, const xt::xtensor<T, 2>& v,
                    std::initializer_list<const xt::xtensor<T, 2>*> like_q) {
  require(batch >= 1 && heads >= 1, function,
          "batch and heads must be positive, got batch = " + std::to_string(batch) +
              ", heads = " + std::to_string(heads));
  const auto& shape = (*like_q.begin())->shape();
  require(shape[0] == static_cast<std::size_t>(batch) * positions.size() && shape[1] % heads == 0,
          function,
          "q must be (batch · S, heads · d) with S = positions.size() = " +
              std::to_string(positions.size()) + ", batch = " + std::to_string(batch) +
              ", heads = " + std::to_string(heads) + "; got " + shape_text(shape));
  for (const xt::xtensor<T, 2>* m : like_q) {
    require(m->shape() == shape, function,
            "out and dout must have q's shape " + shape_text(shape) + "; got " +
                shape_text(m->shape()));
  }
  const std::size_t d = shape[1] / heads, kv_width = k.shape(1);
  require(k.shape(0) == shape[0] && kv_width % d == 0 && kv_width > 0 &&
              heads % (kv_width / d) == 0 && v.shape() == k.shape(),
          function,
          "k and v must be (batch · S, kv · d) = (" + std::to_string(shape[0]) + ", kv · " +
              std::to_string(d) + ") with kv dividing heads = " + std::to_string(heads) +
              "; got k " + shape_text(k.shape()) + " and v " + shape_text(v.shape()));
}

// What travels around the ring: a block of keys and values, with their positions.
template <class T>
struct KeyBlock {
  xt::xtensor<T, 2> k, v;
  std::vector<int> positions;
};

// Sends `travelling` to the next rank of the ring (r + 1) and replaces it with what the
// previous rank (r - 1) sent. One Sendrecv: every rank sends and receives at once, so the ring
// never deadlocks, whatever the size (a Send before the Recv waits forever past MPI's eager
// limit, since every rank would be sending).
template <class Buffer>
void pass_on(Buffer& travelling, Communicator& comm) {
  const int p = comm.Get_size(), r = comm.Get_rank();
  Buffer arriving = travelling;  // the same size
  comm.Sendrecv(travelling, (r + 1) % p, arriving, (r + p - 1) % p);
  travelling = std::move(arriving);
}

template <class T>
void pass_on(KeyBlock<T>& block, Communicator& comm) {
  pass_on(block.k, comm);
  pass_on(block.v, comm);
  pass_on(block.positions, comm);
}

}  // namespace

// ----------------------------------- 11.1 -------------------------------------------------------

std::vector<int> cp_positions(int seq_len, int cp_size, int cp_idx, bool zigzag) {
  const std::string function = "cp_positions";
  require(seq_len > 0, function, "seq_len must be positive, got " + std::to_string(seq_len));
  require(cp_size >= 1, function, "cp_size must be at least 1, got " + std::to_string(cp_size));
  require(
      cp_idx >= 0 && cp_idx < cp_size, function,
      "cp_idx must be in 0 .. " + std::to_string(cp_size - 1) + ", got " + std::to_string(cp_idx));
  const int chunks = zigzag ? 2 * cp_size : cp_size;
  require(seq_len % chunks == 0, function,
          "seq_len = " + std::to_string(seq_len) + " is not a multiple of " +
              (zigzag ? "2 · cp_size = " : "cp_size = ") + std::to_string(chunks));
  const int chunk = seq_len / chunks;
  std::vector<int> positions;
  auto append_chunk = [&](int c) {
    for (int i = 0; i < chunk; ++i) positions.push_back(c * chunk + i);
  };
  append_chunk(cp_idx);
  if (zigzag) append_chunk(chunks - 1 - cp_idx);
  return positions;
}

// ----------------------------------- 11.2 -------------------------------------------------------

template <class T>
void merge_attention(xt::xtensor<T, 2>& out, xt::xtensor<T, 2>& lse,
                     const xt::xtensor<T, 2>& block_out, const xt::xtensor<T, 2>& block_lse) {
  const std::string function = "merge_attention";
  require(block_out.shape() == out.shape() && block_lse.shape() == lse.shape(), function,
          "block_out and block_lse must have the shapes of out " + shape_text(out.shape()) +
              " and lse " + shape_text(lse.shape()) + "; got " + shape_text(block_out.shape()) +
              " and " + shape_text(block_lse.shape()));
  const std::size_t rows = out.shape(0), heads = lse.shape(1);
  require(lse.shape(0) == rows && heads >= 1 && out.shape(1) % heads == 0, function,
          "out must be (rows, heads · d) and lse (rows, heads); got out " +
              shape_text(out.shape()) + " and lse " + shape_text(lse.shape()));
  const std::size_t d = out.shape(1) / heads;
  const T minus_infinity = -std::numeric_limits<T>::infinity();
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t h = 0; h < heads; ++h) {
      const T a = lse(i, h), b = block_lse(i, h);
      if (b == minus_infinity) continue;  // nothing to add (both empty: stays empty)
      // Shifted by the larger lse, the larger weight is exactly 1: nothing overflows, and
      // e^(-infinity) = 0 weighs an empty side out.
      const T larger = std::max(a, b);
      const T weight = std::exp(a - larger), block_weight = std::exp(b - larger);
      const T sum = weight + block_weight;
      for (std::size_t c = h * d; c < (h + 1) * d; ++c) {
        out(i, c) = (weight * out(i, c) + block_weight * block_out(i, c)) / sum;
      }
      lse(i, h) = larger + std::log(sum);
    }
  }
}

// ----------------------------------- 11.3 -------------------------------------------------------

template <class T>
AttentionOutput<T> ring_attention_forward(const xt::xtensor<T, 2>& q, const xt::xtensor<T, 2>& k,
                                          const xt::xtensor<T, 2>& v,
                                          const std::vector<int>& positions, int batch, int heads,
                                          Communicator& cp_comm) {
  require_layout<T>("ring_attention_forward", positions, batch, heads, k, v, {&q});
  // Step 0 is this rank's own block; then the block of rank r - s arrives at step s.
  KeyBlock<T> block{k, v, positions};
  AttentionOutput<T> result =
      attention_block_forward(q, block.k, block.v, positions, block.positions, batch, heads);
  for (int step = 1; step < cp_comm.Get_size(); ++step) {
    pass_on(block, cp_comm);
    const AttentionOutput<T> partial =
        attention_block_forward(q, block.k, block.v, positions, block.positions, batch, heads);
    merge_attention(result.out, result.lse, partial.out, partial.lse);
  }
  return result;
}

// ----------------------------------- 11.4 -------------------------------------------------------

template <class T>
AttentionGrads<T> ring_attention_backward(const xt::xtensor<T, 2>& q, const xt::xtensor<T, 2>& k,
                                          const xt::xtensor<T, 2>& v, const xt::xtensor<T, 2>& out,
                                          const xt::xtensor<T, 2>& lse,
                                          const xt::xtensor<T, 2>& dout,
                                          const std::vector<int>& positions, int batch, int heads,
                                          Communicator& cp_comm) {
  const std::string function = "ring_attention_backward";
  require_layout<T>(function, positions, batch, heads, k, v, {&q, &out, &dout});
  require(lse.shape(0) == q.shape(0) && lse.shape(1) == static_cast<std::size_t>(heads), function,
          "lse must be (batch · S, heads) = (" + std::to_string(q.shape(0)) + ", " +
              std::to_string(heads) + "); got " + shape_text(lse.shape()));
  const int p = cp_comm.Get_size();
  // The block's dk and dv travel with it: each rank adds its queries' share.
  KeyBlock<T> block{k, v, positions};
  xt::xtensor<T, 2> dk = xt::zeros<T>(k.shape()), dv = xt::zeros<T>(v.shape());
  AttentionGrads<T> grads{xt::zeros<T>(q.shape()), {}, {}};
  for (int step = 0; step < p; ++step) {
    if (step > 0) {
      pass_on(block, cp_comm);
      pass_on(dk, cp_comm);
      pass_on(dv, cp_comm);
    }
    const AttentionGrads<T> share = attention_block_backward(
        q, block.k, block.v, out, lse, dout, positions, block.positions, batch, heads);
    grads.dq += share.dq;
    dk += share.dk;
    dv += share.dv;
  }
  // The last block seen was rank r + 1's: one more hop takes its dk and dv home, and brings
  // this rank's own from r - 1.
  if (p > 1) {
    pass_on(dk, cp_comm);
    pass_on(dv, cp_comm);
  }
  grads.dk = std::move(dk);
  grads.dv = std::move(dv);
  return grads;
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests link against exactly these.
// -------------------------------------------------------------------------------------------
#define DTK_INSTANTIATE_CONTEXT_PARALLEL(T)                                             \
  template void merge_attention<T>(xt::xtensor<T, 2>&, xt::xtensor<T, 2>&,              \
                                   const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&); \
  template AttentionOutput<T> ring_attention_forward<T>(                                \
      const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&,     \
      const std::vector<int>&, int, int, Communicator&);                                \
  template AttentionGrads<T> ring_attention_backward<T>(                                \
      const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&,     \
      const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&,     \
      const std::vector<int>&, int, int, Communicator&);

DTK_INSTANTIATE_CONTEXT_PARALLEL(float)
DTK_INSTANTIATE_CONTEXT_PARALLEL(double)

}  // namespace dtk
