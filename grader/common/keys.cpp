#include "keys.hpp"

#include <cstdio>
#include <random>

namespace dtk::grade {

namespace {

std::uint64_t rotate(std::uint64_t x, int bits) { return (x << bits) | (x >> (64 - bits)); }

// The 128-bit key of a grading's inputs: the seed, spread over both halves.
std::uint64_t seed_half(std::uint64_t seed, std::uint64_t salt) {
  std::uint64_t z = seed + salt;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t seeded_hash(std::uint64_t seed, const std::string& data) {
  return siphash(seed_half(seed, 0x9e3779b97f4a7c15ull), seed_half(seed, 0x3c6ef372fe94f82aull),
                 data);
}

}  // namespace

std::uint64_t siphash(std::uint64_t k0, std::uint64_t k1, const std::string& data) {
  std::uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1,
                v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
  auto round = [&] {
    v0 += v1, v1 = rotate(v1, 13), v1 ^= v0, v0 = rotate(v0, 32);
    v2 += v3, v3 = rotate(v3, 16), v3 ^= v2;
    v0 += v3, v3 = rotate(v3, 21), v3 ^= v0;
    v2 += v1, v1 = rotate(v1, 17), v1 ^= v2, v2 = rotate(v2, 32);
  };
  auto absorb = [&](std::uint64_t m) {
    v3 ^= m;
    round(), round();
    v0 ^= m;
  };
  const std::size_t whole = data.size() / 8 * 8;
  for (std::size_t i = 0; i < whole; i += 8) {
    std::uint64_t m = 0;
    for (int b = 7; b >= 0; --b) m = (m << 8) | static_cast<unsigned char>(data[i + b]);
    absorb(m);
  }
  std::uint64_t last = static_cast<std::uint64_t>(data.size()) << 56;
  for (std::size_t i = whole; i < data.size(); ++i)
    last |= static_cast<std::uint64_t>(static_cast<unsigned char>(data[i])) << (8 * (i - whole));
  absorb(last);
  v2 ^= 0xff;
  round(), round(), round(), round();
  return v0 ^ v1 ^ v2 ^ v3;
}

std::uint64_t input_key(std::uint64_t seed, const std::string& test_id, int rank) {
  return seeded_hash(seed, "inputs of rank " + std::to_string(rank) + " in " + test_id);
}

std::uint64_t shared_key(std::uint64_t seed, const std::string& test_id) {
  return seeded_hash(seed, "inputs of every rank in " + test_id);
}

std::string random_key_hex() {
  std::random_device random;
  char key[33];
  for (int i = 0; i < 4; ++i) std::snprintf(key + 8 * i, 9, "%08x", random());
  return key;
}

std::string key_hex(std::uint64_t key) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(key));
  return text;
}

bool parse_key_hex(const std::string& text, std::uint64_t& key) {
  if (text.size() != 16) return false;
  key = 0;
  for (const char c : text) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return false;
    key = (key << 4) | static_cast<std::uint64_t>(digit);
  }
  return true;
}

}  // namespace dtk::grade
