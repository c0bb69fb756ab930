#include "dtk/mlp/mlp.hpp"

namespace dtk {

MLP::MLP(const Communicator& comm, const Parallelism& parallelism, std::uint32_t seed,
         const MlpDims& dims)
    : parallelism_(parallelism),
      fc1_(comm, parallelism, /*is_fc1=*/true, dims.in_dim, dims.hidden_dim, seed),
      fc2_(comm, parallelism, /*is_fc1=*/false, dims.hidden_dim, dims.out_dim, seed + 1) {}

BatchStats MLP::forward(const Matrix& x, const Labels& labels) {
  const Matrix& hidden = relu_.forward(fc1_.forward(x));
  const Matrix& logits = fc2_.forward(hidden);
  // Every replica holds an equal part of the global batch.
  return loss_.forward(logits, labels, x.shape(0) * parallelism_.dp_size);
}

void MLP::backward() {
  const Matrix& hidden_grad = relu_.backward(fc2_.backward(loss_.backward()));
  fc1_.backward(hidden_grad);
}

void MLP::update(float lr) {
  fc1_.update(lr);
  fc2_.update(lr);
}

BatchStats MLP::train_step(const Matrix& x, const Labels& labels, float lr) {
  const BatchStats stats = forward(x, labels);
  backward();
  update(lr);
  return stats;
}

}  // namespace dtk
