#include "speed_bonus.hpp"

#include <algorithm>
#include <cstdio>

#include "text.hpp"

namespace dtk::grade {

namespace {

std::string percent(double fraction) { return formatted("%.0f %%", 100 * fraction); }
std::string times(double ratio) { return formatted("%.2fx", ratio); }

// The ratios of one function's timings, from its run: median and spread, or the problem.
SpeedMeasurement read_measurement(const TestCase& test, const TestRun& run) {
  SpeedMeasurement measured;
  if (!run.finished) {
    measured.problem = "the timing run did not finish: " + run.problem;
    return measured;
  }
  long long wrong = 0;
  for (const TestOutput& rank : run.ranks) {
    if (!rank.errors.empty()) {
      measured.problem = "it threw an exception while timed: " + rank.errors.front();
      return measured;
    }
    const Value* count = rank.find("wrong");
    wrong += count ? count->integer : 1;
  }
  if (wrong > 0) {
    measured.problem = "its result on " + std::to_string(test.bytes) + " bytes differs from " +
                       test.check().timed_against + "'s in " + std::to_string(wrong) + " elements";
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
  const std::map<std::string, TestRun> runs = run_tests(launcher, tests, bonus.ranks);
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
    bool all_points = true;
    for (const TestResult& test : report.tests) {
      if (test.name.rfind(prefix + function + ":", 0) == 0)
        all_points &= test.score >= test.max_score;
    }
    if (all_points) eligible.push_back(function);
  }
  return eligible;
}

std::map<std::string, SpeedMeasurement> measure_speed(const SpeedBonus& bonus,
                                                      const std::vector<std::string>& functions,
                                                      const Launcher& launcher, int cores) {
  if (functions.empty()) return {};
  if (bonus.ranks > cores) {
    std::map<std::string, SpeedMeasurement> none;
    for (const std::string& function : functions) {
      none[function].problem = "not measured: it is timed on " + std::to_string(bonus.ranks) +
                               " ranks and this machine has " + std::to_string(cores) +
                               " cores (with more ranks than cores the timings measure the "
                               "scheduler, not the code)";
    }
    return none;
  }
  std::map<std::string, SpeedMeasurement> measured = measure_once(bonus, functions, launcher);
  bool unstable = false;
  for (const auto& [function, m] : measured) unstable |= m.ratio && m.spread > bonus.max_spread;
  if (unstable) {
    // Measured again, all functions together: the machine was busy, not one function slow.
    std::map<std::string, SpeedMeasurement> again = measure_once(bonus, functions, launcher);
    for (auto& [function, m] : measured) {
      if (!m.ratio || m.spread <= bonus.max_spread) continue;
      m = again[function];
      if (m.ratio && m.spread > bonus.max_spread) {
        m.problem = "not measured: its timings spread too widely on this machine (" +
                    percent(m.spread) +
                    " between the faster and the slower quarter, twice; at "
                    "most " +
                    percent(bonus.max_spread) + " is trusted)";
        m.ratio.reset();
      }
    }
  }
  return measured;
}

void score_speed_bonus(const Part& part, const std::map<std::string, SpeedMeasurement>& measured,
                       Report& report) {
  const SpeedBonus& bonus = *part.speed_bonus;
  const std::string prefix = "Part " + std::to_string(part.number) + " | ";
  for (const std::string& function : bonus.functions) {
    const std::string against = find_check(function)->timed_against;
    TestResult result;
    result.name = prefix + function + ": speed bonus";
    result.number = std::to_string(part.number) + ".bonus";
    const auto found = measured.find(function);
    if (found == measured.end()) {
      result.output = "Not timed: a speed bonus needs all of " + function + "'s points first.\n";
      report.tests.push_back(result);
      continue;
    }
    const SpeedMeasurement& m = found->second;
    if (m.ratio) {
      result.output = function + " took " + times(*m.ratio) + " " + against +
                      "'s time (median of " + std::to_string(bonus.repetitions) + " timings of " +
                      std::to_string(bonus.bytes) + " bytes on " + std::to_string(bonus.ranks) +
                      " ranks, taken in turns with " + against + "'s; spread " + percent(m.spread) +
                      "). ";
      if (bonus.leaderboard) report.leaderboard.push_back({function + " / " + against, *m.ratio});
    } else {
      result.output = function + ": " + m.problem + ". ";
    }
    const SpeedTier* earned = nullptr;
    for (const SpeedTier& tier : bonus.tiers) {
      if (m.ratio && *m.ratio <= tier.within && !earned) earned = &tier;
    }
    if (earned) {
      result.score = earned->points;
      result.output += "Bonus: +" + formatted("%g", earned->points) + " points (within " +
                       times(earned->within) + ").\n";
    } else if (m.ratio) {
      result.output += "No bonus: it starts at " + times(bonus.tiers.back().within) + " " +
                       against + "'s time.\n";
    } else {
      result.output += "No bonus.\n";
    }
    report.bonus += result.score;
    report.tests.push_back(result);
  }
}

}  // namespace dtk::grade
