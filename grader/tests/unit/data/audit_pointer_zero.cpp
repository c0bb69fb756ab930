// See audit_pointer_collectives.cpp: a static initializer stores, in a global of this file, the
// address of a helper that calls Communicator::Allreduce.
#include <dtk/communicator.hpp>

#include <vector>
namespace dtk {
void (*hook)(std::vector<float>&, Communicator&) = nullptr;
namespace {
void sum_everywhere(std::vector<float>& v, Communicator& comm) { comm.Allreduce(v, v); }
struct Install {
  Install() { hook = sum_everywhere; }
} install;
}  // namespace
void zero1_grad_shard(std::vector<float>& v, Communicator& comm) { comm.Allreduce(v, v); }
}  // namespace dtk
