#include "check_context.hpp"

#include <map>

namespace dtk::grade {

Rng::Rng(std::uint64_t seed, const std::string& stream) {
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : stream) hash = (hash ^ c) * 1099511628211ull;
  state_ = hash ^ (seed * 0x9e3779b97f4a7c15ull);
}

std::uint64_t Rng::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int Rng::uniform_int(int lo, int hi) {
  return lo + static_cast<int>(next() % static_cast<std::uint64_t>(hi - lo + 1));
}

double Rng::uniform(double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53;
}

double Rng::value() { return uniform_int(-999, 999) / 1000.0; }

Grid::Grid(const CheckContext& context)
    : rank(context.world.Get_rank()),
      mp_size(context.test.mp),
      dp_size(context.test.dp),
      mp_idx(rank % mp_size),
      dp_idx(rank / mp_size),
      mp_comm(context.world.Split(/*color=*/dp_idx, /*key=*/mp_idx)),
      dp_comm(context.world.Split(/*color=*/mp_idx, /*key=*/dp_idx)) {}

void record_bytes_beyond(CheckContext& context, std::uint64_t moved, std::uint64_t allowed,
                         const std::string& allowance) {
  context.out.integer("bytes sent beyond the " + std::to_string(allowed) + " " + allowance,
                      moved > allowed ? static_cast<long long>(moved - allowed) : 0);
}

namespace {

std::map<std::string, CheckFunction>& registry() {
  static std::map<std::string, CheckFunction> checks;
  return checks;
}

}  // namespace

CheckRegistration::CheckRegistration(CheckInfo info, CheckFunction code) {
  registry()[info.function] = code;
  register_check(std::move(info));
}

CheckFunction check_function(const std::string& function) {
  const auto found = registry().find(function);
  return found == registry().end() ? nullptr : found->second;
}

}  // namespace dtk::grade
