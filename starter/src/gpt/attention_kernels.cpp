// The attention kernels work one (sequence, head, block of up to 64 queries) at a time: the
// scores of the block's queries over the keys they may see are a small matrix that stays in
// cache, and every product is one BLAS call on a block of columns of q, k, v or out (row stride
// heads · d, or kv_heads · d for k and v). When the keys' positions increase (they always do in the
// GPT and in Part 11's layouts), a block of queries only multiplies by the keys up to its last
// query's position: a causal attention then does about half the products of the full square. The
// (sequence, key/value head) pairs are spread over the rank's threads (parallel.hpp), each making
// its small products alone: the query heads sharing a key/value head add to its dk and dv one by
// one.
#include "dtk/gpt/attention_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <stdexcept>
#include <string>

#include "dtk/gpt/matmul.hpp"
#include "dtk/gpt/parallel.hpp"

namespace dtk {

namespace {

constexpr std::size_t kQueryBlock = 64;

// The sizes of one call, checked against each other.
struct Geometry {
  std::size_t batch, heads, kv_heads, d, q_len, k_len;
  bool keys_increase;  // k_positions increasing: the keys a query sees are a prefix

  std::size_t width() const { return heads * d; }         // of q, out and dout
  std::size_t kv_width() const { return kv_heads * d; }   // of k and v
  std::size_t group() const { return heads / kv_heads; }  // query heads per key/value head
};

template <class T>
Geometry check(const char* function, const xt::xtensor<T, 2>& q, const xt::xtensor<T, 2>& k,
               const xt::xtensor<T, 2>& v, const std::vector<int>& q_positions,
               const std::vector<int>& k_positions, int batch, int heads) {
  const auto fail = [&](const std::string& why) {
    throw std::invalid_argument(std::string(function) + ": " + why);
  };
  if (batch < 1 || heads < 1) fail("batch and heads must be positive");
  const std::size_t width = q.shape(1);
  if (width % heads != 0) {
    fail("q has " + std::to_string(width) +
         " columns, not a multiple of heads = " + std::to_string(heads));
  }
  const std::size_t d = width / heads, kv_width = k.shape(1);
  if (d == 0 || kv_width == 0 || kv_width % d != 0 || heads % (kv_width / d) != 0) {
    fail("k has " + std::to_string(kv_width) + " columns: expected kv_heads · d with kv_heads " +
         "dividing heads = " + std::to_string(heads) + " (d = " + std::to_string(d) + ")");
  }
  const std::size_t q_rows = std::size_t(batch) * q_positions.size();
  const std::size_t k_rows = std::size_t(batch) * k_positions.size();
  if (q.shape(0) != q_rows || k.shape(0) != k_rows || v.shape(0) != k_rows ||
      v.shape(1) != kv_width) {
    fail("expected q (" + std::to_string(q_rows) + ", w) and k, v (" + std::to_string(k_rows) +
         ", kv_w) for batch " + std::to_string(batch) + ", " + std::to_string(q_positions.size()) +
         " query and " + std::to_string(k_positions.size()) + " key positions; got q (" +
         std::to_string(q.shape(0)) + ", " + std::to_string(q.shape(1)) + "), k (" +
         std::to_string(k.shape(0)) + ", " + std::to_string(k.shape(1)) + "), v (" +
         std::to_string(v.shape(0)) + ", " + std::to_string(v.shape(1)) + ")");
  }
  return {std::size_t(batch),
          std::size_t(heads),
          kv_width / d,
          d,
          q_positions.size(),
          k_positions.size(),
          std::is_sorted(k_positions.begin(), k_positions.end())};
}

// One block of queries [first, first + rows) of sequence b and head h, and the keys [0, keys)
// of the same sequence it may see.
struct Block {
  std::size_t b, h, first, rows, keys;
};

// The keys a block of queries may see: with increasing key positions, those up to the latest
// query's position; otherwise all of them (the mask sorts them out).
std::size_t visible_keys(const Geometry& g, const std::vector<int>& q_positions,
                         const std::vector<int>& k_positions, std::size_t first, std::size_t rows) {
  if (!g.keys_increase) return g.k_len;
  const int latest =
      *std::max_element(q_positions.begin() + first, q_positions.begin() + first + rows);
  return std::upper_bound(k_positions.begin(), k_positions.end(), latest) - k_positions.begin();
}

// Calls work(block, scratch) for every block of queries of every sequence and head. The
// (sequence, key/value head) pairs are spread over the threads; a pair's query heads and their
// blocks run in order on one thread (the backward adds each block's dk and dv to its pair's
// rows). scratch: 2 · 64 · S_k values of the thread's own.
template <class T, class Work>
void for_each_block(const Geometry& g, const std::vector<int>& q_positions,
                    const std::vector<int>& k_positions, Work&& work) {
  gpt::parallel_for(
      g.batch * g.kv_heads,
      [&](std::size_t first_pair, std::size_t last_pair) {
        std::vector<T> scratch(2 * kQueryBlock * g.k_len);
        for (std::size_t pair = first_pair; pair < last_pair; ++pair) {
          const std::size_t b = pair / g.kv_heads, kv_head = pair % g.kv_heads;
          for (std::size_t h = kv_head * g.group(); h < (kv_head + 1) * g.group(); ++h) {
            for (std::size_t first = 0; first < g.q_len; first += kQueryBlock) {
              const std::size_t rows = std::min(kQueryBlock, g.q_len - first);
              const std::size_t keys = visible_keys(g, q_positions, k_positions, first, rows);
              work(Block{b, h, first, rows, keys}, scratch.data());
            }
          }
        }
      },
      /*serial_blas=*/true);
}

// Offset of (row s of sequence b, first column of query head h) in q, out or dout.
std::size_t at(const Geometry& g, std::size_t len, std::size_t b, std::size_t s, std::size_t h) {
  return (b * len + s) * g.width() + h * g.d;
}

// Offset of (row 0 of sequence b, first column of the key/value head query head h reads) in k,
// v, dk or dv.
std::size_t keys_at(const Geometry& g, std::size_t b, std::size_t h) {
  return b * g.k_len * g.kv_width() + h / g.group() * g.d;
}

// scores (rows, keys) = q_block · k_blockᵀ / √d, -infinity where the key is not seen.
template <class T>
void masked_scores(const Geometry& g, const Block& blk, const xt::xtensor<T, 2>& q,
                   const xt::xtensor<T, 2>& k, const std::vector<int>& q_positions,
                   const std::vector<int>& k_positions, T* scores) {
  const T scale = T(1) / std::sqrt(T(g.d));
  gpt::gemm<T>(false, true, blk.rows, blk.keys, g.d, scale,
               q.data() + at(g, g.q_len, blk.b, blk.first, blk.h), g.width(),
               k.data() + keys_at(g, blk.b, blk.h), g.kv_width(), T(0), scores, blk.keys);
  const T minus_infinity = -std::numeric_limits<T>::infinity();
  for (std::size_t i = 0; i < blk.rows; ++i) {
    const int position = q_positions[blk.first + i];
    for (std::size_t j = 0; j < blk.keys; ++j) {
      if (k_positions[j] > position) scores[i * blk.keys + j] = minus_infinity;
    }
  }
}

double kernel_cpu_seconds = 0;

// Adds the CPU time of its scope to kernel_cpu_seconds.
class CpuTimer {
 public:
  ~CpuTimer() { kernel_cpu_seconds += double(std::clock() - start_) / CLOCKS_PER_SEC; }

 private:
  std::clock_t start_ = std::clock();
};

}  // namespace

double attention_kernel_cpu_seconds() { return kernel_cpu_seconds; }

template <class T>
AttentionOutput<T> attention_block_forward(const xt::xtensor<T, 2>& q, const xt::xtensor<T, 2>& k,
                                           const xt::xtensor<T, 2>& v,
                                           const std::vector<int>& q_positions,
                                           const std::vector<int>& k_positions, int batch,
                                           int heads) {
  const CpuTimer timer;
  const Geometry g =
      check("attention_block_forward", q, k, v, q_positions, k_positions, batch, heads);
  const T minus_infinity = -std::numeric_limits<T>::infinity();
  AttentionOutput<T> result{xt::zeros<T>({g.batch * g.q_len, g.width()}),
                            xt::xtensor<T, 2>({g.batch * g.q_len, g.heads}, minus_infinity)};
  for_each_block<T>(g, q_positions, k_positions, [&](const Block& blk, T* p) {
    if (blk.keys == 0) return;                                 // no key seen: lse -infinity, out 0
    masked_scores(g, blk, q, k, q_positions, k_positions, p);  // scores, then probabilities
    // Row-wise softmax, stable: exp(s - max), and lse = max + log Σ exp(s - max).
    for (std::size_t i = 0; i < blk.rows; ++i) {
      T* row = p + i * blk.keys;
      const T max = *std::max_element(row, row + blk.keys);
      if (max == minus_infinity) {  // this query sees none of the keys
        std::fill(row, row + blk.keys, T(0));
        continue;
      }
      T sum = 0;
      for (std::size_t j = 0; j < blk.keys; ++j) sum += row[j] = std::exp(row[j] - max);
      for (std::size_t j = 0; j < blk.keys; ++j) row[j] /= sum;
      result.lse(blk.b * g.q_len + blk.first + i, blk.h) = max + std::log(sum);
    }
    // out_block = P · v_block
    gpt::gemm<T>(false, false, blk.rows, g.d, blk.keys, T(1), p, blk.keys,
                 v.data() + keys_at(g, blk.b, blk.h), g.kv_width(), T(0),
                 result.out.data() + at(g, g.q_len, blk.b, blk.first, blk.h), g.width());
  });
  return result;
}

template <class T>
AttentionGrads<T> attention_block_backward(const xt::xtensor<T, 2>& q, const xt::xtensor<T, 2>& k,
                                           const xt::xtensor<T, 2>& v, const xt::xtensor<T, 2>& out,
                                           const xt::xtensor<T, 2>& lse,
                                           const xt::xtensor<T, 2>& dout,
                                           const std::vector<int>& q_positions,
                                           const std::vector<int>& k_positions, int batch,
                                           int heads) {
  const CpuTimer timer;
  const Geometry g =
      check("attention_block_backward", q, k, v, q_positions, k_positions, batch, heads);
  if (out.shape() != q.shape() || dout.shape() != q.shape() || lse.shape(0) != q.shape(0) ||
      lse.shape(1) != g.heads) {
    throw std::invalid_argument(
        "attention_block_backward: out and dout must have q's shape and lse (rows of q, heads)");
  }
  // D_i = Σ_c dout_ic · out_ic, per row and head.
  xt::xtensor<T, 2> d_rows({g.batch * g.q_len, g.heads});
  gpt::parallel_for(g.batch * g.q_len, [&](std::size_t first, std::size_t last) {
    for (std::size_t r = first; r < last; ++r) {
      const T* o = out.data() + r * g.width();
      const T* d_o = dout.data() + r * g.width();
      for (std::size_t h = 0; h < g.heads; ++h) {
        T sum = 0;
        for (std::size_t c = h * g.d; c < (h + 1) * g.d; ++c) sum += d_o[c] * o[c];
        d_rows(r, h) = sum;
      }
    }
  });
  AttentionGrads<T> grads{xt::zeros<T>(q.shape()), xt::zeros<T>(k.shape()),
                          xt::zeros<T>(v.shape())};
  const T scale = T(1) / std::sqrt(T(g.d));
  for_each_block<T>(g, q_positions, k_positions, [&](const Block& blk, T* p) {
    if (blk.keys == 0) return;
    T* dp = p + kQueryBlock * g.k_len;
    masked_scores(g, blk, q, k, q_positions, k_positions, p);
    // P = exp(S - lse): the probabilities of the forward pass over ALL keys, this block's part.
    for (std::size_t i = 0; i < blk.rows; ++i) {
      const T row_lse = lse(blk.b * g.q_len + blk.first + i, blk.h);
      T* row = p + i * blk.keys;
      for (std::size_t j = 0; j < blk.keys; ++j) {
        row[j] = std::isinf(row_lse) ? T(0) : std::exp(row[j] - row_lse);  // exp(-inf) = 0
      }
    }
    const T* dout_block = dout.data() + at(g, g.q_len, blk.b, blk.first, blk.h);
    const T* q_block = q.data() + at(g, g.q_len, blk.b, blk.first, blk.h);
    const std::size_t kv_at = keys_at(g, blk.b, blk.h);
    // dV += Pᵀ · dout
    gpt::gemm<T>(true, false, blk.keys, g.d, blk.rows, T(1), p, blk.keys, dout_block, g.width(),
                 T(1), grads.dv.data() + kv_at, g.kv_width());
    // dP = dout · Vᵀ
    gpt::gemm<T>(false, true, blk.rows, blk.keys, g.d, T(1), dout_block, g.width(),
                 v.data() + kv_at, g.kv_width(), T(0), dp, blk.keys);
    // dS = P ⊙ (dP − D), kept in dp
    for (std::size_t i = 0; i < blk.rows; ++i) {
      const T d_i = d_rows(blk.b * g.q_len + blk.first + i, blk.h);
      for (std::size_t j = 0; j < blk.keys; ++j) {
        const std::size_t ij = i * blk.keys + j;
        dp[ij] = p[ij] * (dp[ij] - d_i);
      }
    }
    // dQ = dS · K / √d (each block of queries is visited once per head), dK += dSᵀ · Q / √d
    gpt::gemm<T>(false, false, blk.rows, g.d, blk.keys, scale, dp, blk.keys, k.data() + kv_at,
                 g.kv_width(), T(0), grads.dq.data() + at(g, g.q_len, blk.b, blk.first, blk.h),
                 g.width());
    gpt::gemm<T>(true, false, blk.keys, g.d, blk.rows, scale, dp, blk.keys, q_block, g.width(),
                 T(1), grads.dk.data() + kv_at, g.kv_width());
  });
  return grads;
}

#define DTK_GPT_INSTANTIATE(T)                                                      \
  template AttentionOutput<T> attention_block_forward(                              \
      const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&, \
      const std::vector<int>&, const std::vector<int>&, int, int);                  \
  template AttentionGrads<T> attention_block_backward(                              \
      const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&, \
      const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&, \
      const std::vector<int>&, const std::vector<int>&, int, int);
DTK_GPT_INSTANTIATE(float)
DTK_GPT_INSTANTIATE(double)

}  // namespace dtk
