#include "dtk/gpt/block.hpp"

#include <type_traits>

#include <xtensor/xnoalias.hpp>

#include "dtk/gpt/bytes.hpp"

namespace dtk::gpt {

template <class T>
Block<T>::Block(int index, const GptConfig& config, const GptLayout& layout,
                const InitialWeights& init, const GptCommunication<T>& comm)
    : ln1_("blocks." + std::to_string(index) + ".ln1", config, layout.keep_bf16),
      ln2_("blocks." + std::to_string(index) + ".ln2", config, layout.keep_bf16),
      attention_("blocks." + std::to_string(index) + ".attn", config, layout, init, comm) {
  const std::string prefix = "blocks." + std::to_string(index);
  if (config.mixture_of_experts()) {
    moe_.emplace(prefix + ".moe", config, layout, init, comm);
  } else {
    mlp_.emplace(prefix + ".mlp", config, layout, init, comm);
  }
}

template <class T>
const Matrix<T>& Block<T>::forward(const Matrix<T>& x, const GptBatch& batch, int slot) {
  xt::noalias(after_attention_) =
      x + attention_.forward(ln1_.forward(x, slot), batch.positions, batch.batch, slot);
  const Matrix<T>& normalized = ln2_.forward(after_attention_, slot);
  const Matrix<T>& mlp_out =
      moe_ ? moe_->forward(normalized,
                           batch.routed_tokens > 0 ? batch.routed_tokens : batch.loss_tokens,
                           batch.aux_weight, batch.training, slot)
           : mlp_->forward(normalized, slot);
  xt::noalias(y_) = after_attention_ + mlp_out;
  return y_;
}

template <class T>
const Matrix<T>& Block<T>::backward(const Matrix<T>& dy, int slot) {
  // Each residual connection passes its gradient on unchanged and adds its branch's.
  const Matrix<T>& mlp_grad = moe_ ? moe_->backward(dy, slot) : mlp_->backward(dy, slot);
  xt::noalias(after_attention_grad_) = dy + ln2_.backward(mlp_grad, slot);
  xt::noalias(x_grad_) =
      after_attention_grad_ + ln1_.backward(attention_.backward(after_attention_grad_, slot), slot);
  return x_grad_;
}

template <class T>
std::vector<Parameter<T>*> Block<T>::parameters() {
  std::vector<Parameter<T>*> all = ln1_.parameters();
  for (Parameter<T>* p : attention_.parameters()) all.push_back(p);
  for (Parameter<T>* p : ln2_.parameters()) all.push_back(p);
  for (Parameter<T>* p : moe_ ? moe_->parameters() : mlp_->parameters()) all.push_back(p);
  return all;
}

template <class T>
void Block<T>::release(int slot) {
  ln1_.release(slot);
  attention_.release(slot);
  ln2_.release(slot);
  if (moe_) {
    moe_->release(slot);
  } else {
    mlp_->release(slot);
  }
}

template <class T>
std::vector<Matrix<T>*> Block<T>::kept(int slot) {
  std::vector<Matrix<T>*> all;
  for (const std::vector<Matrix<T>*>& layer :
       {ln1_.kept(slot), attention_.kept(slot), ln2_.kept(slot),
        moe_ ? moe_->kept(slot) : mlp_->kept(slot)}) {
    all.insert(all.end(), layer.begin(), layer.end());
  }
  return all;
}

template <class T>
void Block<T>::pack(int slot, const Bf16Rounding& round) {
  // (A double model has no bf16 run: Gpt refuses one.)
  if constexpr (std::is_same_v<T, float>) packed_.pack(slot, kept(slot), round);
}

template <class T>
void Block<T>::unpack(int slot) {
  if constexpr (std::is_same_v<T, float>) packed_.unpack(slot, kept(slot));
}

template <class T>
void Block<T>::drop(int slot) {
  for (Matrix<T>* m : kept(slot)) *m = Matrix<T>();
}

template <class T>
std::size_t Block<T>::activation_bytes() const {
  return ln1_.activation_bytes() + attention_.activation_bytes() + ln2_.activation_bytes() +
         (moe_ ? moe_->activation_bytes() : mlp_->activation_bytes()) + packed_.bytes();
}

template <class T>
std::size_t Block<T>::workspace_bytes() const {
  return bytes_of(after_attention_, y_, after_attention_grad_, x_grad_) + ln1_.workspace_bytes() +
         attention_.workspace_bytes() + ln2_.workspace_bytes() +
         (moe_ ? moe_->workspace_bytes() : mlp_->workspace_bytes());
}

template class Block<float>;
template class Block<double>;

}  // namespace dtk::gpt
