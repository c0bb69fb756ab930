// The GPT's parameters: each a named tensor (this rank's slice of it) with its gradient, and
// their starting values.
//
// Every rank draws the WHOLE starting tensor of a parameter from the run's seed and keeps its
// slice, so every layout trains the same model (as the MLP's layer_weights.hpp does). Each
// parameter has a generator of its own, seeded by (seed, name): a rank draws only the tensors it
// holds (an expert it does not hold costs nothing), in any order, and gets the same values.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dtk/gpt/matmul.hpp"

namespace dtk::gpt {

// Who holds a parameter: this tells a trainer where its gradient is summed and how the size of
// the model (weights_l2) counts it.
enum class Sharing {
  // The whole tensor, the same on every rank of the tensor-parallel group: LayerNorms, the
  // position embedding, the biases added after a row-parallel product, the router. Under
  // sequence parallelism a rank's gradient covers its positions only: the trainer sums them over
  // the group.
  Replicated,
  // A slice: the tensor-parallel group holds the whole tensor between its ranks.
  TensorParallel,
  // One expert's whole tensor, held by one rank of the expert-parallel group.
  Expert,
  // The K and V columns of a Llama's key/value head when the tensor-parallel group has more
  // ranks than key/value heads (kv < tp): tp/kv ranks hold the same columns, and each one's
  // gradient covers only the query heads it holds, so the trainer sums it over those replicas.
  KeyValueReplicas,
};

template <class T>
struct Parameter {
  std::string name;  // as in the PyTorch model's state dict, e.g. "blocks.0.attn.qkv.weight"
  Matrix<T> value;   // this rank's slice; a bias or a LayerNorm's weight is (1, n)
  Matrix<T> grad;    // d loss / d value, same shape: backward passes add to it
  Sharing sharing = Sharing::Replicated;
  std::size_t full_rows = 0, full_cols = 0;  // the whole tensor's shape
};

// The starting values of a run's parameters, drawn from its seed.
class InitialWeights {
 public:
  explicit InitialWeights(std::uint32_t seed) : seed_(seed) {}

  // The whole (rows, cols) tensor of parameter `name`, each value from N(0, std²), in double
  // (so that float and double runs start from the same weights, rounded).
  Matrix<double> normal(const std::string& name, std::size_t rows, std::size_t cols,
                        double std) const;

 private:
  std::uint32_t seed_;
};

// (rows, cols), every value `value` (biases start at 0, LayerNorm weights at 1).
Matrix<double> constant(std::size_t rows, std::size_t cols, double value);

// A parameter holding the whole of `full`.
template <class T>
Parameter<T> whole(const std::string& name, const Matrix<double>& full,
                   Sharing sharing = Sharing::Replicated);

// A tensor-parallel parameter holding the columns `columns` of `full`, in that order.
template <class T>
Parameter<T> column_slice(const std::string& name, const Matrix<double>& full,
                          const std::vector<int>& columns);

// A tensor-parallel parameter holding the columns [begin, end) of `full`.
template <class T>
Parameter<T> column_slice(const std::string& name, const Matrix<double>& full, int begin, int end);

// A tensor-parallel parameter holding the rows `rows` of `full`, in that order.
template <class T>
Parameter<T> row_slice(const std::string& name, const Matrix<double>& full,
                       const std::vector<int>& rows);

// [begin, begin + 1, ..., end - 1]
std::vector<int> index_range(int begin, int end);

// Each parameter's `member` (value or grad), one after another, into `flat` (room for them all):
// the flat vectors the gradient sums and the optimizer work on. scatter_flat is the way back.
template <class T>
void gather_flat(const std::vector<Parameter<T>*>& params, Matrix<T> Parameter<T>::*member,
                 T* flat) {
  for (const Parameter<T>* p : params)
    flat = std::copy((p->*member).begin(), (p->*member).end(), flat);
}
template <class T>
void scatter_flat(const T* flat, Matrix<T> Parameter<T>::*member,
                  const std::vector<Parameter<T>*>& params) {
  for (Parameter<T>* p : params) {
    std::copy_n(flat, (p->*member).size(), (p->*member).begin());
    flat += (p->*member).size();
  }
}

}  // namespace dtk::gpt
