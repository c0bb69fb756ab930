#include "dtk/gpt/linear.hpp"

#include "dtk/gpt/bytes.hpp"

namespace dtk::gpt {

template <class T>
Linear<T>::Linear(Parameter<T> w) : weight(std::move(w)) {}

template <class T>
Linear<T>::Linear(Parameter<T> w, Parameter<T> b) : weight(std::move(w)), bias(std::move(b)) {}

template <class T>
const Matrix<T>& Linear<T>::forward(const Matrix<T>& x) {
  input_ = &x;
  matmul(x, weight.value, y_);
  if (bias.value.size() != 0) add_row(y_, bias.value);
  return y_;
}

template <class T>
const Matrix<T>& Linear<T>::backward(const Matrix<T>& dy) {
  matmul_add_at_b(*input_, dy, weight.grad);
  if (bias.value.size() != 0) add_column_sums(dy, bias.grad);
  matmul_a_bt(dy, weight.value, dx_);
  return dx_;
}

template <class T>
std::vector<Parameter<T>*> Linear<T>::parameters() {
  if (bias.value.size() == 0) return {&weight};
  return {&weight, &bias};
}

template <class T>
std::size_t Linear<T>::output_bytes() const {
  return bytes_of(y_);
}

template <class T>
std::size_t Linear<T>::input_grad_bytes() const {
  return bytes_of(dx_);
}

template class Linear<float>;
template class Linear<double>;

}  // namespace dtk::gpt
