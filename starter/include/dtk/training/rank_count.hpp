// The one message every trainer gives when mpirun started another number of ranks than the
// layout its flags ask for.
#pragma once

#include <string>

namespace dtk {

// "" when `ranks` is `wanted`; else `product` (the flags that multiply to `wanted`, e.g.
// "--mp_size 2 x --dp_size 4") " = 8 ranks, but mpirun started 4: run it with mpirun -n 8".
std::string rank_count_problem(const std::string& product, int wanted, int ranks);

}  // namespace dtk
