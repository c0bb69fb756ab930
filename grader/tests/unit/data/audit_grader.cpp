// The object behind audit_grader.readelf: a student function template (one explicit instance,
// as Part 15's pipelined_ring) that calls the grader's own code (the runner exports it, as it
// exports the provided code). After a change here, from this directory:
//   g++ -std=gnu++17 -O0 -fPIC -ffunction-sections -c audit_grader.cpp -o /tmp/audit_grader.o
//   readelf -SrsW /tmp/audit_grader.o > audit_grader.readelf
namespace dtk::grade {
void mark_event(int kind, int tag);
}  // namespace dtk::grade
namespace dtk {
template <class T>
void pipelined_ring(T hops) {
  for (int hop = 0; hop < hops; ++hop) grade::mark_event(4, hop);
}
template void pipelined_ring<double>(double);
}  // namespace dtk
