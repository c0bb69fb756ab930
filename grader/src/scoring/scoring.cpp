#include "scoring/scoring.hpp"

#include "scoring/tiers.hpp"

namespace dtk::grade {

namespace {

// "a, b, c" (any container of strings, in its order).
template <class Names>
std::string listed(const Names& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

std::string listed_or_none(const std::set<std::string>& names) {
  return names.empty() ? "none" : listed(names);
}

}  // namespace

std::string forbidden_text(const Manifest& manifest, const Part& part, const std::string& who,
                           const std::set<std::string>& calls) {
  std::string text =
      who + " gets no points: the code of Part " + std::to_string(part.number) +
      " may call only these MPI functions: " + listed_or_none(part.allowed_mpi) +
      "; only these calls of the Communicator: " + listed_or_none(part.allowed_communicator) +
      "; no code of the grader's (dtk::grade); and none of these: " +
      listed_or_none(manifest.forbidden_symbols) + ". Its code calls:\n";
  for (const std::string& call : calls) text += "  " + call + "\n";
  return text;
}

std::set<std::string> forbidden_for(const Manifest& manifest, const Part& part,
                                    const std::string& function, const ForbiddenCalls& forbidden) {
  std::set<std::string> calls;
  for (const std::string& f : part.functions) {
    if (manifest.forbidden_call_costs == "function" && f != function) continue;
    const auto found = forbidden.find(f);
    if (found != forbidden.end()) calls.insert(found->second.begin(), found->second.end());
  }
  return calls;
}

std::string forbidden_cost(const Manifest& manifest, const Part& part,
                           const std::string& function) {
  return manifest.forbidden_call_costs == "function" ? "dtk::" + function
                                                     : "Part " + std::to_string(part.number);
}

namespace {

constexpr std::size_t kMaxOutput = 4000;  // characters of failing cases shown per item

struct ItemJudgement {
  std::vector<std::string> passed, failed;  // case texts (scored by tiers: all points or not)
  std::vector<std::string> failures;        // one block per failed case
  std::vector<std::string> reruns;          // cases that passed only when run again alone
  double earned = 0;                        // the share of the item's points
  std::map<std::string, double> values;     // scored by tiers: case id -> the student's value
};

std::string case_heading(const std::string& label, const TestRun& expected) {
  const std::string setup = configuration(expected);
  return "On " + label + (setup.empty() ? "" : " (" + setup + ")") + ":\n";
}

// "On p=4 m=8 ...: did not finish within 2 s among other tests; run again alone ...".
std::string rerun_text(const std::string& label, const TestRun& actual) {
  return "On " + label + ": " + actual.rerun + "\n";
}

// All or nothing: right on every case, or wrong.
ItemJudgement judge_item(const Manifest& manifest, const RubricItem& item,
                         const std::map<std::string, CaseOutcome>& cases) {
  const Tolerances& tolerances = manifest.tolerances;
  ItemJudgement judgement;
  for (const std::string& id : item.cases) {
    const auto outcome = cases.find(id);
    if (outcome == cases.end()) continue;  // not planned (--public-only, max_ranks)
    const std::string label = parse_test_id(id).case_text();
    const CaseOutcome& run = outcome->second;
    Verdict verdict;
    if (run.actual == nullptr) {
      verdict.output = run.blocked + "\n";
    } else {
      verdict = judge(*run.expected, *run.actual, tolerances, item.whole_result ? "" : item.name,
                      parse_test_id(id).check().sending_shared);
    }
    if (verdict.passed) {
      judgement.passed.push_back(label);
      if (!run.actual->rerun.empty()) judgement.reruns.push_back(rerun_text(label, *run.actual));
      continue;
    }
    judgement.failed.push_back(label);
    judgement.failures.push_back(case_heading(label, *run.expected) + verdict.output);
  }
  judgement.earned = judgement.failed.empty() ? 1 : 0;
  return judgement;
}

// By tiers: each case earns its share of the item's points (the item's points shared equally
// by its cases).
ItemJudgement judge_tiered_item(const Manifest& manifest, const Tiers& tiers,
                                const RubricItem& item,
                                const std::map<std::string, CaseOutcome>& cases) {
  const Tolerances& tolerances = manifest.tolerances;
  ItemJudgement judgement;
  double shares = 0;
  for (const std::string& id : item.cases) {
    const auto outcome = cases.find(id);
    if (outcome == cases.end()) continue;
    const std::string label = parse_test_id(id).case_text();
    const CaseOutcome& run = outcome->second;
    TieredCase tiered;
    tiered.output = run.blocked + "\n";
    if (run.actual != nullptr) tiered = judge_tiered(tiers, *run.expected, *run.actual, tolerances);
    if (tiered.counts_on_leaderboard) judgement.values[id] = tiered.value;
    shares += tiered.share;
    (tiered.share == 1 ? judgement.passed : judgement.failed).push_back(label);
    if (run.actual != nullptr && !run.actual->rerun.empty() && tiered.share > 0)
      judgement.reruns.push_back(rerun_text(label, *run.actual));
    if (tiered.share < 1)
      judgement.failures.push_back(case_heading(label, *run.expected) + tiered.output);
  }
  const std::size_t judged = judgement.passed.size() + judgement.failed.size();
  judgement.earned = judged == 0 ? 0 : shares / judged;
  return judgement;
}

// The cases below full marks, named all at once, then as many of their findings as fit (the
// first always whole).
std::string failure_text(const ItemJudgement& judgement, bool tiered) {
  std::string text = (tiered ? "Below full marks on " : "Wrong on ") + listed(judgement.failed);
  if (!judgement.passed.empty())
    text += (tiered ? "; full marks on " : "; right on ") + listed(judgement.passed);
  text += ".\n";
  // The header counts against the same budget as the findings.
  const std::size_t room = kMaxOutput > text.size() ? kMaxOutput - text.size() : 0;
  text += fitted(judgement.failures, room, [](std::size_t left) {
    return "[the findings on the other " + std::to_string(left) + " cases are left out]\n";
  });
  return text;
}

}  // namespace

void score(const Manifest& manifest, const std::map<std::string, CaseOutcome>& cases,
           const ForbiddenCalls& forbidden, Report& report) {
  for (const Part& part : manifest.parts) {
    PartResult part_result{
        part.number, part.title + (part.optional ? " (optional)" : ""), 0, 0, 0, 0};
    // The part's points are shared by the items that ran (with --public-only, not all do).
    std::vector<std::pair<const RubricItem*, ItemJudgement>> judged;
    double weights = 0;
    for (const RubricItem& item : part.rubric) {
      const auto tiers = part.tiers.find(item.function);
      ItemJudgement judgement = tiers == part.tiers.end()
                                    ? judge_item(manifest, item, cases)
                                    : judge_tiered_item(manifest, tiers->second, item, cases);
      if (judgement.passed.empty() && judgement.failed.empty()) continue;  // none of its cases ran
      weights += item.weight;
      judged.emplace_back(&item, std::move(judgement));
    }
    // Leaderboard entry -> case id -> the student's value (a case in several items counts once).
    std::map<std::string, std::map<std::string, double>> boards;
    for (const auto& [item, judgement] : judged) {
      TestResult result;
      result.name =
          "Part " + std::to_string(part.number) + " | " + item->function + ": " + item->name;
      result.number = std::to_string(part.number) + "." + std::to_string(part_result.total + 1);
      result.part = part.number;
      result.function = item->function;
      result.max_score = part.points * item->weight / weights;
      const bool tiered = part.tiers.count(item->function) > 0;
      const bool all = judgement.failed.empty();
      const std::set<std::string> calls = forbidden_for(manifest, part, item->function, forbidden);
      if (!calls.empty()) {
        result.output =
            forbidden_text(manifest, part, forbidden_cost(manifest, part, item->function), calls);
        if (all) result.output += "The result of this item itself is right.\n";
      } else {
        result.score = result.max_score * judgement.earned;
        if (all)
          result.output = (tiered ? "Full marks on every case: " : "Right on every case: ") +
                          listed(judgement.passed) + ".\n";
      }
      if (!all) result.output += failure_text(judgement, tiered);
      for (const std::string& rerun : judgement.reruns) result.output += rerun;
      if (tiered && !part.tiers.at(item->function).leaderboard.empty()) {
        auto& board = boards[part.tiers.at(item->function).leaderboard];
        for (const auto& [id, value] : judgement.values) board[id] = calls.empty() ? value : 0;
      }
      part_result.max_score += result.max_score;
      part_result.score += result.score;
      part_result.total += 1;
      part_result.passed += result.score > 0;
      report.tests.push_back(result);
    }
    for (const auto& [name, values] : boards) {
      double sum = 0;
      for (const auto& [id, value] : values) sum += value;
      report.leaderboard.push_back({name, sum / values.size(), /*higher_is_better=*/true});
    }
    report.parts.push_back(part_result);
  }
}

}  // namespace dtk::grade
