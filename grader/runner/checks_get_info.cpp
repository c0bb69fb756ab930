// Part 2: get_info on every layer variant (fc1/fc2, naive/Megatron) of one (mp, dp) grid.
// The communicators it returns are checked by what they do: their size, this rank's rank in
// them, who is in them in which order (an Allgather of world ranks) and a group reduction.
#include <algorithm>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

using Ranks = xt::xtensor<std::int32_t, 1>;

// World ranks rank(k) for k = 0 .. count - 1.
template <class Rank>
Ranks ranks(int count, Rank rank) {
  auto list = Ranks::from_shape({static_cast<std::size_t>(count)});
  for (int k = 0; k < count; ++k) list(k) = rank(k);
  return list;
}

// The members of a communicator in the orders that known mistakes give them.
struct KnownOrders {
  Ranks right, other_group, dp_major;
};

void record_communicator(CheckContext& context, const std::string& name, Communicator& comm,
                         const KnownOrders& orders) {
  const int world_rank = context.rank();
  const std::size_t size = comm.Get_size();
  context.out.integer(name + ".Get_size()", static_cast<long long>(size));
  context.out.integer(name + ".Get_rank()", comm.Get_rank());
  xt::xtensor<std::int32_t, 1> mine = {world_rank};
  auto members = Ranks::from_shape({size});
  comm.Allgather(mine, members);
  const std::string order = name + ": world ranks in communicator order";
  record_tensor(context.out, order, members);
  context.judge([&](Judgement& judgement) {
    Ranks reversed = orders.right;
    std::reverse(reversed.begin(), reversed.end());
    judgement.mistake(order, "the right members in reverse order (Split key reversed)", reversed);
    judgement.mistake(order, "the members of the other communicator (colors swapped)",
                      orders.other_group);
    judgement.mistake(order, "a dp-major layout (mp_idx = rank / dp_size, dp_idx = rank % dp_size)",
                      orders.dp_major);
  });
  xt::xtensor<std::int64_t, 1> one = {world_rank + 1}, sum = {0};
  comm.Allreduce(one, sum, MPI_SUM);
  context.out.integer(name + ": Allreduce sum of (world rank + 1)", sum(0));
}

void check_get_info(CheckContext& context) {
  const int mp = context.test.mp, dp = context.test.dp;
  const int rank = context.rank(), mp_idx = rank % mp, dp_idx = rank / mp;
  const KnownOrders mp_members{ranks(mp, [&](int k) { return dp_idx * mp + k; }),
                               ranks(dp, [&](int k) { return k * mp + mp_idx; }),
                               ranks(mp, [&](int k) { return k * dp + rank % dp; })};
  const KnownOrders dp_members{mp_members.other_group, mp_members.right,
                               ranks(dp, [&](int k) { return (rank / dp) * dp + k; })};
  struct Variant {
    bool is_fc1, is_megatron_mp;
    const char* name;
  };
  const Variant variants[] = {{true, false, "fc1 naive"},
                              {false, false, "fc2 naive"},
                              {true, true, "fc1 Megatron"},
                              {false, true, "fc2 Megatron"}};
  for (const Variant& variant : variants) {
    // Non-square layers of the MLP's shape: fc1 maps 5 mp features to 3 mp, fc2 back.
    const int in_dim = (variant.is_fc1 ? 5 : 3) * mp, out_dim = (variant.is_fc1 ? 3 : 5) * mp;
    const std::string layer = std::string(variant.name) + " (" + std::to_string(in_dim) + " -> " +
                              std::to_string(out_dim) + ")";
    ParallelInfo info = context.call([&] {
      return get_info(context.world, rank, mp, dp, variant.is_fc1, variant.is_megatron_mp, in_dim,
                      out_dim);
    });
    context.out.part("mp_idx and dp_idx");
    context.out.integer(layer + ": mp_idx", info.mp_idx);
    context.out.integer(layer + ": dp_idx", info.dp_idx);
    context.out.part(variant.is_megatron_mp ? "slice widths, Megatron" : "slice widths, naive");
    context.out.integer(layer + ": part_in_dim", info.part_in_dim);
    context.out.integer(layer + ": part_out_dim", info.part_out_dim);
    context.out.part("mp_comm: members and order");
    record_communicator(context, layer + ": mp_comm", info.mp_comm, mp_members);
    context.out.part("dp_comm: members and order");
    record_communicator(context, layer + ": dp_comm", info.dp_comm, dp_members);
  }
}

}  // namespace

DTK_GRADE_CHECK(check_get_info,
                {"get_info",
                 CaseKind::layout,
                 /*collective=*/true,
                 /*typed=*/false,
                 {"mp_idx and dp_idx", "mp_comm: members and order", "dp_comm: members and order",
                  "slice widths, naive", "slice widths, Megatron"}});

}  // namespace dtk::grade
