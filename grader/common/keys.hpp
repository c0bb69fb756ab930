// The keys of a grading: what makes a test's inputs, and what signs a rank's records.
//
// Each rank of a test makes its inputs from a key of its own, input_key(seed, test, rank), and
// the inputs every rank of the test holds alike from shared_key(seed, test). The grader hands
// the student's ranks these keys, one rank each, never the seed: nothing a rank holds lets it
// make another rank's inputs. The reference's launch, which runs no student code, gets the seed
// and can make every rank's inputs (to compute what to expect and what known mistakes give).
#pragma once

#include <cstdint>
#include <string>

namespace dtk::grade {

// SipHash-2-4 of `data` under the 128-bit key (k0, k1).
std::uint64_t siphash(std::uint64_t k0, std::uint64_t k1, const std::string& data);

// The key rank `rank` of test `test_id` makes its own inputs from.
std::uint64_t input_key(std::uint64_t seed, const std::string& test_id, int rank);
// The key of the inputs every rank of test `test_id` holds alike.
std::uint64_t shared_key(std::uint64_t seed, const std::string& test_id);

// A fresh random key of 128 bits, as 32 hex digits (a launch's record keys).
std::string random_key_hex();

// A 64-bit key as 16 hex digits, and back (false on anything else).
std::string key_hex(std::uint64_t key);
bool parse_key_hex(const std::string& text, std::uint64_t& key);

}  // namespace dtk::grade
