// Test case ids: the manifest's case texts, and the ids the grader passes to the runner.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "test_case.hpp"

using namespace dtk::grade;
using Catch::Matchers::Contains;

TEST_CASE("a layout case parses into its grid and type, and prints back the same", "[test_case]") {
  const TestCase test = parse_test_case("naive_collect_forward_input", "mp=4 dp=2 float");
  CHECK(test.mp == 4);
  CHECK(test.dp == 2);
  CHECK(test.type == "float");
  CHECK(test.ranks() == 8);
  CHECK(test.id() == "naive_collect_forward_input mp=4 dp=2 float");
  CHECK(parse_test_id(test.id()).id() == test.id());
}

TEST_CASE("a function that is not collective runs on one process", "[test_case]") {
  CHECK(parse_test_case("split_train", "mp=4 dp=2 double").ranks() == 1);
  CHECK(parse_test_case("get_info", "mp=2 dp=4").ranks() == 8);
}

TEST_CASE("config and budget cases keep their text", "[test_case]") {
  CHECK(parse_test_case("model_training_cost_analysis", "gpt2_small").case_text() == "gpt2_small");
  CHECK(parse_test_case("model_training_cost_analysis", "random gpt2 b").case_text() ==
        "random gpt2 b");
  CHECK(parse_test_case("get_optimal_N_D", "1.23e22").case_text() == "1.23e22");
  CHECK(parse_test_case("get_optimal_N_D", "random").ranks() == 1);
}

TEST_CASE("a bad case is refused with a message naming it", "[test_case]") {
  CHECK_THROWS_WITH(parse_test_case("no_such_function", "mp=1 dp=1"), Contains("no_such_function"));
  CHECK_THROWS_AS(parse_test_case("split_train", "mp=2 dp=2"), std::invalid_argument);  // no type
  CHECK_THROWS_WITH(parse_test_case("split_train", "mp=0 dp=2 float"), Contains("mp=0"));
  CHECK_THROWS_WITH(parse_test_case("get_info", "mp=2 dp=2 float"), Contains("float"));
  CHECK_THROWS_WITH(parse_test_case("split_train", "mp=2 dp=2 half"), Contains("half"));
  CHECK_THROWS_AS(parse_test_case("get_optimal_N_D", "-1e22"), std::invalid_argument);
  CHECK_THROWS_AS(parse_test_case("get_optimal_N_D", "lots"), std::invalid_argument);
  CHECK_THROWS_AS(parse_test_case("model_training_cost_analysis", "../etc/passwd"),
                  std::invalid_argument);
}

TEST_CASE("a buffer case parses into ranks, count, type and op, and prints back the same",
          "[test_case]") {
  const TestCase test = parse_test_case("my_allreduce", "count=13 p=4 int32 max");
  CHECK(test.p == 4);
  CHECK(test.count == 13);
  CHECK(test.type == "int32");
  CHECK(test.op == "max");
  CHECK(test.ranks() == 4);
  CHECK(test.id() == "my_allreduce p=4 count=13 int32 max");
  CHECK(parse_test_id(test.id()).id() == test.id());
  CHECK(parse_test_case("my_alltoall", "p=2 count=0 float").op.empty());
}

TEST_CASE("a bad buffer case is refused with a message naming it", "[test_case]") {
  CHECK_THROWS_WITH(parse_test_case("my_allreduce", "p=4 count=13 float"), Contains("no op"));
  CHECK_THROWS_WITH(parse_test_case("my_alltoall", "p=4 count=13 float sum"), Contains("sum"));
  CHECK_THROWS_WITH(parse_test_case("my_allgather", "p=4 float"), Contains("count=N"));
  CHECK_THROWS_WITH(parse_test_case("my_allgather", "p=0 count=1 float"), Contains("p=0"));
  CHECK_THROWS_WITH(parse_test_case("my_allgather", "p=2 count=-1 float"), Contains("count=-1"));
  CHECK_THROWS_WITH(parse_test_case("my_allgather", "p=2 count=3"), Contains("neither"));
}

TEST_CASE("pipeline and ZeRO cases parse, print back the same and know their ranks",
          "[test_case]") {
  const TestCase pipeline =
      parse_test_case("run_pipeline_schedule", "1f1b p=4 m=8 float width=4096");
  CHECK(pipeline.id() == "run_pipeline_schedule p=4 m=8 1f1b float width=4096");
  CHECK(pipeline.ranks() == 4);
  CHECK(parse_test_case("partition_layers", "p=3 layers=7").ranks() == 1);
  const TestCase ties = parse_test_case("partition_layers", "costs=dominant-first p=4 layers=6");
  CHECK(ties.id() == "partition_layers p=4 layers=6 costs=dominant-first");
  CHECK(parse_test_id(ties.id()).costs == "dominant-first");
  CHECK_THROWS_WITH(parse_test_case("partition_layers", "p=4 layers=6 costs=lopsided"),
                    Contains("costs=lopsided"));
  CHECK_THROWS_WITH(parse_test_case("gpipe_schedule", "p=4 m=2 costs=zero-layers"),
                    Contains("without layers=L"));
  CHECK(parse_test_case("get_pipeline_info", "mp=2 dp=2 pp=2").ranks() == 8);
  const TestCase memory = parse_test_case("zero_memory_per_rank", "psi=7.5e9 dp=64 k=12");
  CHECK(memory.case_text() == "psi=7.5e+09 dp=64 k=12");
  CHECK(parse_test_id(memory.id()).psi == 7.5e9);
  CHECK(parse_test_case("zero2_grad_shard", "numel=10 dp=4 float").ranks() == 4);
  CHECK(parse_test_case("zero_memory_per_rank", "random b").case_text() == "random b");
  CHECK_THROWS_WITH(parse_test_case("run_pipeline_schedule", "p=4 1f1b float"), Contains("m=M"));
  CHECK_THROWS_WITH(parse_test_case("zero_shard_range", "dp=4"), Contains("numel=N"));
  CHECK_THROWS_WITH(parse_test_case("zero1_grad_shard", "numel=10 dp=4"), Contains("neither"));
}

TEST_CASE("a plan case parses into its configs and batch, and prints back the same",
          "[test_case]") {
  const TestCase test = parse_test_case(
      "plan_training", "model=llama3_8b cluster=h100_80gb_x64 tokens=4194304 seq=8192");
  CHECK(test.model == "llama3_8b");
  CHECK(test.cluster == "h100_80gb_x64");
  CHECK(test.tokens == 4194304);
  CHECK(test.seq == 8192);
  CHECK(test.ranks() == 1);
  CHECK(parse_test_id(test.id()).id() == test.id());
}

TEST_CASE("a bad plan case is refused with a message naming it", "[test_case]") {
  const std::string good = "model=m cluster=c tokens=8192 seq=4096";
  CHECK_NOTHROW(parse_test_case("plan_training", good));
  CHECK_THROWS_WITH(parse_test_case("plan_training", "model=m cluster=c tokens=8192"),
                    Contains("model=NAME cluster=NAME tokens=T seq=S"));
  CHECK_THROWS_WITH(parse_test_case("plan_training", "cluster=c model=m tokens=8192 seq=4096"),
                    Contains("\"cluster=c\" is not model="));
  CHECK_THROWS_WITH(parse_test_case("plan_training", "model=../m cluster=c tokens=8192 seq=4096"),
                    Contains("not a config name"));
  CHECK_THROWS_WITH(parse_test_case("plan_training", "model=m cluster=c tokens=-1 seq=4096"),
                    Contains("has no batch"));
  CHECK_THROWS_WITH(parse_test_case("plan_training", "model=m cluster=c tokens=8192 seq=2.5"),
                    Contains("has no batch"));
  // A batch no plan can train is a case too: one plan_training must refuse.
  CHECK_NOTHROW(parse_test_case("plan_training", "model=m cluster=c tokens=8000 seq=4096"));
  CHECK_NOTHROW(parse_test_case("plan_training", "model=m cluster=c tokens=8192 seq=0"));
}
