// Self-test submission: naive_collect_forward_output gathers with one MPI_Bcast per rank, a
// call the assignment does not allow. Part 3 must get no points; the others all of theirs.
#include <dtk/dtk.hpp>

#include <xtensor/xview.hpp>

namespace dtk {

ParallelInfo get_info(const Communicator& comm, int rank, int mp_size, int dp_size, bool is_fc1,
                      bool is_megatron_mp, int in_dim, int out_dim) {
  const int mp_idx = rank % mp_size, dp_idx = rank / mp_size;
  Communicator mp_comm = comm.Split(dp_idx, mp_idx);
  Communicator dp_comm = comm.Split(mp_idx, dp_idx);
  if (is_megatron_mp && !is_fc1)
    return {mp_idx, dp_idx, mp_comm, dp_comm, in_dim / mp_size, out_dim};
  return {mp_idx, dp_idx, mp_comm, dp_comm, in_dim, out_dim / mp_size};
}

namespace {
template <class T>
xt::xtensor<T, 2> padded_allreduce(const xt::xtensor<T, 2>& part, Communicator& comm, int parts) {
  const std::size_t rows = part.shape(0), width = part.shape(1);
  const std::size_t me = comm.Get_rank();
  xt::xtensor<T, 2> mine = xt::zeros<T>({rows, width * parts});
  xt::view(mine, xt::all(), xt::range(me * width, (me + 1) * width)) = part;
  xt::xtensor<T, 2> full = xt::zeros<T>({rows, width * parts});
  comm.Allreduce(mine, full, MPI_SUM);
  return full;
}
}  // namespace

template <class T>
xt::xtensor<T, 2> naive_collect_forward_input(const xt::xtensor<T, 2>& x, Communicator& mp_comm,
                                              int mp_size) {
  return padded_allreduce(x, mp_comm, mp_size);
}

template <class T>
xt::xtensor<T, 2> naive_collect_forward_output(const xt::xtensor<T, 2>& out, Communicator& mp_comm,
                                               int mp_size) {
  const std::size_t rows = out.shape(0), width = out.shape(1);
  xt::xtensor<T, 2> full({rows, width * mp_size});
  for (int root = 0; root < mp_size; ++root) {
    xt::xtensor<T, 2> block = out;
    MPI_Bcast(block.data(), static_cast<int>(block.size()),
              std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE, root, mp_comm.handle());
    xt::view(full, xt::all(), xt::range(root * width, (root + 1) * width)) = block;
  }
  return full;
}

template <class T>
xt::xtensor<T, 2> megatron_collect_forward_input(const xt::xtensor<T, 2>& x, Communicator&, int) {
  return x;
}

template <class T>
xt::xtensor<T, 2> megatron_collect_forward_output(const xt::xtensor<T, 2>& out,
                                                  Communicator& mp_comm, int) {
  xt::xtensor<T, 2> sum = out;
  mp_comm.Allreduce(sum, sum, MPI_SUM);  // in place
  return sum;
}

template <class T>
xt::xtensor<T, 2> naive_collect_backward_output(const xt::xtensor<T, 2>& output_grad,
                                                int mp_group_idx, int mp_size) {
  const std::size_t width = output_grad.shape(1) / mp_size;
  return xt::view(output_grad, xt::all(),
                  xt::range(mp_group_idx * width, (mp_group_idx + 1) * width));
}

template <class T>
xt::xtensor<T, 2> naive_collect_backward_x(const xt::xtensor<T, 2>& grad_x, Communicator& mp_comm,
                                           int mp_size) {
  xt::xtensor<T, 2> sum(grad_x.shape());
  mp_comm.Allreduce(grad_x, sum, MPI_SUM);
  const std::size_t width = grad_x.shape(1) / mp_size, me = mp_comm.Get_rank();
  return xt::view(sum, xt::all(), xt::range(me * width, (me + 1) * width));
}

template <class T>
xt::xtensor<T, 2> megatron_collect_backward_output(const xt::xtensor<T, 2>& output_grad, int, int) {
  return output_grad;
}

template <class T>
xt::xtensor<T, 2> megatron_collect_backward_x(const xt::xtensor<T, 2>& grad_x, Communicator&, int) {
  return grad_x;
}

template <class T>
std::pair<xt::xtensor<T, 2>, xt::xtensor<T, 2>> collect_weight_grad(const xt::xtensor<T, 2>& grad_w,
                                                                    const xt::xtensor<T, 2>& grad_b,
                                                                    Communicator& dp_comm) {
  xt::xtensor<T, 1> packed = xt::concatenate(xt::xtuple(xt::flatten(grad_w), xt::flatten(grad_b)));
  dp_comm.Allreduce(packed, packed, MPI_SUM);
  xt::xtensor<T, 2> w =
      xt::reshape_view(xt::view(packed, xt::range(0, grad_w.size())), grad_w.shape());
  xt::xtensor<T, 2> b =
      xt::reshape_view(xt::view(packed, xt::range(grad_w.size(), packed.size())), grad_b.shape());
  return {w, b};
}

#define DTK_INSTANTIATE_FUNC_IMPL(T)                                                               \
  template xt::xtensor<T, 2> naive_collect_forward_input<T>(const xt::xtensor<T, 2>&,              \
                                                            Communicator&, int);                   \
  template xt::xtensor<T, 2> naive_collect_forward_output<T>(const xt::xtensor<T, 2>&,             \
                                                             Communicator&, int);                  \
  template xt::xtensor<T, 2> megatron_collect_forward_input<T>(const xt::xtensor<T, 2>&,           \
                                                               Communicator&, int);                \
  template xt::xtensor<T, 2> megatron_collect_forward_output<T>(const xt::xtensor<T, 2>&,          \
                                                                Communicator&, int);               \
  template xt::xtensor<T, 2> naive_collect_backward_output<T>(const xt::xtensor<T, 2>&, int, int); \
  template xt::xtensor<T, 2> naive_collect_backward_x<T>(const xt::xtensor<T, 2>&, Communicator&,  \
                                                         int);                                     \
  template xt::xtensor<T, 2> megatron_collect_backward_output<T>(const xt::xtensor<T, 2>&, int,    \
                                                                 int);                             \
  template xt::xtensor<T, 2> megatron_collect_backward_x<T>(const xt::xtensor<T, 2>&,              \
                                                            Communicator&, int);                   \
  template std::pair<xt::xtensor<T, 2>, xt::xtensor<T, 2>> collect_weight_grad<T>(                 \
      const xt::xtensor<T, 2>&, const xt::xtensor<T, 2>&, Communicator&);

DTK_INSTANTIATE_FUNC_IMPL(float)
DTK_INSTANTIATE_FUNC_IMPL(double)

}  // namespace dtk
