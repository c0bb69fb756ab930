// The symbol audit, on `readelf -SrsW` of real objects (data/audit_sample.cpp compiled with
// -ffunction-sections; data/audit_sample.readelf): get_info calls MPI_Bcast, split_train reaches
// fork through a helper, naive_collect_forward_input calls only MPI_Allreduce, my_reduce_scatter
// Communicator::Isend; and two objects
// linked together, by a call (data/audit_cross_*) or a global function pointer
// (data/audit_pointer_*); one calling the grader's own code (data/audit_grader).
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "compile/audit.hpp"
#include "manifest.hpp"

using namespace dtk::grade;

namespace {

std::string listing(const std::string& name) {
  std::ifstream file(DTK_UNIT_DATA_DIR "/" + name + ".readelf");
  REQUIRE(file);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string sample() { return listing("audit_sample"); }

const AuditRules rules{{"MPI_Allreduce", "MPI_Allgather"},
                       {"Allreduce", "Allgather", "Send", "Recv", "Sendrecv"},
                       {"fork", "dlsym"}};
const std::vector<std::string> graded = {"get_info", "split_train", "naive_collect_forward_input",
                                         "my_reduce_scatter"};

const AuditRules point_to_point{{}, {"Send", "Recv", "Sendrecv"}, {}};

// data/<prefix>_collectives and data/<prefix>_zero linked together: my_allreduce and
// my_allgather under Part 7's rules, zero1_grad_shard under Part 9's.
std::map<std::string, Audit> two_files(const std::string& prefix) {
  const AuditRules collectives{{}, {"Allreduce", "Allgather", "Reduce_scatter"}, {}};
  const std::vector<AuditedObject> library = {{"collectives.cpp", listing(prefix + "_collectives")},
                                              {"zero.cpp", listing(prefix + "_zero")}};
  return audit_library(library, {{"my_allreduce", "collectives.cpp", point_to_point},
                                 {"my_allgather", "collectives.cpp", point_to_point},
                                 {"zero1_grad_shard", "zero.cpp", collectives}});
}

}  // namespace

TEST_CASE("each graded function is charged with the forbidden calls it reaches", "[audit]") {
  const Audit audit = audit_object(sample(), graded, rules);
  CHECK(audit.forbidden.at("get_info") == std::set<std::string>{"MPI_Bcast"});
  CHECK(audit.forbidden.at("split_train") == std::set<std::string>{"fork"});  // via a helper
  CHECK(audit.forbidden.count("naive_collect_forward_input") == 0);
}

TEST_CASE("the rules decide: an allowed call is not charged", "[audit]") {
  AuditRules lenient = rules;
  lenient.allowed_mpi.insert("MPI_Bcast");
  CHECK(audit_object(sample(), graded, lenient).forbidden.count("get_info") == 0);
  AuditRules strict = rules;
  strict.allowed_mpi.erase("MPI_Allreduce");
  CHECK(audit_object(sample(), graded, strict).forbidden.at("naive_collect_forward_input") ==
        std::set<std::string>{"MPI_Allreduce"});
}

TEST_CASE("a Communicator call counts as a call of its own, ruled by allowed_communicator",
          "[audit]") {
  std::vector<std::string> own = graded;
  own.insert(own.end(), {"my_allgather", "my_allreduce"});
  CHECK(audit_object(sample(), own, rules).forbidden.count("my_allreduce") == 0);
  AuditRules point_to_point = rules;
  point_to_point.allowed_communicator = {"Send", "Recv", "Sendrecv"};
  const Audit audit = audit_object(sample(), own, point_to_point);
  CHECK(audit.forbidden.count("my_allgather") == 0);
  CHECK(audit.forbidden.at("my_allreduce") == std::set<std::string>{"Communicator::Allreduce"});
}

TEST_CASE("Isend is a Communicator call of its own: refused unless allowed", "[audit]") {
  std::vector<std::string> own = graded;
  own.insert(own.end(), {"my_allgather", "my_allreduce"});
  CHECK(audit_object(sample(), own, rules).forbidden.at("my_reduce_scatter") ==
        std::set<std::string>{"Communicator::Isend"});
  AuditRules non_blocking = rules;
  non_blocking.allowed_communicator.insert("Isend");
  CHECK(audit_object(sample(), own, non_blocking).forbidden.count("my_reduce_scatter") == 0);
}

TEST_CASE("a function's rules follow its calls into the other student files", "[audit]") {
  // data/audit_cross_*.cpp: my_allreduce calls a helper of the other file, which calls
  // Communicator::Allreduce, as the other file's own graded function does.
  std::map<std::string, Audit> audits = two_files("audit_cross");
  CHECK(audits["collectives.cpp"].forbidden.at("my_allreduce") ==
        std::set<std::string>{"Communicator::Allreduce"});
  CHECK(audits["collectives.cpp"].forbidden.count("my_allgather") == 0);
  CHECK(audits["zero.cpp"].forbidden.count("zero1_grad_shard") == 0);
  // Audited alone, the file calls nothing forbidden: the call leaves it.
  CHECK(audit_object(listing("audit_cross_collectives"), {"my_allreduce"}, point_to_point)
            .forbidden.count("my_allreduce") == 0);
}

TEST_CASE("a function pointer a static initializer stored in a global is followed", "[audit]") {
  // data/audit_pointer_*.cpp: my_allreduce calls through a global of the other file, where a
  // static initializer stored a helper calling Communicator::Allreduce.
  std::map<std::string, Audit> audits = two_files("audit_pointer");
  CHECK(audits["collectives.cpp"].forbidden.at("my_allreduce") ==
        std::set<std::string>{"Communicator::Allreduce"});
  CHECK(audits["collectives.cpp"].forbidden.count("my_allgather") == 0);
  CHECK(audits["zero.cpp"].forbidden.count("zero1_grad_shard") == 0);
}

TEST_CASE("the kit's rules refuse System V IPC and POSIX message queues, wherever reached",
          "[audit]") {
  // data/audit_ipc.cpp: they outlive the grading that made them (a later one could read them),
  // so every manifest refuses them (common.json's forbidden_symbols).
  for (const char* assignment : {"assignment1.json", "assignment2.json", "assignment3.json"}) {
    const Manifest manifest = load_manifest(DTK_KIT_MANIFESTS_DIR "/" + std::string(assignment));
    const AuditRules kit{{}, {}, manifest.forbidden_symbols};
    const Audit audit = audit_object(listing("audit_ipc"), graded, kit);
    CAPTURE(assignment);
    // The static initializer's shmget counts against every function of the file.
    CHECK(audit.forbidden.at("get_info") ==
          std::set<std::string>{"msgget", "semget", "shmget"});  // msgget via a helper
    CHECK(audit.forbidden.at("split_train") == std::set<std::string>{"mq_open", "shmget"});
    CHECK(audit.forbidden.at("naive_collect_forward_input") == std::set<std::string>{"shmget"});
  }
}

TEST_CASE("the grader's own code is not the student's to call", "[audit]") {
  // data/audit_grader: pipelined_ring<double> writes marks into the runner's event log itself.
  const Audit audit = audit_object(listing("audit_grader"), {"pipelined_ring"}, rules);
  CHECK(audit.forbidden.at("pipelined_ring") ==
        std::set<std::string>{"dtk::grade::mark_event(int, int)"});
  // An untyped check of a template calls an instance of its own: any instance defines it.
  CHECK(defines_function(audit, "pipelined_ring", ""));
  CHECK(defines_function(audit, "pipelined_ring", "double"));
  CHECK_FALSE(defines_function(audit, "pipelined_ring", "float"));
}

TEST_CASE("the audit lists the functions an object defines", "[audit]") {
  const Audit audit = audit_object(sample(), graded, rules);
  CHECK(defines_function(audit, "get_info", ""));
  CHECK(defines_function(audit, "split_train", ""));
  CHECK_FALSE(defines_function(audit, "collect_weight_grad", ""));
  CHECK(demangle("_ZN3dtk8get_infoEi") == "dtk::get_info(int)");
}

TEST_CASE("a graded class template is defined where its constructor's instance is", "[audit]") {
  // Part 16's FullyShardedBlocks<T>, checked in float and in double.
  Audit audit;
  audit.defined = {
      "dtk::FullyShardedBlocks<float>::FullyShardedBlocks(std::vector<xt::xtensor<float, 1ul>>, "
      "std::vector<unsigned long>, dtk::Communicator&)",
      "dtk::FullyShardedBlocks<double>::gather(int)"};
  CHECK(defines_function(audit, "FullyShardedBlocks", "float"));
  CHECK_FALSE(defines_function(audit, "FullyShardedBlocks", "double"));
}

TEST_CASE("text that is not readelf output yields an empty audit, not a crash", "[audit]") {
  Audit audit;
  REQUIRE_NOTHROW(audit = audit_object("garbage\n[ 1\n] x\nRelocation section '\n", graded, rules));
  CHECK(audit.defined.empty());
  CHECK(audit.forbidden.empty());
}
