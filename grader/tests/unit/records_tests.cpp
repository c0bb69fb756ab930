// The runner's records: what the runner writes, the grader reads back; anything else is ignored.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include <unistd.h>

#include "keys.hpp"
#include "launch_file.hpp"
#include "records.hpp"

using namespace dtk::grade;

namespace {

const std::string kKey = "00112233445566778899aabbccddeeff";  // a launch's key

// Runs `write` on a RecordWriter and returns the text it wrote.
template <class Write>
std::string written(Write write) {
  char path[] = "/tmp/dtk-records-test.XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  {
    RecordWriter writer(path, kKey);
    write(writer);
  }
  std::ifstream file(path);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::remove(path);
  return text;
}

// "begin ID\n" + body + the end line the runner would write for them.
std::string signed_block(const std::string& id, const std::string& body) {
  const std::string block = "begin " + id + "\n" + body;
  return block + "end " + id + " " + block_hash(kKey, block) + "\n";
}

}  // namespace

TEST_CASE("every kind of record round-trips through the writer and the parser", "[records]") {
  const std::string id = "get_info mp=2 dp=1";
  const RankOutput outputs =
      parse_rank_output(written([&](RecordWriter& out) {
                          out.begin(id);
                          out.note("batch 3,\nslice width 2");
                          out.outcome("your plan tp=2");
                          out.integer("mp_idx", 1);
                          out.real("num_tflops", 0.897648164864);
                          out.tensor("x", "double", {2, 3}, {1, 2, 3, 4, 5, 6.5});
                          out.error("NotImplemented: dtk::get_info");
                          out.forbidden("MPI_Bcast", "dtk::get_info");
                          out.part("mp_comm: members and order");
                          out.integer("mp_comm size", 2);
                          out.moved(48);
                          out.received(24, 16);
                          out.end(id);
                        }),
                        kKey);
  REQUIRE(outputs.count(id) == 1);
  const TestOutput& test = outputs.at(id);
  CHECK(test.complete);
  REQUIRE(test.notes.size() == 1);
  CHECK(test.notes[0].find('\n') == std::string::npos);  // one record per line
  CHECK(test.outcomes == std::vector<std::string>{"your plan tp=2"});
  REQUIRE(test.find("mp_idx") != nullptr);
  CHECK(test.find("mp_idx")->integer == 1);
  REQUIRE(test.find("num_tflops") != nullptr);
  CHECK(test.find("num_tflops")->values.at(0) == Approx(0.897648164864));
  const Value* x = test.find("x");
  REQUIRE(x != nullptr);
  CHECK(x->dtype == "double");
  CHECK(x->shape == std::vector<std::size_t>{2, 3});
  CHECK(x->values == std::vector<double>{1, 2, 3, 4, 5, 6.5});
  CHECK(test.errors == std::vector<std::string>{"NotImplemented: dtk::get_info"});
  REQUIRE(test.forbidden.size() == 1);
  CHECK(test.forbidden[0].find("MPI_Bcast") != std::string::npos);
  CHECK(test.find("absent") == nullptr);
  CHECK(test.find("mp_idx")->part.empty());
  CHECK(test.find("mp_comm size")->part == "mp_comm: members and order");
  CHECK(test.moved == 48);
  CHECK(test.received == 24);
  CHECK(test.least_received == 16);
  CHECK_FALSE(test.tampered);
}

TEST_CASE("a block begun twice or with a wrong hash is tampered with, not complete", "[records]") {
  const std::string good = signed_block("t", "int n\t3\n");
  const RankOutput twice = parse_rank_output(good + good, kKey);
  CHECK(twice.at("t").tampered);
  const RankOutput other_key = parse_rank_output(good, "ffeeddccbbaa99887766554433221100");
  CHECK(other_key.at("t").tampered);
  CHECK_FALSE(other_key.at("t").complete);
}

TEST_CASE("a test whose end was never written is incomplete", "[records]") {
  const RankOutput outputs = parse_rank_output("begin a mp=1 dp=1\nint n\t3\n", kKey);
  REQUIRE(outputs.count("a mp=1 dp=1") == 1);
  CHECK_FALSE(outputs.at("a mp=1 dp=1").complete);
}

TEST_CASE("malformed records are skipped, never thrown", "[records]") {
  const std::string text = "int outside\t1\n" +  // before any begin
                           signed_block("t",
                                        "int n\tseven\n"                     // not a number
                                        "tensor x\tdouble 2 2 2 : 1 2 3\n"   // too few values
                                        "tensor y\tdouble 1 99999999 : 1\n"  // absurd size
                                        "real r\n"                           // no value
                                        "gibberish \xff\xfe\n"
                                        "int ok\t5\n");
  RankOutput outputs;
  REQUIRE_NOTHROW(outputs = parse_rank_output(text, kKey));
  const TestOutput& test = outputs.at("t");
  CHECK(test.complete);
  REQUIRE(test.values.size() == 1);
  CHECK(test.values[0].first == "ok");
}

TEST_CASE("one_line keeps a text on one record line", "[records]") {
  CHECK(one_line("a\tb\nc\rd") == "a b c d");
}

TEST_CASE("evidence is read apart from the values, and written back as it was", "[records]") {
  const std::string text = written([](RecordWriter& out) {
    out.begin("plan_training model=m cluster=c tokens=8 seq=4");
    out.part("the plan");
    out.integer("steps", 3);
    out.evidence("plan", "int64", {3}, {8, 1, 2});
    out.end("plan_training model=m cluster=c tokens=8 seq=4");
  });
  const RankOutput outputs = parse_rank_output(text, kKey);
  const TestOutput& output = outputs.at("plan_training model=m cluster=c tokens=8 seq=4");
  REQUIRE(output.complete);
  REQUIRE(output.values.size() == 1);  // the judge never compares evidence
  REQUIRE(output.evidence.size() == 1);
  CHECK(output.evidence[0].first == "plan");
  CHECK(output.evidence[0].second.values == std::vector<double>{8, 1, 2});
  const std::string again = written([&](RecordWriter& out) {
    out.begin("again");
    out.outputs_of(output);
    out.end("again");
  });
  const RankOutput copies = parse_rank_output(again, kKey);
  const TestOutput& copy = copies.at("again");
  CHECK(copy.values[0].first == "steps");
  CHECK(copy.values[0].second.part == "the plan");
  CHECK(copy.evidence[0].second.values == std::vector<double>{8, 1, 2});
}

TEST_CASE("a received record without a least says so", "[records]") {
  const std::string text = written([](RecordWriter& out) {
    out.begin("t");
    out.received(64, -1);
    out.end("t");
  });
  const RankOutput outputs = parse_rank_output(text, kKey);
  const TestOutput& output = outputs.at("t");
  CHECK(output.received == 64);
  CHECK(output.least_received == -1);
}

TEST_CASE("each rank's launch file holds its own input keys only", "[records]") {
  const std::vector<std::string> tests = {"my_allreduce p=2 count=4 float sum",
                                          "split_train mp=1 dp=1 float"};
  const LaunchFile rank0 = launch_file_for(0, tests, 7, /*judging=*/false);
  const LaunchFile rank1 = launch_file_for(1, tests, 7, false);
  CHECK_FALSE(rank0.seed);
  CHECK(rank0.record_key != rank1.record_key);  // fresh, by rank
  REQUIRE(rank0.test_keys.size() == 2);
  CHECK(rank0.test_keys[0].first == input_key(7, tests[0], 0));
  CHECK(rank1.test_keys[0].first == input_key(7, tests[0], 1));
  CHECK(rank0.test_keys[0].first != rank1.test_keys[0].first);
  CHECK(rank0.test_keys[0].second == rank1.test_keys[0].second);  // the shared key
  CHECK(rank0.test_keys[0].first != rank0.test_keys[1].first);    // by test
  CHECK(input_key(7, tests[0], 0) != input_key(8, tests[0], 0));  // by seed
  LaunchFile parsed;
  REQUIRE(LaunchFile::parse(rank1.text(), parsed));
  CHECK(parsed.test_keys == rank1.test_keys);
  CHECK(parsed.record_key == rank1.record_key);
  const LaunchFile judging = launch_file_for(0, tests, 7, true);
  REQUIRE(LaunchFile::parse(judging.text(), parsed));
  CHECK(parsed.seed == std::optional<std::uint64_t>(7));
  const std::vector<std::string> bad = {"", "record 12\n",
                                        "record " + rank0.record_key + "\ntest 1 2\n",
                                        "record " + rank0.record_key + "\nseed x\n"};
  for (const std::string& text : bad) CHECK_FALSE(LaunchFile::parse(text, parsed));
}

TEST_CASE("a restart right after a test's verified end marks that test; anywhere else, nothing",
          "[records]") {
  // The runner's own: after end(), restart().
  const RankOutput written_out = parse_rank_output(written([](RecordWriter& out) {
                                                     out.begin("a");
                                                     out.end("a");
                                                     out.restart();
                                                   }),
                                                   kKey);
  CHECK(written_out.at("a").complete);
  CHECK(written_out.at("a").restart_after);
  const std::string a = signed_block("a", "int n\t1\n"), b = signed_block("b", "int n\t2\n");
  const RankOutput between = parse_rank_output(a + "restart\n" + b, kKey);
  CHECK(between.at("a").restart_after);
  CHECK_FALSE(between.at("b").restart_after);
  CHECK(between.at("b").complete);
  // Before any test, not right after the end (a line between), after an end that does not
  // verify: ignored.
  CHECK_FALSE(parse_rank_output("restart\n" + a, kKey).at("a").restart_after);
  CHECK_FALSE(parse_rank_output(a + "note x\nrestart\n", kKey).at("a").restart_after);
  const RankOutput unsigned_end =
      parse_rank_output("begin a\nint n\t1\nend a 0000000000000000\nrestart\n", kKey);
  CHECK_FALSE(unsigned_end.at("a").restart_after);
  // Inside a block, it was not the runner's: the block is spoilt.
  const RankOutput inside = parse_rank_output("begin a\nrestart\nint n\t1\n", kKey);
  CHECK_FALSE(inside.at("a").restart_after);
  const std::string block = "begin a\nint n\t1\n";
  const RankOutput injected = parse_rank_output(
      "begin a\nrestart\nint n\t1\nend a " + block_hash(kKey, block) + "\n", kKey);
  CHECK(injected.at("a").tampered);
}
