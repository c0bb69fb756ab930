// The students' functions of Parts 10, 11 and 12 bound to gpt_train's grid: the trainer
// (dtk/gpt/trainer.hpp) builds the model's layout and communication from them. This file is
// part of the program, not of the model: the GPT (dtk_gpt) never calls a student's function
// itself, and gpt_train links the student library that defines them.
//
//   tensor parallelism (--tp)   Megatron's f and g: f's backward and g's forward sum over
//                               tp_comm; the vocabulary-parallel embedding and cross-entropy
//   sequence parallelism (--sp) f and g become sp_all_gather and sp_reduce_scatter
//   context parallelism (--cp)  the attention core is the ring over cp_comm
//   expert parallelism (--ep)   dispatch and combine move rows over ep_comm
#include <dtk/context_parallel.hpp>
#include <dtk/expert_parallel.hpp>
#include <dtk/tensor_parallel.hpp>

#include "gpt_train.hpp"

namespace dtk::gpt_train {

namespace {

template <class T>
using Matrix = gpt::Matrix<T>;

// Rows b · S + first + s' (s' < count) of each of `sequences` sequences of S positions: this
// rank's positions of every sequence.
template <class T>
Matrix<T> positions_of(const Matrix<T>& rows, int sequences, std::size_t first, std::size_t count) {
  const std::size_t per_sequence = rows.shape(0) / sequences, width = rows.shape(1);
  Matrix<T> mine = Matrix<T>::from_shape({sequences * count, width});
  for (int b = 0; b < sequences; ++b) {
    std::copy_n(rows.data() + (b * per_sequence + first) * width, count * width,
                mine.data() + b * count * width);
  }
  return mine;
}

template <class T>
void bind_tensor_parallel(gpt::GptCommunication<T>& c, gpt::GptGrid& g) {
  if (g.sequence_parallel) {
    const auto gather = [&g](const Matrix<T>& x) {
      return sp_all_gather(x, g.sequences, g.tp_comm);
    };
    const auto scatter = [&g](const Matrix<T>& x) {
      return sp_reduce_scatter(x, g.sequences, g.tp_comm);
    };
    c.enter_forward = gather;
    c.enter_backward = scatter;
    c.exit_forward = scatter;
    c.exit_backward = gather;
  } else {
    // A plain sum of activations over the group: no student function does only that, so the
    // Communicator's Allreduce (what Part 10's functions use inside).
    const auto sum = [&g](const Matrix<T>& x) {
      Matrix<T> total = x;
      g.tp_comm.Allreduce(total, total);
      return total;
    };
    c.enter_backward = sum;
    c.exit_forward = sum;
  }
  // Under sequence parallelism the residual stream starts with this rank's S/tp positions of the
  // whole lookup (Megatron reduce-scatters instead, sending half as much; one student function
  // for both layouts is simpler), and the lookup's gradient needs all positions back.
  c.embedding_forward = [&g](const gpt::Tokens& tokens, const Matrix<T>& table, int vocab_begin) {
    Matrix<T> rows = vocab_parallel_embedding(tokens, table, vocab_begin, g.tp_comm);
    if (!g.sequence_parallel) return rows;
    const std::size_t share = tokens.size() / g.sequences / g.tp;
    return positions_of(rows, g.sequences, g.tp_idx * share, share);
  };
  c.embedding_backward = [&g](const gpt::Tokens& tokens, const Matrix<T>& stream_grad,
                              int vocab_begin, int local_vocab) {
    if (!g.sequence_parallel) {
      return vocab_parallel_embedding_grad(tokens, stream_grad, vocab_begin, local_vocab);
    }
    return vocab_parallel_embedding_grad(tokens, sp_all_gather(stream_grad, g.sequences, g.tp_comm),
                                         vocab_begin, local_vocab);
  };
  c.cross_entropy = [&g](const Matrix<T>& logits, const gpt::Tokens& targets, int vocab_begin) {
    return vocab_parallel_cross_entropy(logits, targets, vocab_begin, g.tp_comm);
  };
  // Sampling needs the whole vocabulary's logits: the Communicator's Allgather lands rank r's
  // (N, V/tp) block as rows [r · N, (r + 1) · N); its columns go to [r · V/tp, (r + 1) · V/tp).
  c.gather_vocabulary = [&g](const Matrix<T>& local) {
    const std::size_t rows = local.shape(0), width = local.shape(1);
    Matrix<T> blocks = Matrix<T>::from_shape({g.tp * rows, width});
    g.tp_comm.Allgather(local, blocks);
    Matrix<T> logits = Matrix<T>::from_shape({rows, g.tp * width});
    for (int r = 0; r < g.tp; ++r) {
      for (std::size_t i = 0; i < rows; ++i) {
        std::copy_n(blocks.data() + (r * rows + i) * width, width,
                    logits.data() + i * g.tp * width + r * width);
      }
    }
    return logits;
  };
}

template <class T>
void bind_context_parallel(gpt::GptCommunication<T>& c, gpt::GptGrid& g) {
  c.attention_forward = [&g](const Matrix<T>& q, const Matrix<T>& k, const Matrix<T>& v,
                             const std::vector<int>& positions, int batch, int heads) {
    return ring_attention_forward(q, k, v, positions, batch, heads, g.cp_comm);
  };
  c.attention_backward = [&g](const Matrix<T>& q, const Matrix<T>& k, const Matrix<T>& v,
                              const Matrix<T>& out, const Matrix<T>& lse, const Matrix<T>& dout,
                              const std::vector<int>& positions, int batch, int heads) {
    return ring_attention_backward(q, k, v, out, lse, dout, positions, batch, heads, g.cp_comm);
  };
}

template <class T>
void bind_expert_parallel(gpt::GptCommunication<T>& c, gpt::GptGrid& g) {
  c.moe_dispatch = [&g](const Matrix<T>& x, const xt::xtensor<std::int32_t, 2>& expert_ids,
                        int experts) { return moe_dispatch(x, expert_ids, experts, g.ep_comm); };
  c.moe_combine = [&g](const Matrix<T>& expert_out, const DispatchPlan& plan,
                       const Matrix<T>& gates) {
    return moe_combine(expert_out, plan, gates, g.ep_comm);
  };
}

}  // namespace

template <class T>
gpt::GptParallelism<T> student_parallelism() {
  gpt::GptParallelism<T> p;
  p.qkv_columns = [](int hidden, int heads, int kv_heads, int tp, int tp_idx) {
    return kv_heads == heads ? qkv_columns(hidden, heads, tp, tp_idx)
                             : gqa_qkv_columns(hidden, heads, kv_heads, tp, tp_idx);
  };
  p.cp_positions = cp_positions;
  p.local_experts = local_experts;
  p.communication = [](gpt::GptGrid& g) {
    gpt::GptCommunication<T> c = gpt::one_rank_communication<T>();
    if (g.tp > 1) bind_tensor_parallel(c, g);
    if (g.cp > 1) bind_context_parallel(c, g);
    if (g.ep > 1) bind_expert_parallel(c, g);
    return c;
  };
#if DTK_WITH_GPT_PIPELINE
  bind_pipeline(p);
#endif
#if DTK_WITH_GPT_INTERLEAVED
  bind_five_dimensional(p);
#endif
#if DTK_WITH_GPT_ZERO
  bind_zero(p);
#endif
#if DTK_WITH_GPT_MEMORY
  bind_memory(p);
#endif
#if DTK_WITH_GPT_OVERLAP
  bind_overlap(p);
#endif
  return p;
}

template gpt::GptParallelism<float> student_parallelism();
template gpt::GptParallelism<double> student_parallelism();

}  // namespace dtk::gpt_train
