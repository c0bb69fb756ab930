// The object behind audit_sample.readelf, the audit's unit-test input. After a change here, from
// this directory:
//   g++ -std=gnu++17 -O0 -fPIC -ffunction-sections -DOMPI_SKIP_MPICXX
//       -I../../../../starter/include $(mpicxx --showme:compile)
//       -c audit_sample.cpp -o /tmp/audit_sample.o
//   readelf -SrsW /tmp/audit_sample.o > audit_sample.readelf
#include <mpi.h>
#include <unistd.h>
#include <dtk/communicator.hpp>

#include <vector>
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
// Collectives of one's own: point-to-point calls, and one collective through the Communicator.
void my_allgather(std::vector<float>& v, Communicator& comm) { comm.Sendrecv(v, 1, v, 0); }
void my_allreduce(std::vector<float>& v, Communicator& comm) { comm.Allreduce(v, v); }
// A non-blocking send, for the rules of Isend.
void my_reduce_scatter(std::vector<float>& v, Communicator& comm) {
  Request sending = comm.Isend(v, 1);
  sending.Wait();
}
}  // namespace dtk
