#include "scoring/speed_bonus.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "text.hpp"

namespace dtk::grade {

namespace {

std::string percent(double fraction) { return formatted("%.0f %%", 100 * fraction); }
std::string times(double ratio) { return formatted("%.2fx", ratio); }

constexpr double kLoadSampleSeconds = 0.5;  // how long the load is watched, before and after

// The ratios of one function's timings, from its run: median and spread, or the problem.
SpeedMeasurement read_measurement(const TestCase& test, const TestRun& run) {
  SpeedMeasurement measured;
  measured.outcome = SpeedMeasurement::Outcome::refused;
  if (!run.finished) {
    measured.problem = "the timing run did not finish: " + run.problem;
    return measured;
  }
  long long wrong = 0;
  for (const TestOutput& rank : run.ranks) {
    if (!rank.errors.empty()) {
      measured.problem = "while timed, " + rank.errors.front();
      return measured;
    }
    const Value* count = rank.find("wrong");
    wrong += count ? count->integer : 1;
  }
  if (wrong > 0) {
    measured.problem = "its results on " + std::to_string(test.bytes) +
                       " bytes, on inputs new at every timing, differ from " +
                       test.check().timed_against + "'s in " + std::to_string(wrong) +
                       " elements in all";
    return measured;
  }
  std::vector<double> ratios;
  for (int i = 0; i < test.repetitions; ++i) {
    const Value* mine = run.ranks.front().find("mine " + std::to_string(i));
    const Value* mpi = run.ranks.front().find("mpi " + std::to_string(i));
    if (!mine || !mpi || mine->values.empty() || mpi->values.empty() || !(mpi->values[0] > 0) ||
        !(mine->values[0] >= 0)) {
      measured.problem = "the timing run recorded no time for repetition " + std::to_string(i);
      return measured;
    }
    ratios.push_back(mine->values[0] / mpi->values[0]);
  }
  std::sort(ratios.begin(), ratios.end());
  const std::size_t n = ratios.size();
  const double median = n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
  measured.outcome = SpeedMeasurement::Outcome::timed;
  measured.ratio = median;
  measured.spread = (ratios[(3 * (n - 1)) / 4] - ratios[(n - 1) / 4]) / median;
  return measured;
}

std::map<std::string, SpeedMeasurement> measure_once(const SpeedBonus& bonus,
                                                     const std::vector<std::string>& functions,
                                                     const Launcher& launcher) {
  std::vector<TestCase> tests;
  for (const std::string& function : functions) {
    tests.push_back(parse_test_case(function, "speed p=" + std::to_string(bonus.ranks) + " bytes=" +
                                                  std::to_string(bonus.bytes) + " repetitions=" +
                                                  std::to_string(bonus.repetitions)));
  }
  const std::map<std::string, TestRun> runs = run_tests(launcher, tests);
  std::map<std::string, SpeedMeasurement> measured;
  for (const TestCase& test : tests)
    measured[test.function] = read_measurement(test, runs.at(test.id()));
  return measured;
}

}  // namespace

std::vector<std::string> eligible_for_bonus(const Part& part, const Report& report) {
  std::vector<std::string> eligible;
  const std::string prefix = "Part " + std::to_string(part.number) + " | ";
  for (const std::string& function : part.speed_bonus->functions) {
    bool graded = false, all_points = true;
    for (const TestResult& test : report.tests) {
      if (test.name.rfind(prefix + function + ":", 0) != 0 || is_speed_bonus_test(test.name))
        continue;
      graded = true;
      all_points &= test.score >= test.max_score;
    }
    if (graded && all_points) eligible.push_back(function);
  }
  return eligible;
}

namespace {

// /proc/stat's lines "cpuN user nice system idle iowait irq softirq steal ...", in ticks: summed
// over the CPUs this process may run on (all of a workstation's; a Slurm task's own).
struct CpuTicks {
  unsigned long long busy = 0, all = 0;
};

CpuTicks cpu_ticks() {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  sched_getaffinity(0, sizeof mine, &mine);
  std::ifstream stat("/proc/stat");
  CpuTicks ticks;
  for (std::string line; std::getline(stat, line);) {
    int cpu = 0;
    if (std::sscanf(line.c_str(), "cpu%d ", &cpu) != 1 || cpu < 0 || cpu >= CPU_SETSIZE ||
        !CPU_ISSET(cpu, &mine))
      continue;
    std::istringstream fields(line.substr(line.find(' ')));
    unsigned long long value = 0;
    for (int i = 0; i < 8 && fields >> value; ++i) {
      ticks.all += value;
      if (i != 3 && i != 4) ticks.busy += value;  // idle and iowait are not busy
    }
  }
  return ticks;
}

// All functions, deferred: the machine was busy (`why`).
std::map<std::string, SpeedMeasurement> deferred(const std::vector<std::string>& functions,
                                                 const std::string& why) {
  std::map<std::string, SpeedMeasurement> measured;
  for (const std::string& function : functions) {
    measured[function].outcome = SpeedMeasurement::Outcome::deferred;
    measured[function].problem = why;
  }
  return measured;
}

// "" when the machine is idle enough to time (its load, measured now, in `busy`), else why not.
std::string busy_machine(const SpeedBonus& bonus, const std::string& when, double& busy) {
  busy = busy_share(kLoadSampleSeconds);
  if (busy <= bonus.max_busy) return "";
  return "the machine was busy " + when + ": other programs used " + percent(busy) +
         " of its CPU time (at most " + percent(bonus.max_busy) +
         " is left to them while a bonus is timed)";
}

}  // namespace

double busy_share(double seconds) {
  const CpuTicks before = cpu_ticks();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const CpuTicks after = cpu_ticks();
  if (after.all <= before.all) return 0;
  return static_cast<double>(after.busy - before.busy) /
         static_cast<double>(after.all - before.all);
}

std::map<std::string, SpeedMeasurement> measure_speed(const SpeedBonus& bonus,
                                                      const std::vector<std::string>& functions,
                                                      const Launcher& launcher, int cores) {
  if (functions.empty()) return {};
  if (bonus.ranks > cores) {
    std::map<std::string, SpeedMeasurement> none;
    for (const std::string& function : functions) {
      none[function].outcome = SpeedMeasurement::Outcome::refused;
      none[function].problem = "not measured: it is timed on " + std::to_string(bonus.ranks) +
                               " ranks and this machine has " + std::to_string(cores) +
                               " cores (with more ranks than cores the timings measure the "
                               "scheduler, not the code)";
    }
    return none;
  }
  double before = 0, after = 0;
  if (const std::string busy = busy_machine(bonus, "just before the timing", before); !busy.empty())
    return deferred(functions, busy);
  std::map<std::string, SpeedMeasurement> measured = measure_once(bonus, functions, launcher);
  auto unstable = [&](const SpeedMeasurement& m) { return m.ratio && m.spread > bonus.max_spread; };
  if (std::any_of(measured.begin(), measured.end(),
                  [&](const auto& m) { return unstable(m.second); })) {
    // Measured again, all functions together: the machine was busy, not one function slow.
    std::map<std::string, SpeedMeasurement> again = measure_once(bonus, functions, launcher);
    for (auto& [function, m] : measured) {
      if (!unstable(m)) continue;
      m = again[function];
      if (unstable(m)) {
        m.outcome = SpeedMeasurement::Outcome::deferred;
        m.problem = "its timings spread too widely, twice (" + percent(m.spread) +
                    " between the faster and the slower quarter; at most " +
                    percent(bonus.max_spread) + " is trusted): the machine was not quiet";
        m.ratio.reset();
      }
    }
  }
  // Load that came while the timing ran shows after it too.
  if (const std::string busy = busy_machine(bonus, "just after the timing", after); !busy.empty())
    return deferred(functions, busy);
  for (auto& [function, m] : measured) m.load = {before, after};
  return measured;
}

std::map<std::string, SpeedMeasurement> pending_speed(const std::vector<std::string>& functions) {
  std::map<std::string, SpeedMeasurement> measured;
  for (const std::string& function : functions) measured[function];  // pending
  return measured;
}

void score_speed_bonus(const Part& part, const std::map<std::string, SpeedMeasurement>& measured,
                       Report& report) {
  using Outcome = SpeedMeasurement::Outcome;
  const SpeedBonus& bonus = *part.speed_bonus;
  const std::string prefix = "Part " + std::to_string(part.number) + " | ";
  for (const std::string& function : bonus.functions) {
    const std::string against = find_check(function)->timed_against;
    TestResult result;
    result.name = prefix + function + kSpeedBonusTest;
    result.number = std::to_string(part.number) + ".bonus";
    result.part = part.number;
    result.function = function;
    const auto found = measured.find(function);
    if (found == measured.end()) {
      result.output = "Not timed: a speed bonus needs all of " + function + "'s points first.\n";
      report.tests.push_back(result);
      continue;
    }
    const SpeedMeasurement& m = found->second;
    // The bonus's state: pending before deferred before timed.
    const std::string state = m.outcome == Outcome::pending    ? "pending"
                              : m.outcome == Outcome::deferred ? "deferred"
                                                               : "timed";
    if (report.bonus_state.empty() || report.bonus_state == "timed" ||
        (report.bonus_state == "deferred" && state == "pending"))
      report.bonus_state = state;
    switch (m.outcome) {
      case Outcome::pending:
        result.output =
            "Not timed yet: a batch times the speed bonus after all its gradings, "
            "one at a time, with nothing else running.\n";
        break;
      case Outcome::deferred:
        result.output = "Deferred: " + m.problem +
                        ". A timing now would measure the load, not your code: it is timed "
                        "again when the machine is idle (no points until then).\n";
        break;
      case Outcome::refused:
        result.output = function + ": " + m.problem + ". No bonus.\n";
        break;
      case Outcome::timed: {
        result.output = function + " took " + times(*m.ratio) + " " + against +
                        "'s time (median of " + std::to_string(bonus.repetitions) + " timings of " +
                        std::to_string(bonus.bytes) + " bytes on " + std::to_string(bonus.ranks) +
                        " ranks, each on inputs of its own, " + "taken in turns with " + against +
                        "'s; spread " + percent(m.spread) + "; other programs used " +
                        percent(m.load.first) +
                        " of the CPU time "
                        "just before, " +
                        percent(m.load.second) + " just after). ";
        if (bonus.leaderboard) report.leaderboard.push_back({function + " / " + against, *m.ratio});
        const auto earned =
            std::find_if(bonus.tiers.begin(), bonus.tiers.end(),
                         [&](const SpeedTier& tier) { return *m.ratio <= tier.within; });
        if (earned != bonus.tiers.end()) {
          result.score = earned->points;
          result.output += "Bonus: +" + formatted("%g", earned->points) + " points (within " +
                           times(earned->within) + ").\n";
        } else {
          result.output += "No bonus: it starts at " + times(bonus.tiers.back().within) + " " +
                           against + "'s time.\n";
        }
        break;
      }
    }
    report.bonus += result.score;
    report.tests.push_back(result);
  }
}

}  // namespace dtk::grade
