#include "dtk/mlp/tensor_parallel_split.hpp"

#include <stdexcept>
#include <string>

#include "dtk/func_impl.hpp"
#include "dtk/mlp/shape_check.hpp"

namespace dtk {

namespace {

// What every split layer of a group shares: its get_info answer and the group's size.
class SplitLayer : public LayerSplit {
 public:
  SplitLayer(ParallelInfo info, int mp_size) : info_(std::move(info)), mp_size_(mp_size) {}

  std::uint64_t bytes_sent() const override { return info_.mp_comm.total_bytes_transferred(); }

 protected:
  // Checks what one of your functions returned: it must have `cols` columns and as many rows as
  // `like`.
  static Matrix checked(Matrix result, const Matrix& like, std::size_t cols,
                        const std::string& function) {
    expect_shape(result, like.shape(0), cols, function);
    return result;
  }

  ParallelInfo info_;
  int mp_size_;
};

// The first layer of a pair (fc1): W and b split by output columns, its input whole.
class ColumnSplit : public SplitLayer {
 public:
  ColumnSplit(ParallelInfo info, int mp_size, bool megatron)
      : SplitLayer(std::move(info), mp_size), megatron_(megatron) {}

  Matrix forward_input(const Matrix& x) override { return x; }
  Matrix forward_output(const Matrix& product, const Matrix& bias) override {
    Matrix out = product;
    add_row(out, bias);
    return out;
  }
  Matrix backward_output(const Matrix& output_grad) override { return output_grad; }
  // product_grad: this rank's share of the whole input's gradient; the group's shares add up.
  Matrix backward_input(const Matrix& product_grad) override {
    const std::size_t width = product_grad.shape(1);
    if (megatron_) {
      return checked(megatron_collect_forward_output(product_grad, info_.mp_comm, mp_size_),
                     product_grad, width, "megatron_collect_forward_output");
    }
    const Matrix mine = checked(naive_collect_backward_x(product_grad, info_.mp_comm, mp_size_),
                                product_grad, width / mp_size_, "naive_collect_backward_x");
    return checked(naive_collect_forward_input(mine, info_.mp_comm, mp_size_), product_grad, width,
                   "naive_collect_forward_input");
  }
  bool owns_bias() const override { return true; }

 private:
  bool megatron_;
};

// The second layer of a naive pair: split by output columns, its input gathered whole first.
class NaiveSecond : public SplitLayer {
 public:
  using SplitLayer::SplitLayer;

  Matrix forward_input(const Matrix& x) override {
    return checked(naive_collect_forward_input(x, info_.mp_comm, mp_size_), x,
                   x.shape(1) * mp_size_, "naive_collect_forward_input");
  }
  Matrix forward_output(const Matrix& product, const Matrix& bias) override {
    Matrix local = product;
    add_row(local, bias);
    return checked(naive_collect_forward_output(local, info_.mp_comm, mp_size_), local,
                   local.shape(1) * mp_size_, "naive_collect_forward_output");
  }
  Matrix backward_output(const Matrix& output_grad) override {
    return checked(naive_collect_backward_output(output_grad, info_.mp_idx, mp_size_), output_grad,
                   output_grad.shape(1) / mp_size_, "naive_collect_backward_output");
  }
  Matrix backward_input(const Matrix& product_grad) override {
    return checked(naive_collect_backward_x(product_grad, info_.mp_comm, mp_size_), product_grad,
                   product_grad.shape(1) / mp_size_, "naive_collect_backward_x");
  }
  bool owns_bias() const override { return true; }
};

// The second layer of a Megatron pair: W split by input rows, b whole; the group's partial
// products add up to the output, and the bias is added once, after the sum.
class MegatronSecond : public SplitLayer {
 public:
  using SplitLayer::SplitLayer;

  Matrix forward_input(const Matrix& x) override {
    return checked(megatron_collect_forward_input(x, info_.mp_comm, mp_size_), x, x.shape(1),
                   "megatron_collect_forward_input");
  }
  Matrix forward_output(const Matrix& product, const Matrix& bias) override {
    Matrix out = checked(megatron_collect_forward_output(product, info_.mp_comm, mp_size_), product,
                         product.shape(1), "megatron_collect_forward_output");
    add_row(out, bias);
    return out;
  }
  Matrix backward_output(const Matrix& output_grad) override {
    return checked(megatron_collect_backward_output(output_grad, info_.mp_idx, mp_size_),
                   output_grad, output_grad.shape(1), "megatron_collect_backward_output");
  }
  Matrix backward_input(const Matrix& product_grad) override {
    return checked(megatron_collect_backward_x(product_grad, info_.mp_comm, mp_size_), product_grad,
                   product_grad.shape(1), "megatron_collect_backward_x");
  }
  // Every rank of the group holds the whole bias: rank 0's copy counts.
  bool owns_bias() const override { return info_.mp_idx == 0; }
};

}  // namespace

StageSplit split_stage_layers(const Communicator& stage_comm, const Parallelism& parallelism,
                              const std::vector<int>& widths, int first_layer, int last_layer,
                              std::uint32_t seed) {
  if ((last_layer - first_layer) % 2 != 0) {
    throw std::invalid_argument("split_stage_layers: layers [" + std::to_string(first_layer) +
                                ", " + std::to_string(last_layer) + ") are not pairs of layers");
  }
  StageSplit split;
  for (int l = first_layer; l < last_layer; ++l) {
    const bool is_fc1 = (l - first_layer) % 2 == 0;
    ParallelInfo info =
        get_info(stage_comm, stage_comm.Get_rank(), parallelism.mp_size, parallelism.dp_size,
                 is_fc1, parallelism.megatron, widths[l], widths[l + 1]);
    split.weights.push_back(
        layer_slice(info, parallelism, is_fc1, widths[l], widths[l + 1], seed + l));
    split.dp_comm = info.dp_comm;
    const int mp = parallelism.mp_size;
    if (is_fc1) {
      split.layers.push_back(std::make_unique<ColumnSplit>(info, mp, parallelism.megatron));
    } else if (parallelism.megatron) {
      split.layers.push_back(std::make_unique<MegatronSecond>(info, mp));
    } else {
      split.layers.push_back(std::make_unique<NaiveSecond>(info, mp));
    }
  }
  return split;
}

}  // namespace dtk
