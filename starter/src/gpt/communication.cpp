#include "dtk/gpt/communication.hpp"

namespace dtk::gpt {

template <class T>
GptCommunication<T> one_rank_communication() {
  GptCommunication<T> c;
  c.embedding_forward = [](const Tokens& tokens, const Matrix<T>& table, int) {
    return embedding_lookup(tokens, table);
  };
  c.embedding_backward = [](const Tokens& tokens, const Matrix<T>& grad, int, int local_vocab) {
    return embedding_lookup_grad(tokens, grad, local_vocab);
  };
  c.cross_entropy = [](const Matrix<T>& logits, const Tokens& targets, int) {
    return gpt::cross_entropy(logits, targets);
  };
  c.attention_forward = [](const Matrix<T>& q, const Matrix<T>& k, const Matrix<T>& v,
                           const std::vector<int>& positions, int batch, int heads) {
    return attention_block_forward(q, k, v, positions, positions, batch, heads);
  };
  c.attention_backward = [](const Matrix<T>& q, const Matrix<T>& k, const Matrix<T>& v,
                            const Matrix<T>& out, const Matrix<T>& lse, const Matrix<T>& dout,
                            const std::vector<int>& positions, int batch, int heads) {
    return attention_block_backward(q, k, v, out, lse, dout, positions, positions, batch, heads);
  };
  c.moe_dispatch = moe_dispatch_one_rank<T>;
  c.moe_combine = moe_combine_one_rank<T>;
  return c;
}

template GptCommunication<float> one_rank_communication();
template GptCommunication<double> one_rank_communication();

}  // namespace dtk::gpt
