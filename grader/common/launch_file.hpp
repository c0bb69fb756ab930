// What the grader tells each rank of a launch, and nothing more: <out>/rank<R>.key, which rank R
// of the runner reads and deletes before any student code is loaded (runner/launch.hpp).
//
//   record <32 hex digits>        the key that signs this rank's records (records.hpp)
//   seed <seed>                   the reference's launches only: every rank's inputs (keys.hpp)
//   test <16 hex> <16 hex>        one line per test of the launch, in the order of the command
//                                 line: this rank's input key and the test's shared key
//
// A student's rank thus holds its own input keys for the tests of its launch only: not the
// seed, not another rank's, not another launch's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dtk::grade {

struct LaunchFile {
  std::string record_key;
  std::optional<std::uint64_t> seed;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> test_keys;  // (own, shared) by test

  std::string text() const;
  // False on anything malformed.
  static bool parse(const std::string& text, LaunchFile& file);
};

// Rank `rank`'s file of the tests `test_ids` under `seed`, with a fresh record key; `judging`:
// with the seed (the reference's launch).
LaunchFile launch_file_for(int rank, const std::vector<std::string>& test_ids, std::uint64_t seed,
                           bool judging);

std::string launch_file_path(const std::string& out_dir, int rank);

// Where rank `rank` of a launch writes its records: <out_dir>/rank<R>.out.
std::string rank_records_path(const std::string& out_dir, int rank);

}  // namespace dtk::grade
