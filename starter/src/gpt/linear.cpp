#include "dtk/gpt/linear.hpp"

namespace dtk::gpt {

template <class T>
Linear<T>::Linear(Parameter<T> w) : weight(std::move(w)) {}

template <class T>
Linear<T>::Linear(Parameter<T> w, Parameter<T> b) : weight(std::move(w)), bias(std::move(b)) {}

template <class T>
void Linear<T>::forward(const Matrix<T>& x, Matrix<T>& y) const {
  matmul(x, weight.value, y);
  if (bias.value.size() != 0) add_row(y, bias.value);
}

template <class T>
void Linear<T>::backward(const Matrix<T>& x, const Matrix<T>& dy, Matrix<T>& dx) {
  matmul_add_at_b(x, dy, weight.grad);
  if (bias.value.size() != 0) add_column_sums(dy, bias.grad);
  matmul_a_bt(dy, weight.value, dx);
}

template <class T>
std::vector<Parameter<T>*> Linear<T>::parameters() {
  if (bias.value.size() == 0) return {&weight};
  return {&weight, &bias};
}

template class Linear<float>;
template class Linear<double>;

}  // namespace dtk::gpt
