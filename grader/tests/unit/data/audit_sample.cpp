#include <mpi.h>
#include <unistd.h>
namespace dtk {
namespace {
int helper() { return fork(); }
}  // namespace
int get_info(int x) {
  MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return x;
}
int split_train(int x) { return helper() + x; }
int naive_collect_forward_input(int x) {
  int y;
  MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return y;
}
}  // namespace dtk
