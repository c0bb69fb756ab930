#include "check_context.hpp"

#include <algorithm>
#include <cstdint>
#include <map>

#include "keys.hpp"

namespace dtk::grade {

Rng::Rng(std::uint64_t key, const std::string& stream) {
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : stream) hash = (hash ^ c) * 1099511628211ull;
  state_ = hash ^ (key * 0x9e3779b97f4a7c15ull);
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

CheckContext::CheckContext(const TestCase& test, const TestKeys& keys, MPI_Comm test_comm,
                           RecordWriter& out, std::string configs_dir, std::string work_dir)
    : test(test),
      world(test_comm),
      out(out),
      configs_dir(std::move(configs_dir)),
      work_dir(std::move(work_dir)),
      keys_(keys),
      rank_(world.Get_rank()) {}

void CheckContext::run_student_call(const std::function<void()>& code) {
  const std::size_t threads = running_threads();
  {
    StudentCall watched(traffic_);
    run_student_code(code);
  }
  if (running_threads_after(threads) > threads && !left_a_thread_) {
    left_a_thread_ = true;
    out.forbidden("a thread left running after the call returned", "dtk::" + test.function);
  }
}

void CheckContext::record_traffic() {
  if (!test.check().collective) return;
  // The payload: what the function is asked to move, of the test's type; every type otherwise.
  const std::string payload = test.check().typed ? test.type : "";
  const std::uint64_t cap = traffic_cap_.value_or(UINT64_MAX);
  out.moved(std::min(traffic_.sent(payload), cap));
  out.received(std::min(traffic_.received(payload), cap),
               least_received_ ? static_cast<long long>(*least_received_) : -1);
}

Rng Judgement::rng_of(int rank, const std::string& stream) const {
  return Rng(input_key(*context_.keys_.seed, context_.test.id(), rank), stream);
}

Rng DeriveContext::rng_of(int rank, const std::string& stream) const {
  return Rng(input_key(seed, test.id(), rank), stream);
}

const Value* DeriveContext::evidence(int rank, const std::string& name) const {
  for (const auto& [recorded, value] : ranks.at(rank).evidence) {
    if (recorded == name) return &value;
  }
  return nullptr;
}

const Value* DeriveContext::value(int rank, const std::string& name) const {
  return ranks.at(rank).find(name);
}

Grid::Grid(const CheckContext& context)
    : rank(context.rank()),
      mp_size(context.test.mp),
      dp_size(context.test.dp),
      mp_idx(rank % mp_size),
      dp_idx(rank / mp_size),
      mp_comm(context.world.Split(/*color=*/dp_idx, /*key=*/mp_idx)),
      dp_comm(context.world.Split(/*color=*/mp_idx, /*key=*/dp_idx)) {}

void record_bytes_beyond(CheckContext& context, std::uint64_t allowed,
                         const std::string& allowance) {
  const std::uint64_t sent = context.bytes_sent();
  context.out.integer("bytes sent beyond the " + std::to_string(allowed) + " " + allowance,
                      sent > allowed ? static_cast<long long>(sent - allowed) : 0);
}

namespace {

struct Registered {
  CheckFunction code;
  DeriveFunction derive;
};

std::map<std::string, Registered>& registry() {
  static std::map<std::string, Registered> checks;
  return checks;
}

}  // namespace

CheckRegistration::CheckRegistration(CheckInfo info, CheckFunction code, DeriveFunction derive) {
  registry()[info.function] = {code, derive};
  info.derived = derive != nullptr;
  register_check(std::move(info));
}

CheckFunction check_function(const std::string& function) {
  const auto found = registry().find(function);
  return found == registry().end() ? nullptr : found->second.code;
}

DeriveFunction derive_function(const std::string& function) {
  const auto found = registry().find(function);
  return found == registry().end() ? nullptr : found->second.derive;
}

}  // namespace dtk::grade
