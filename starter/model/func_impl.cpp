// dtk:part 6
// Parts 2, 3 and 6: the communication of model-parallel and data-parallel training.
// dtk:end
// dtk:without 6
// Parts 2 and 3: the communication of model-parallel and data-parallel training.
// dtk:end
// Declared, with the exact contract of every function, in include/dtk/func_impl.hpp: read the
// comments there first. Every rank of a communicator must make the same collective calls in
// the same order, or the program hangs.
#include <dtk/func_impl.hpp>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

namespace dtk {

// dtk:part 2
// ----------------------------------- Part 2 ------------------------------------------------

ParallelInfo get_info(const Communicator& comm, int rank, int mp_size, int dp_size, bool is_fc1,
                      bool is_megatron_mp, int in_dim, int out_dim) {
  // TODO (Part 2):
  //  1. mp_idx and dp_idx from rank and mp_size (mp-major layout: you may not need dp_size).
  //  2. mp_comm: the ranks with your dp_idx, ordered by mp_idx; dp_comm: the ranks with your
  //     mp_idx, ordered by dp_idx. Two calls to comm.Split(color, key) make them.
  //  3. part_in_dim and part_out_dim from is_fc1 and is_megatron_mp (naive: both layers split
  //     by output; Megatron: fc1 by output, fc2 by input).
  //  Return ParallelInfo{mp_idx, dp_idx, mp_comm, dp_comm, part_in_dim, part_out_dim}.
  throw NotImplemented("get_info", "model/func_impl.cpp");
}

// dtk:end
// dtk:part 3
// ----------------------------------- Part 3 ------------------------------------------------

template <class T>
xt::xtensor<T, 2> naive_collect_forward_input(const xt::xtensor<T, 2>& x, Communicator& mp_comm,
                                              int mp_size) {
  // TODO (Part 3): Allgather every rank's (batch, k) slice, then rearrange the gathered blocks
  // (they arrive one after another in memory) into a (batch, mp_size * k) tensor.
  // Hint: gather into a tensor of shape {mp_size, batch, k}; xt::view(gathered, r) is rank r's
  // block, and xt::view(result, xt::all(), xt::range(r * k, (r + 1) * k)) is where it belongs.
  throw NotImplemented("naive_collect_forward_input", "model/func_impl.cpp");
}

template <class T>
xt::xtensor<T, 2> naive_collect_forward_output(const xt::xtensor<T, 2>& out, Communicator& mp_comm,
                                               int mp_size) {
  // TODO (Part 3): the same collection as above, for fc2's output slices.
  throw NotImplemented("naive_collect_forward_output", "model/func_impl.cpp");
}

// dtk:end
// dtk:part 6
// ----------------------------------- Part 6 ------------------------------------------------

template <class T>
xt::xtensor<T, 2> megatron_collect_forward_input(const xt::xtensor<T, 2>& x, Communicator& mp_comm,
                                                 int mp_size) {
  // TODO (Part 6): what does Megatron's fc2 need beyond the input slice it already has?
  throw NotImplemented("megatron_collect_forward_input", "model/func_impl.cpp");
}

template <class T>
xt::xtensor<T, 2> megatron_collect_forward_output(const xt::xtensor<T, 2>& out,
                                                  Communicator& mp_comm, int mp_size) {
  // TODO (Part 6): turn every rank's partial output into the full output (one collective).
  throw NotImplemented("megatron_collect_forward_output", "model/func_impl.cpp");
}

template <class T>
xt::xtensor<T, 2> naive_collect_backward_output(const xt::xtensor<T, 2>& output_grad,
                                                int mp_group_idx, int mp_size) {
  // TODO (Part 6): keep the columns of output_grad that belong to this rank's output slice.
  // No communication is needed: every rank already holds the full output_grad.
  throw NotImplemented("naive_collect_backward_output", "model/func_impl.cpp");
}

template <class T>
xt::xtensor<T, 2> naive_collect_backward_x(const xt::xtensor<T, 2>& grad_x, Communicator& mp_comm,
                                           int mp_size) {
  // TODO (Part 6): sum the contributions over the group AND keep only your column slice, in one
  // Reduce_scatter. Its blocks are contiguous in memory, so first lay grad_x out as a tensor of
  // shape {mp_size, batch, in_dim / mp_size} whose block r is columns of slice r.
  throw NotImplemented("naive_collect_backward_x", "model/func_impl.cpp");
}

template <class T>
xt::xtensor<T, 2> megatron_collect_backward_output(const xt::xtensor<T, 2>& output_grad,
                                                   int mp_group_idx, int mp_size) {
  // TODO (Part 6): which part of the full output gradient does Megatron's fc2 slice use?
  throw NotImplemented("megatron_collect_backward_output", "model/func_impl.cpp");
}

template <class T>
xt::xtensor<T, 2> megatron_collect_backward_x(const xt::xtensor<T, 2>& grad_x,
                                              Communicator& mp_comm, int mp_size) {
  // TODO (Part 6): is output_grad · W_rᵀ already the gradient of this rank's input slice?
  throw NotImplemented("megatron_collect_backward_x", "model/func_impl.cpp");
}

template <class T>
std::pair<xt::xtensor<T, 2>, xt::xtensor<T, 2>> collect_weight_grad(const xt::xtensor<T, 2>& grad_w,
                                                                    const xt::xtensor<T, 2>& grad_b,
                                                                    Communicator& dp_comm) {
  // TODO (Part 6): sum both gradients over the data-parallel group.
  throw NotImplemented("collect_weight_grad", "model/func_impl.cpp");
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
