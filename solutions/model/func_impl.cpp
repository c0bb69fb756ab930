// Parts 2, 3 and 6: the communication of model-parallel and data-parallel training.
// Declared, with the exact contract of every function, in include/dtk/func_impl.hpp: read the
// comments there first. Every rank of a communicator must make the same collective calls in
// the same order, or the program hangs.
#include <dtk/func_impl.hpp>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

namespace dtk {

namespace {

// The columns [r * width, (r + 1) * width) of a (batch, parts * width) matrix.
auto column_slice(std::size_t r, std::size_t width) {
  return xt::range(r * width, (r + 1) * width);
}

// dtk:part 3
// Allgather of column slices: every rank holds a (batch, width) slice; everyone gets the
// (batch, parts * width) matrix with rank r's slice in column block r.
template <class T>
xt::xtensor<T, 2> allgather_columns(const xt::xtensor<T, 2>& slice, Communicator& comm, int parts) {
  const std::size_t batch = slice.shape(0), width = slice.shape(1);
  xt::xtensor<T, 3> blocks({static_cast<std::size_t>(parts), batch, width});
  comm.Allgather(slice, blocks);  // blocks(r) is rank r's slice
  xt::xtensor<T, 2> full({batch, parts * width});
  for (int r = 0; r < parts; ++r) {
    xt::view(full, xt::all(), column_slice(r, width)) = xt::view(blocks, r);
  }
  return full;
}

// dtk:end
}  // namespace

// dtk:part 2
// ----------------------------------- Part 2 ------------------------------------------------

ParallelInfo get_info(const Communicator& comm, int rank, int mp_size, int dp_size, bool is_fc1,
                      bool is_megatron_mp, int in_dim, int out_dim) {
  const int mp_idx = rank % mp_size;
  const int dp_idx = rank / mp_size;
  Communicator mp_comm = comm.Split(/*color=*/dp_idx, /*key=*/mp_idx);
  Communicator dp_comm = comm.Split(/*color=*/mp_idx, /*key=*/dp_idx);
  const bool split_input = is_megatron_mp && !is_fc1;  // Megatron's fc2 is split by rows
  const int part_in_dim = split_input ? in_dim / mp_size : in_dim;
  const int part_out_dim = split_input ? out_dim : out_dim / mp_size;
  return ParallelInfo{mp_idx, dp_idx, mp_comm, dp_comm, part_in_dim, part_out_dim};
}

// dtk:end
// dtk:part 3
// ----------------------------------- Part 3 ------------------------------------------------

template <class T>
xt::xtensor<T, 2> naive_collect_forward_input(const xt::xtensor<T, 2>& x, Communicator& mp_comm,
                                              int mp_size) {
  return allgather_columns(x, mp_comm, mp_size);
}

template <class T>
xt::xtensor<T, 2> naive_collect_forward_output(const xt::xtensor<T, 2>& out, Communicator& mp_comm,
                                               int mp_size) {
  return allgather_columns(out, mp_comm, mp_size);
}

// dtk:end
// dtk:part 6
// ----------------------------------- Part 6 ------------------------------------------------

template <class T>
xt::xtensor<T, 2> megatron_collect_forward_input(const xt::xtensor<T, 2>& x, Communicator& mp_comm,
                                                 int mp_size) {
  return x;  // fc1's output slice is exactly the input rows Megatron's fc2 slice multiplies
}

template <class T>
xt::xtensor<T, 2> megatron_collect_forward_output(const xt::xtensor<T, 2>& out,
                                                  Communicator& mp_comm, int mp_size) {
  xt::xtensor<T, 2> full(out.shape());
  mp_comm.Allreduce(out, full, MPI_SUM);  // the full output is the sum of the partial products
  return full;
}

template <class T>
xt::xtensor<T, 2> naive_collect_backward_output(const xt::xtensor<T, 2>& output_grad,
                                                int mp_group_idx, int mp_size) {
  const std::size_t width = output_grad.shape(1) / mp_size;
  return xt::view(output_grad, xt::all(), column_slice(mp_group_idx, width));
}

template <class T>
xt::xtensor<T, 2> naive_collect_backward_x(const xt::xtensor<T, 2>& grad_x, Communicator& mp_comm,
                                           int mp_size) {
  const std::size_t batch = grad_x.shape(0), width = grad_x.shape(1) / mp_size;
  xt::xtensor<T, 3> blocks({static_cast<std::size_t>(mp_size), batch, width});
  for (int r = 0; r < mp_size; ++r) {
    xt::view(blocks, r) = xt::view(grad_x, xt::all(), column_slice(r, width));
  }
  xt::xtensor<T, 2> mine({batch, width});
  mp_comm.Reduce_scatter(blocks, mine, MPI_SUM);  // sum block r over the group, deliver to rank r
  return mine;
}

template <class T>
xt::xtensor<T, 2> megatron_collect_backward_output(const xt::xtensor<T, 2>& output_grad,
                                                   int mp_group_idx, int mp_size) {
  return output_grad;  // fc2's slice produced a partial sum of the whole output: it needs it all
}

template <class T>
xt::xtensor<T, 2> megatron_collect_backward_x(const xt::xtensor<T, 2>& grad_x,
                                              Communicator& mp_comm, int mp_size) {
  return grad_x;  // output_grad · W_rᵀ involves only this rank's rows: nothing to add
}

template <class T>
std::pair<xt::xtensor<T, 2>, xt::xtensor<T, 2>> collect_weight_grad(const xt::xtensor<T, 2>& grad_w,
                                                                    const xt::xtensor<T, 2>& grad_b,
                                                                    Communicator& dp_comm) {
  xt::xtensor<T, 2> total_w(grad_w.shape());
  xt::xtensor<T, 2> total_b(grad_b.shape());
  dp_comm.Allreduce(grad_w, total_w, MPI_SUM);
  dp_comm.Allreduce(grad_b, total_b, MPI_SUM);
  return {std::move(total_w), std::move(total_b)};
}

// dtk:end
// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests and the trainer link against exactly these.
// -------------------------------------------------------------------------------------------
#define DTK_INSTANTIATE_FUNC_IMPL(T)                                                               \
  /* dtk:part 3 */                                                                                 \
  template xt::xtensor<T, 2> naive_collect_forward_input<T>(const xt::xtensor<T, 2>&,              \
                                                            Communicator&, int);                   \
  template xt::xtensor<T, 2> naive_collect_forward_output<T>(const xt::xtensor<T, 2>&,             \
                                                             Communicator&, int);                  \
  /* dtk:end */                                                                                    \
  /* dtk:part 6 */                                                                                 \
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
// dtk:end

DTK_INSTANTIATE_FUNC_IMPL(float)
DTK_INSTANTIATE_FUNC_IMPL(double)

}  // namespace dtk
