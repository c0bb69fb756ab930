// The runner's output: what each rank found, test by test, as lines of text.
//
// Every rank of a runner writes one file. A test's block starts with "begin <id>" and ends with
// "end <id>"; a block without its end is a test during which that rank died or hung. In between,
// one record per line, name and payload separated by a tab:
//   note <text>                              describes the configuration (for feedback)
//   outcome <text>                           describes what the student's call returned: the
//                                            student's run's are shown in feedback, never the
//                                            reference's (Part 13's plan, which the student
//                                            must find)
//   part <name>                              the values that follow form this part of the
//                                            result (a rubric item may judge it alone)
//   int <name>\t<value>
//   real <name>\t<value>
//   tensor <name>\t<dtype> <ndim> <dims...> : <values...>
//   mistake <name>\t<what>\t<tensor payload>   what value <name> would be after a known
//                                            mistake (the reference's run only records them)
//   evidence <name>\t<tensor payload>         what a derive function needs (check_context.hpp)
//                                            and no rubric item compares: a plan's fields, a
//                                            dispatch's orders
//   moved <bytes>                            bytes the test's student calls sent to other
//                                            ranks, of its type (typed checks) or of any type
//   received <bytes> <least>                 bytes they received from other ranks likewise, and
//                                            the least the result needs from them (-1: the
//                                            check does not say; the reference's then judges)
//   error <text>                             the function threw; <text> is what() on one line
//   forbidden <MPI call>\t<caller>           a call outside the allowed collectives
//   timeout <seconds>                        the runner's watchdog stopped a test that hung
//   crashed <signal> / exited                the rank died during the test (no "end" follows)
// and, outside any block:
//   restart                                  right after a test's "end": the runner ends its
//                                            process cleanly (exit status 0) for a fresh one,
//                                            e.g. because the student call left a thread
//                                            running. The tests of the launch that did not
//                                            finish run in a new launch and are charged
//                                            nothing for it. Every rank of the launch should
//                                            write it after the same test (the others would
//                                            wait for a rank that left until the watchdog); a
//                                            "restart" anywhere else (not right after a
//                                            verified "end") is ignored, and a launch that
//                                            finished no test is never restarted, so that
//                                            every launch makes progress whatever the code
//                                            under test writes.
// The student's runner writes these files from inside the submission's processes, so the grader
// parses them as untrusted input: bounded sizes, and anything malformed is just "missing". The
// runner keeps no descriptor of its file open while student code runs (the records of a test
// are buffered and appended after the call returns), and a test's "end" line carries a keyed
// hash (SipHash-2-4) of its block, under a key the grader gives each launch and the runner reads
// and deletes before any student code runs: a block the grader cannot verify, or begun twice,
// was written behind the runner's back and spoils that test.
//   end <id> <hash>
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dtk::grade {

// A chunk_step's code: micro-batch times this, plus the chunk (chunks < kChunkStepBase).
constexpr long long kChunkStepBase = 1000;

struct Value {
  enum class Kind { integer, real, tensor };
  Kind kind = Kind::real;
  // Tensors: "float", "double", "int32" or "int64", or a schedule: "step" (micro-batch mb's
  // forward is mb, its backward -1 - mb) or "chunk_step" (through chunk v: mb * kChunkStepBase
  // + v, and -1 minus that).
  std::string dtype;
  std::vector<std::size_t> shape;
  std::vector<double> values;  // a real or a tensor's elements, row-major
  long long integer = 0;
  std::string part;  // the part of the result it belongs to ("" if none was named)
};

// What a value would be after a known mistake ("rows and columns interleaved").
struct Mistake {
  std::string value;  // the name of the value it stands for
  std::string description;
  Value wrong;
};

struct TestOutput {
  bool complete = false;       // its "end" line was written
  bool timed_out = false;      // the runner's watchdog stopped it
  int crash_signal = 0;        // the rank died of this signal during the test
  bool exited = false;         // the rank's process ended (exit()) during the test
  bool tampered = false;       // begun twice or a wrong hash: something else wrote into the file
  bool restart_after = false;  // a "restart" line right after its verified end
  std::vector<std::string> notes;
  std::vector<std::string> outcomes;
  std::vector<std::pair<std::string, Value>> values;  // in the order written
  std::vector<std::string> errors;
  std::vector<std::string> forbidden;  // "MPI_Bcast (called from ...)"
  std::vector<Mistake> mistakes;
  std::vector<std::pair<std::string, Value>> evidence;  // for derive functions only
  long long moved = -1;  // bytes moved through the Communicator; -1: not measured
  // Bytes this rank received from other ranks, and the least its result needs; -1: not measured.
  long long received = -1, least_received = -1;

  const Value* find(const std::string& name) const;
};

// Test id -> what one rank wrote for it.
using RankOutput = std::map<std::string, TestOutput>;

// Parses one rank's file, checking each block's hash with `key` (32 hex digits). Never throws on
// bad content: a malformed line is skipped.
RankOutput parse_rank_output(const std::string& text, const std::string& key);

// The keyed hash of a block of records, as 16 hex digits (SipHash-2-4; `key`: 32 hex digits).
std::string block_hash(const std::string& key, const std::string& block);

// Replaces tabs and line breaks, so that any text fits on one record line.
std::string one_line(std::string text);

// The runner's side: writes one rank's file. "begin" goes to the file at once (a test that
// crashes must still show it began); the records of the test are kept in memory and appended
// with its "end", after the student's call has returned. The file is open only while written.
class RecordWriter {
 public:
  // Creates the file, empty; throws if it cannot. `key`: the launch's key (32 hex digits).
  RecordWriter(std::string path, std::string key);

  const std::string& path() const { return path_; }
  void begin(const std::string& id);
  void end(const std::string& id);
  void note(const std::string& text);
  void outcome(const std::string& text);
  void part(const std::string& name);
  void mistake(const std::string& value, const std::string& description, const std::string& dtype,
               const std::vector<std::size_t>& shape, const std::vector<double>& values);
  void moved(unsigned long long bytes);
  void received(unsigned long long bytes, long long least);  // least -1: none stated
  void integer(const std::string& name, long long value);
  void real(const std::string& name, double value);
  void tensor(const std::string& name, const std::string& dtype,
              const std::vector<std::size_t>& shape, const std::vector<double>& values);
  void evidence(const std::string& name, const std::string& dtype,
                const std::vector<std::size_t>& shape, const std::vector<double>& values);
  void error(const std::string& text);
  void forbidden(const std::string& call, const std::string& caller);
  // What a derive function reads of a rank's outputs (its values and evidence), written again
  // (the grader's, for `dtk-grade-runner --derive`).
  void outputs_of(const TestOutput& output);
  // After end(): this process ends (cleanly) once it returns, and the tests after the one that
  // just ended run in a fresh launch.
  void restart();

 private:
  void tensor_payload(const std::string& dtype, const std::vector<std::size_t>& shape,
                      const std::vector<double>& values);
  void append(const std::string& text) const;  // opens, writes, closes

  std::string path_, key_;
  std::string block_;  // the current test's "begin" line and records
};

}  // namespace dtk::grade
