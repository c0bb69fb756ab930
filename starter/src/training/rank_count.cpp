#include "dtk/training/rank_count.hpp"

namespace dtk {

std::string rank_count_problem(const std::string& product, int wanted, int ranks) {
  if (ranks == wanted) return "";
  const std::string n = std::to_string(wanted);
  return product + " = " + n + " ranks, but mpirun started " + std::to_string(ranks) +
         ": run it with mpirun -n " + n;
}

}  // namespace dtk
