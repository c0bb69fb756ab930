// Part 14.3 (assignment 4): the five-dimensional grid. Pure functions of the grid's shape: one
// process asks for every world rank's coordinates and every group of every rank, on grids whose
// sizes differ axis by axis (so that swapping two axes changes the answer), and for the
// arguments they must refuse. The known mistakes (the axes' order reversed, the expert groups
// strided, the gradient sums without the context ranks, the two expert groups swapped) are laid
// out in judge(), from a grid of the grader's own.
#include <array>
#include <functional>
#include <optional>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

// The case's grid: "tp=2 cp=3 dp=4 pp=2 ep=2" (missing sizes are 1).
GridShape case_grid(const TestCase& test) {
  const auto size = [&](const char* key) { return static_cast<int>(test.value(key, 1)); };
  GridShape grid;
  grid.tp = size("tp");
  grid.cp = size("cp");
  grid.dp = size("dp");
  grid.pp = size("pp");
  grid.ep = size("ep");
  return grid;
}

bool valid(const GridShape& g) {
  return g.tp >= 1 && g.cp >= 1 && g.dp >= 1 && g.pp >= 1 && g.ep >= 1 && g.dp % g.ep == 0;
}

int world_size(const GridShape& g) { return g.tp * g.cp * g.dp * g.pp; }

std::string grid_text(const GridShape& g) {
  return "{tp=" + std::to_string(g.tp) + ", cp=" + std::to_string(g.cp) +
         ", dp=" + std::to_string(g.dp) + ", pp=" + std::to_string(g.pp) +
         ", ep=" + std::to_string(g.ep) + "}";
}

std::vector<int> as_values(const GridCoordinates& at) {
  return {at.tp, at.cp, at.dp, at.pp, at.ep};
}

// The grader's coordinates, axis by axis from the fastest: `order` lists the axes (0 tp, 1 cp,
// 2 dp, 3 pp) fastest first, and `ep_of` makes ep_idx from (dp_idx, world rank). Megatron's
// order and ep_idx = dp_idx % ep are the right ones; the others, known mistakes.
using EpOf = std::function<int(const GridShape&, int dp_idx, int world_rank)>;

int ep_right(const GridShape& g, int dp_idx, int) { return dp_idx % g.ep; }

std::vector<int> coordinates(const GridShape& g, int rank, std::array<int, 4> order,
                             const EpOf& ep_of = ep_right) {
  const std::array<int, 4> sizes = {g.tp, g.cp, g.dp, g.pp};
  std::array<int, 4> index{};
  int rest = rank;
  for (int axis : order) {
    index[axis] = rest % sizes[axis];
    rest /= sizes[axis];
  }
  return {index[0], index[1], index[2], index[3], ep_of(g, index[2], rank)};
}

constexpr std::array<int, 4> kMegatronOrder = {0, 1, 2, 3}, kReversedOrder = {3, 2, 1, 0};

// The members of `rank`'s group: every rank whose coordinates `same` accepts, in increasing order.
using Same = std::function<bool(const std::vector<int>& mine, const std::vector<int>& other)>;

std::vector<int> members(const GridShape& g, int rank, const Same& same,
                         std::array<int, 4> order = kMegatronOrder) {
  const std::vector<int> mine = coordinates(g, rank, order);
  std::vector<int> found;
  for (int other = 0; other < world_size(g); ++other) {
    if (same(mine, coordinates(g, other, order))) found.push_back(other);
  }
  return found;
}

// Agreement on the axes listed (0 tp, 1 cp, 2 dp, 3 pp, 4 ep).
Same agree_on(std::vector<int> axes,
              std::function<bool(const std::vector<int>&, const std::vector<int>&)> also = {}) {
  return [axes, also](const std::vector<int>& a, const std::vector<int>& b) {
    for (int axis : axes)
      if (a[axis] != b[axis]) return false;
    return !also || also(a, b);
  };
}

struct GroupInfo {
  GridGroup group;
  const char* name;
  const char* part;  // the result part (rubric item) it is judged under
};

constexpr const char* kAxesPart = "the axes' groups (Tensor, Context, Data, Pipeline, Stage)";
constexpr const char* kExpertPart = "the expert-parallel group (Expert)";
constexpr const char* kGradientPart = "the gradient sums (DenseGradients, ExpertGradients)";

const std::vector<GroupInfo>& groups() {
  static const std::vector<GroupInfo> all = {
      {GridGroup::Tensor, "Tensor", kAxesPart},
      {GridGroup::Context, "Context", kAxesPart},
      {GridGroup::Data, "Data", kAxesPart},
      {GridGroup::Expert, "Expert", kExpertPart},
      {GridGroup::Pipeline, "Pipeline", kAxesPart},
      {GridGroup::DenseGradients, "DenseGradients", kGradientPart},
      {GridGroup::ExpertGradients, "ExpertGradients", kGradientPart},
      {GridGroup::Stage, "Stage", kAxesPart}};
  return all;
}

void record_refusals(CheckContext& context, const GridShape& grid, int rank) {
  const std::string args = grid_text(grid) + ", " + std::to_string(rank);
  context.out.note("arguments they must refuse: the grid " + grid_text(grid) + ", world rank " +
                   std::to_string(rank));
  record_refusal(context, "grid_coordinates(" + args + ")", [&] { grid_coordinates(grid, rank); });
  record_refusal(context, "grid_group(" + args + ", GridGroup::Tensor)",
                 [&] { grid_group(grid, rank, GridGroup::Tensor); });
}

bool refuses(const GridShape& grid, int rank) {
  return !valid(grid) || rank < 0 || rank >= world_size(grid);
}

// The case's grid, its note ending with `recorded`; none once the arguments it must refuse (sizes
// the contract refuses, or the case's rank=R outside the grid) are recorded instead.
std::optional<GridShape> start_grid_case(CheckContext& context, const std::string& recorded) {
  const GridShape grid = case_grid(context.test);
  const int only = static_cast<int>(context.test.value("rank", -1));
  if (refuses(grid, only < 0 ? 0 : only)) {
    record_refusals(context, grid, only);
    return std::nullopt;
  }
  context.out.note("the grid " + grid_text(grid) + " of " + std::to_string(world_size(grid)) +
                   " ranks; " + recorded);
  return grid;
}

void check_grid_coordinates(CheckContext& context) {
  const std::optional<GridShape> shape = start_grid_case(
      context, "each rank's coordinates as [tp_idx, cp_idx, dp_idx, pp_idx, ep_idx]");
  if (!shape) return;
  const GridShape grid = *shape;
  for (int rank = 0; rank < world_size(grid); ++rank) {
    const std::string name = "world rank " + std::to_string(rank);
    const GridCoordinates at = context.call([&] { return grid_coordinates(grid, rank); });
    record_tensor(context.out, name, int_tensor(as_values(at)));
    context.judge([&](Judgement& judgement) {
      const auto mistake = [&](const std::string& what, const std::vector<int>& values) {
        judgement.mistake(name, what, int_tensor(values));
      };
      mistake("the axes' order reversed (pp fastest, tp slowest)",
              coordinates(grid, rank, kReversedOrder));
      mistake("ep_idx from the world rank (world rank % ep), not from dp_idx",
              coordinates(grid, rank, kMegatronOrder,
                          [](const GridShape& g, int, int world) { return world % g.ep; }));
      mistake("ep_idx = dp_idx / (dp / ep): the expert groups strided, not consecutive",
              coordinates(grid, rank, kMegatronOrder, [](const GridShape& g, int dp_idx, int) {
                return dp_idx / (g.dp / g.ep);
              }));
    });
  }
}

void check_grid_group(CheckContext& context) {
  const std::optional<GridShape> shape =
      start_grid_case(context, "each rank's groups as world ranks in increasing order");
  if (!shape) return;
  const GridShape grid = *shape;
  for (const GroupInfo& info : groups()) {
    context.out.part(info.part);
    for (int rank = 0; rank < world_size(grid); ++rank) {
      const std::string name = "world rank " + std::to_string(rank) + "'s GridGroup::" + info.name;
      record_tensor(context.out, name,
                    int_tensor(context.call([&] { return grid_group(grid, rank, info.group); })));
      context.judge([&](Judgement& judgement) {
        const auto mistake = [&](const std::string& what, const Same& same,
                                 std::array<int, 4> order = kMegatronOrder) {
          judgement.mistake(name, what, int_tensor(members(grid, rank, same, order)));
        };
        const auto expert_run = [&](const std::vector<int>& a, const std::vector<int>& b) {
          return a[2] / grid.ep == b[2] / grid.ep;
        };
        switch (info.group) {
          case GridGroup::Tensor:
            mistake("the axes' order reversed (pp fastest)", agree_on({1, 2, 3}), kReversedOrder);
            break;
          case GridGroup::Expert:
            mistake("the ranks of the same ep_idx (ExpertGradients: they hold the same experts)",
                    agree_on({0, 3, 4}));
            mistake("every (dp / ep)-th dp rank: the expert groups strided, not consecutive",
                    agree_on({0, 1, 3}, [&](const auto& a, const auto& b) {
                      return a[2] % (grid.dp / grid.ep) == b[2] % (grid.dp / grid.ep);
                    }));
            break;
          case GridGroup::DenseGradients:
            mistake(
                "over the dp ranks only (the context ranks hold other positions of the same "
                "sequences: their gradients are partial too)",
                agree_on({0, 1, 3}));
            mistake("over the whole stage (the tp ranks hold other slices of the parameter)",
                    agree_on({3}));
            break;
          case GridGroup::ExpertGradients:
            mistake("the Expert group's ranks (those hold other experts)",
                    agree_on({0, 1, 3}, expert_run));
            mistake("without the context ranks", agree_on({0, 1, 3, 4}));
            break;
          default:
            break;
        }
      });
    }
  }
}

}  // namespace

DTK_GRADE_CHECK(check_grid_coordinates, {"grid_coordinates",
                                         CaseKind::fields,
                                         /*collective=*/false,
                                         /*typed=*/false,
                                         {},
                                         /*reduces=*/false,
                                         /*timed_against=*/"",
                                         /*case_words=*/{"tp", "cp", "dp", "pp", "ep", "rank"}});
DTK_GRADE_CHECK(check_grid_group, {"grid_group",
                                   CaseKind::fields,
                                   /*collective=*/false,
                                   /*typed=*/false,
                                   {kAxesPart, kExpertPart, kGradientPart},
                                   /*reduces=*/false,
                                   /*timed_against=*/"",
                                   /*case_words=*/{"tp", "cp", "dp", "pp", "ep", "rank"}});

}  // namespace dtk::grade
