// The reference's to_bf16 on floats from standard input (little-endian 32-bit patterns) to
// standard output (16-bit patterns), for check_bf16_torch.py to compare with PyTorch.
//   bf16_dump [--wrong truncate|ties_up]
// --wrong replaces the rounding by a known mistake, so that the check can be seen to catch it.
#include <dtk/memory.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

namespace {

dtk::bf16 rounded(std::uint32_t bits, const std::string& wrong) {
  if (wrong == "truncate") return static_cast<dtk::bf16>(bits >> 16);
  if (wrong == "ties_up") {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    if (x != x) return 0x7FC0;
    return static_cast<dtk::bf16>((bits + 0x8000) >> 16);
  }
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return dtk::to_bf16(x);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string wrong = argc == 3 && std::string(argv[1]) == "--wrong" ? argv[2] : "";
  if (argc != 1 && wrong.empty()) {
    std::cerr << "usage: bf16_dump [--wrong truncate|ties_up] < floats > bf16s\n";
    return 2;
  }
  std::uint32_t bits;
  while (std::fread(&bits, sizeof bits, 1, stdin) == 1) {
    const dtk::bf16 out = rounded(bits, wrong);
    std::fwrite(&out, sizeof out, 1, stdout);
  }
  return 0;
}
