// The object behind audit_ipc.readelf: System V IPC and POSIX message queues, which outlive the
// process that makes them (a later grading could read what one leaves), reached by a graded
// function, through a helper, and by a static initializer. After a change here, from this
// directory:
//   g++ -std=gnu++17 -O0 -fPIC -ffunction-sections -c audit_ipc.cpp -o /tmp/audit_ipc.o
//   readelf -SrsW /tmp/audit_ipc.o > audit_ipc.readelf
#include <fcntl.h>
#include <mqueue.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>

namespace dtk {
namespace {
// Run before main, reached by no graded function: charged to every function of the file.
const int leftover = shmget(IPC_PRIVATE, 16 << 20, IPC_CREAT | 0666);
int helper() { return msgget(IPC_PRIVATE, IPC_CREAT | 0666); }
}  // namespace
int get_info(int x) { return helper() + semget(IPC_PRIVATE, 1, IPC_CREAT | 0666) + x; }
int split_train(int x) {
  return static_cast<int>(mq_open("/dtk", O_CREAT | O_RDWR, 0666, nullptr)) + x;
}
int naive_collect_forward_input(int x) { return x + leftover; }
}  // namespace dtk
