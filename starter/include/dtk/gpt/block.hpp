// One transformer block, in the pre-norm form GPT-2 and Llama share (their norms, MLPs and
// attentions differ inside the layers: gpt.hpp):
//
//   x = x + Attention(LN1(x))
//   x = x + MLP(LN2(x))          (or a mixture of experts in place of the MLP)
//
// The residual stream x is (rows, h): B · S rows, or B · S/tp under sequence parallelism.
#pragma once

#include <optional>
#include <vector>

#include "dtk/gpt/attention.hpp"
#include "dtk/gpt/batch.hpp"
#include "dtk/gpt/bf16_store.hpp"
#include "dtk/gpt/layer_norm.hpp"
#include "dtk/gpt/mixture_of_experts.hpp"
#include "dtk/gpt/mlp.hpp"

namespace dtk::gpt {

template <class T>
class Block {
 public:
  // Block `index`: parameters blocks.<index>.ln1.weight, .attn.qkv.weight, .mlp.fc1.weight or
  // .moe.router.weight, ... `comm` must outlive the block.
  Block(int index, const GptConfig& config, const GptLayout& layout, const InitialWeights& init,
        const GptCommunication<T>& comm);

  // x: the residual stream of `batch`'s sequences. The layers keep what backward needs in slot
  // `slot` (slots.hpp); `batch` must stay unchanged until the slot's backward.
  const Matrix<T>& forward(const Matrix<T>& x, const GptBatch& batch, int slot);
  const Matrix<T>& backward(const Matrix<T>& dy, int slot);

  // The load-balancing loss of slot's last forward; 0 without experts.
  double aux_loss(int slot) const { return moe_ ? moe_->aux_loss(slot) : 0.0; }
  const MixtureOfExperts<T>* mixture() const { return moe_ ? &*moe_ : nullptr; }

  std::vector<Parameter<T>*> parameters();
  // Every layer's slot given back (full recomputation: forward runs again before backward);
  // aux_loss and the experts' rows stay.
  void release(int slot);
  // A bf16 run (a float model): what slot keeps, every layer's, held as bf16 after the forward
  // (pack) until just before the backward (unpack); drop frees it once the backward has read it.
  void pack(int slot, const Bf16Rounding& round);
  void unpack(int slot);
  void drop(int slot);
  std::size_t activation_bytes() const;
  std::size_t workspace_bytes() const;
  // Selective recomputation: the most its MLP's recomputed activation took (freed after use).
  std::size_t recomputed_bytes() const {
    return moe_ ? moe_->recomputed_bytes() : mlp_->recomputed_bytes();
  }

 private:
  LayerNorm<T> ln1_, ln2_;
  CausalSelfAttention<T> attention_;
  std::optional<Mlp<T>> mlp_;
  std::optional<MixtureOfExperts<T>> moe_;
  PackedSlots packed_;                     // a bf16 run's
  std::vector<Matrix<T>*> kept(int slot);  // every layer's, in order
  Matrix<T> after_attention_, y_;          // the residual stream after each half
  Matrix<T> after_attention_grad_, x_grad_;
};

}  // namespace dtk::gpt
