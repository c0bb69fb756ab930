// Part 2: get_info on every layer variant (fc1/fc2, naive/Megatron) of one (mp, dp) grid.
// The communicators it returns are checked by what they do: their size, this rank's rank in
// them, who is in them in which order (an Allgather of world ranks) and a group reduction.
#include "check_context.hpp"

namespace dtk::grade {

namespace {

void record_communicator(CheckContext& context, const std::string& name, Communicator& comm) {
  const int world_rank = context.world.Get_rank();
  const std::size_t size = comm.Get_size();
  context.out.integer(name + ".Get_size()", static_cast<long long>(size));
  context.out.integer(name + ".Get_rank()", comm.Get_rank());
  xt::xtensor<std::int32_t, 1> mine = {world_rank};
  auto members = xt::xtensor<std::int32_t, 1>::from_shape({size});
  comm.Allgather(mine, members);
  record_tensor(context.out, name + ": world ranks in communicator order", members);
  xt::xtensor<std::int64_t, 1> one = {world_rank + 1}, sum = {0};
  comm.Allreduce(one, sum, MPI_SUM);
  context.out.integer(name + ": Allreduce sum of (world rank + 1)", sum(0));
}

}  // namespace

void check_get_info(CheckContext& context) {
  const int mp = context.test.mp, dp = context.test.dp;
  const int rank = context.world.Get_rank();
  Rng shape = context.rng("shape");
  struct Variant {
    bool is_fc1, is_megatron_mp;
    const char* name;
  };
  const Variant variants[] = {{true, false, "fc1 naive"},
                              {false, false, "fc2 naive"},
                              {true, true, "fc1 Megatron"},
                              {false, true, "fc2 Megatron"}};
  for (const Variant& variant : variants) {
    const int in_dim = mp * shape.uniform_int(1, 6), out_dim = mp * shape.uniform_int(1, 6);
    const std::string layer = std::string(variant.name) + " (" + std::to_string(in_dim) + " -> " +
                              std::to_string(out_dim) + ")";
    ParallelInfo info = get_info(context.world, rank, mp, dp, variant.is_fc1,
                                 variant.is_megatron_mp, in_dim, out_dim);
    context.out.integer(layer + ": mp_idx", info.mp_idx);
    context.out.integer(layer + ": dp_idx", info.dp_idx);
    context.out.integer(layer + ": part_in_dim", info.part_in_dim);
    context.out.integer(layer + ": part_out_dim", info.part_out_dim);
    record_communicator(context, layer + ": mp_comm", info.mp_comm);
    record_communicator(context, layer + ": dp_comm", info.dp_comm);
  }
}

}  // namespace dtk::grade
