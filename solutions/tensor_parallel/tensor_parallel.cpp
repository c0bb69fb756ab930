// Part 10: tensor and sequence parallelism of a transformer.
// Declared, with the exact contract of every function, in include/dtk/tensor_parallel.hpp.
// The only MPI use allowed here: tp_comm.Allreduce, tp_comm.Allgather and tp_comm.Reduce_scatter.
#include <dtk/tensor_parallel.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

namespace dtk {

namespace {

void require(bool ok, const std::string& function, const std::string& what) {
  if (!ok) throw std::invalid_argument(function + ": " + what);
}

// The heads of rank tp_idx, with the checks attention_heads and qkv_columns share; `function`
// names the caller in the message.
HeadRange heads_of_rank(int num_heads, int tp_size, int tp_idx, const std::string& function) {
  require(num_heads >= 1, function, "num_heads must be >= 1, got " + std::to_string(num_heads));
  require(tp_size >= 1, function, "tp_size must be >= 1, got " + std::to_string(tp_size));
  require(0 <= tp_idx && tp_idx < tp_size, function,
          "tp_idx must be in 0 .. tp_size - 1 = " + std::to_string(tp_size - 1) + ", got " +
              std::to_string(tp_idx));
  require(num_heads % tp_size == 0, function,
          "tp_size " + std::to_string(tp_size) + " does not divide num_heads " +
              std::to_string(num_heads));
  const int per_rank = num_heads / tp_size;
  return {tp_idx * per_rank, (tp_idx + 1) * per_rank};
}

// The heads of rank tp_idx, with the checks qkv_columns and gqa_qkv_columns share (those of
// heads_of_rank, and hidden a positive multiple of num_heads).
HeadRange fused_weight_heads(int hidden, int num_heads, int tp_size, int tp_idx,
                             const std::string& function) {
  require(hidden >= 1, function, "hidden must be >= 1, got " + std::to_string(hidden));
  const HeadRange heads = heads_of_rank(num_heads, tp_size, tp_idx, function);
  require(hidden % num_heads == 0, function,
          "num_heads " + std::to_string(num_heads) + " does not divide hidden " +
              std::to_string(hidden));
  return heads;
}

// The row of this rank's slice that token id `token` is, or -1 when another rank holds it.
long local_row(std::int32_t token, int vocab_begin, std::size_t local_vocab) {
  const long row = static_cast<long>(token) - vocab_begin;
  return row >= 0 && row < static_cast<long>(local_vocab) ? row : -1;
}

void require_tokens(const xt::xtensor<std::int32_t, 1>& tokens, int vocab_begin,
                    const std::string& function) {
  require(vocab_begin >= 0, function,
          "vocab_begin must be >= 0, got " + std::to_string(vocab_begin));
  for (std::int32_t token : tokens) {
    require(token >= 0, function, "token ids must be >= 0, got " + std::to_string(token));
  }
}

// Sequence parallelism's reordering. Rank q's rows of sequence b, positions
// [q · s_local, (q + 1) · s_local), sit at row q · batch · s_local + b · s_local of the blocks a
// collective moves (rank 0's rows first) and at row b · S + q · s_local of the sequences (row
// order b · S + s). copy(block_row, sequence_row) is called for each of the tp · batch runs of
// s_local rows.
template <class Copy>
void for_each_run(int tp, int batch, std::size_t s_local, Copy copy) {
  const std::size_t seq_len = tp * s_local;
  for (int q = 0; q < tp; ++q) {
    for (int b = 0; b < batch; ++b) {
      copy((q * batch + b) * s_local, b * seq_len + q * s_local);
    }
  }
}

// Copies `rows` rows of `from` starting at from_row into `to` starting at to_row.
template <class T>
void copy_rows(const xt::xtensor<T, 2>& from, std::size_t from_row, xt::xtensor<T, 2>& to,
               std::size_t to_row, std::size_t rows) {
  const std::size_t width = from.shape(1);
  std::copy_n(from.data() + from_row * width, rows * width, to.data() + to_row * width);
}

void require_batch(int batch, std::size_t rows, const std::string& function) {
  require(batch >= 1, function, "batch must be >= 1, got " + std::to_string(batch));
  require(rows % batch == 0, function,
          std::to_string(rows) + " rows are not " + std::to_string(batch) +
              " sequences of equal length (batch must divide the rows)");
}

}  // namespace

// ----------------------------------- 10.1 -------------------------------------------------------

HeadRange attention_heads(int num_heads, int tp_size, int tp_idx) {
  return heads_of_rank(num_heads, tp_size, tp_idx, "attention_heads");
}

std::vector<int> qkv_columns(int hidden, int num_heads, int tp_size, int tp_idx) {
  const HeadRange heads = fused_weight_heads(hidden, num_heads, tp_size, tp_idx, "qkv_columns");
  const int d = hidden / num_heads;
  std::vector<int> columns;
  for (int block = 0; block < 3; ++block) {  // Q, K, V
    for (int c = heads.begin * d; c < heads.end * d; ++c) columns.push_back(block * hidden + c);
  }
  return columns;
}

std::vector<int> gqa_qkv_columns(int hidden, int num_heads, int num_kv_heads, int tp_size,
                                 int tp_idx) {
  const std::string function = "gqa_qkv_columns";
  const HeadRange heads = fused_weight_heads(hidden, num_heads, tp_size, tp_idx, function);
  require(num_kv_heads >= 1 && num_heads % num_kv_heads == 0, function,
          "num_kv_heads must be >= 1 and divide num_heads " + std::to_string(num_heads) + ", got " +
              std::to_string(num_kv_heads));
  require(num_kv_heads % tp_size == 0 || tp_size % num_kv_heads == 0, function,
          "tp_size " + std::to_string(tp_size) + " must divide num_kv_heads " +
              std::to_string(num_kv_heads) + " or be a multiple of it");
  const int d = hidden / num_heads, group = num_heads / num_kv_heads;
  // The key/value heads this rank's query heads read: [first, last).
  const int first = heads.begin / group, last = (heads.end - 1) / group + 1;
  std::vector<int> columns;
  for (int c = heads.begin * d; c < heads.end * d; ++c) columns.push_back(c);
  for (const int offset : {hidden, hidden + num_kv_heads * d}) {  // K, V
    for (int c = first * d; c < last * d; ++c) columns.push_back(offset + c);
  }
  return columns;
}

// ----------------------------------- 10.2 -------------------------------------------------------

template <class T>
xt::xtensor<T, 2> vocab_parallel_embedding(const xt::xtensor<std::int32_t, 1>& tokens,
                                           const xt::xtensor<T, 2>& local_table, int vocab_begin,
                                           Communicator& tp_comm) {
  require_tokens(tokens, vocab_begin, "vocab_parallel_embedding");
  const std::size_t width = local_table.shape(1);
  xt::xtensor<T, 2> out = xt::zeros<T>({tokens.size(), width});
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const long row = local_row(tokens(i), vocab_begin, local_table.shape(0));
    if (row >= 0) copy_rows(local_table, row, out, i, 1);
  }
  tp_comm.Allreduce(out, out);  // every row is nonzero on exactly one rank
  return out;
}

template <class T>
xt::xtensor<T, 2> vocab_parallel_embedding_grad(const xt::xtensor<std::int32_t, 1>& tokens,
                                                const xt::xtensor<T, 2>& output_grad,
                                                int vocab_begin, int local_vocab) {
  const std::string function = "vocab_parallel_embedding_grad";
  require_tokens(tokens, vocab_begin, function);
  require(local_vocab >= 1, function,
          "local_vocab must be >= 1, got " + std::to_string(local_vocab));
  require(output_grad.shape(0) == tokens.size(), function,
          "output_grad has " + std::to_string(output_grad.shape(0)) + " rows for " +
              std::to_string(tokens.size()) + " tokens");
  xt::xtensor<T, 2> grad = xt::zeros<T>({std::size_t(local_vocab), output_grad.shape(1)});
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const long row = local_row(tokens(i), vocab_begin, local_vocab);
    if (row >= 0) xt::row(grad, row) += xt::row(output_grad, i);
  }
  return grad;
}

// ----------------------------------- 10.3 -------------------------------------------------------

template <class T>
VocabParallelLoss<T> vocab_parallel_cross_entropy(const xt::xtensor<T, 2>& local_logits,
                                                  const xt::xtensor<std::int32_t, 1>& targets,
                                                  int vocab_begin, Communicator& tp_comm) {
  const std::string function = "vocab_parallel_cross_entropy";
  const std::size_t n = local_logits.shape(0), local_vocab = local_logits.shape(1);
  require(targets.size() == n, function,
          std::to_string(n) + " rows of logits but " + std::to_string(targets.size()) + " targets");
  require(local_vocab >= 1, function, "local_logits has no column");
  require(vocab_begin >= 0, function,
          "vocab_begin must be >= 0, got " + std::to_string(vocab_begin));
  const long vocab = static_cast<long>(tp_comm.Get_size() * local_vocab);
  for (std::int32_t target : targets) {
    require(target >= 0 && target < vocab, function,
            "target " + std::to_string(target) + " is outside the vocabulary [0, " +
                std::to_string(vocab) + ")");
  }

  // 1. Every row's maximum over the whole vocabulary.
  xt::xtensor<T, 1> row_max = xt::xtensor<T, 1>::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) {
    row_max(i) = *std::max_element(&local_logits(i, 0), &local_logits(i, 0) + local_vocab);
  }
  tp_comm.Allreduce(row_max, row_max, MPI_MAX);

  // 2. Σ_v exp(logit − max) over the whole vocabulary; the exponentials are kept: they are the
  //    gradient's numerators. 3. The target's logit, from the one rank holding it.
  VocabParallelLoss<T> result{xt::xtensor<T, 1>::from_shape({n}),
                              xt::xtensor<T, 2>::from_shape({n, local_vocab})};
  xt::xtensor<T, 1> sum_exp = xt::zeros<T>({n}), target_logit = xt::zeros<T>({n});
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < local_vocab; ++c) {
      result.logits_grad(i, c) = std::exp(local_logits(i, c) - row_max(i));
      sum_exp(i) += result.logits_grad(i, c);
    }
    const long target = local_row(targets(i), vocab_begin, local_vocab);
    if (target >= 0) target_logit(i) = local_logits(i, target);
  }
  tp_comm.Allreduce(sum_exp, sum_exp);
  tp_comm.Allreduce(target_logit, target_logit);

  // loss = log Σ exp(logit) − target = log Σ exp(logit − max) + (max − target).
  for (std::size_t i = 0; i < n; ++i) {
    result.loss(i) = std::log(sum_exp(i)) + (row_max(i) - target_logit(i));
    for (std::size_t c = 0; c < local_vocab; ++c) {
      result.logits_grad(i, c) /= sum_exp(i) * T(n);
    }
    const long target = local_row(targets(i), vocab_begin, local_vocab);
    if (target >= 0) result.logits_grad(i, target) -= T(1) / T(n);
  }
  return result;
}

// ----------------------------------- 10.4 -------------------------------------------------------

template <class T>
xt::xtensor<T, 2> sp_all_gather(const xt::xtensor<T, 2>& x_local, int batch,
                                Communicator& tp_comm) {
  require_batch(batch, x_local.shape(0), "sp_all_gather");
  const int tp = tp_comm.Get_size();
  const std::size_t s_local = x_local.shape(0) / batch, width = x_local.shape(1);
  xt::xtensor<T, 2> blocks = xt::xtensor<T, 2>::from_shape({tp * x_local.shape(0), width});
  tp_comm.Allgather(x_local, blocks);
  xt::xtensor<T, 2> sequences = xt::xtensor<T, 2>::from_shape(blocks.shape());
  for_each_run(tp, batch, s_local, [&](std::size_t block_row, std::size_t sequence_row) {
    copy_rows(blocks, block_row, sequences, sequence_row, s_local);
  });
  return sequences;
}

template <class T>
xt::xtensor<T, 2> sp_reduce_scatter(const xt::xtensor<T, 2>& partial, int batch,
                                    Communicator& tp_comm) {
  const std::string function = "sp_reduce_scatter";
  require_batch(batch, partial.shape(0), function);
  const int tp = tp_comm.Get_size();
  const std::size_t seq_len = partial.shape(0) / batch;
  require(seq_len % tp == 0, function,
          "the " + std::to_string(tp) + " ranks cannot split sequences of " +
              std::to_string(seq_len) + " positions evenly");
  const std::size_t s_local = seq_len / tp;
  xt::xtensor<T, 2> blocks = xt::xtensor<T, 2>::from_shape(partial.shape());
  for_each_run(tp, batch, s_local, [&](std::size_t block_row, std::size_t sequence_row) {
    copy_rows(partial, sequence_row, blocks, block_row, s_local);
  });
  xt::xtensor<T, 2> mine = xt::xtensor<T, 2>::from_shape({batch * s_local, partial.shape(1)});
  tp_comm.Reduce_scatter(blocks, mine);
  return mine;
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests link against exactly these.
// -------------------------------------------------------------------------------------------
#define DTK_INSTANTIATE_TENSOR_PARALLEL(T)                                                         \
  template xt::xtensor<T, 2> vocab_parallel_embedding<T>(                                          \
      const xt::xtensor<std::int32_t, 1>&, const xt::xtensor<T, 2>&, int, Communicator&);          \
  template xt::xtensor<T, 2> vocab_parallel_embedding_grad<T>(const xt::xtensor<std::int32_t, 1>&, \
                                                              const xt::xtensor<T, 2>&, int, int); \
  template VocabParallelLoss<T> vocab_parallel_cross_entropy<T>(                                   \
      const xt::xtensor<T, 2>&, const xt::xtensor<std::int32_t, 1>&, int, Communicator&);          \
  template xt::xtensor<T, 2> sp_all_gather<T>(const xt::xtensor<T, 2>&, int, Communicator&);       \
  template xt::xtensor<T, 2> sp_reduce_scatter<T>(const xt::xtensor<T, 2>&, int, Communicator&);

DTK_INSTANTIATE_TENSOR_PARALLEL(float)
DTK_INSTANTIATE_TENSOR_PARALLEL(double)

}  // namespace dtk
