#include "test_case.hpp"

#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace dtk::grade {

const std::vector<CheckInfo>& all_checks() {
  static const std::vector<CheckInfo> checks = {
      {"split_train", CaseKind::layout, false, true, {"x_train blocks", "y_train blocks"}},
      {"get_info",
       CaseKind::layout,
       true,
       false,
       {"mp_idx and dp_idx", "mp_comm: members and order", "dp_comm: members and order",
        "slice widths, naive", "slice widths, Megatron"}},
      {"naive_collect_forward_input", CaseKind::layout, true, true, {}},
      {"naive_collect_forward_output", CaseKind::layout, true, true, {}},
      {"model_training_cost_analysis",
       CaseKind::config,
       false,
       false,
       {"number of parameters", "TFLOPs", "peak memory", "broken configs: std::runtime_error"}},
      {"get_optimal_N_D", CaseKind::budget, false, false, {"optimal N", "optimal D"}},
      {"megatron_collect_forward_input", CaseKind::layout, true, true, {}},
      {"megatron_collect_forward_output", CaseKind::layout, true, true, {}},
      {"naive_collect_backward_output", CaseKind::layout, false, true, {}},
      {"naive_collect_backward_x", CaseKind::layout, true, true, {}},
      {"megatron_collect_backward_output", CaseKind::layout, false, true, {}},
      {"megatron_collect_backward_x", CaseKind::layout, true, true, {}},
      {"collect_weight_grad", CaseKind::layout, true, true, {"grad_w", "grad_b"}},
  };
  return checks;
}

const std::vector<std::string>& broken_configs() {
  static const std::vector<std::string> broken = {"missing file", "malformed JSON", "missing key"};
  return broken;
}

const CheckInfo* find_check(const std::string& function) {
  for (const CheckInfo& check : all_checks()) {
    if (function == check.function) return &check;
  }
  return nullptr;
}

const CheckInfo& TestCase::check() const { return *find_check(function); }

int TestCase::ranks() const { return check().collective ? mp * dp : 1; }

std::string TestCase::case_text() const {
  if (check().kind != CaseKind::layout) return arg;
  std::string text = "mp=" + std::to_string(mp) + " dp=" + std::to_string(dp);
  return type.empty() ? text : text + " " + type;
}

namespace {

[[noreturn]] void bad_case(const std::string& function, const std::string& text,
                           const std::string& why) {
  throw std::invalid_argument("test case \"" + function + " " + text + "\": " + why);
}

// "mp=4" -> 4; anything else, or a size outside [1, 64], is an error.
int grid_size(const std::string& token, const std::string& function, const std::string& text) {
  char* end = nullptr;
  const long value = std::strtol(token.c_str() + 3, &end, 10);
  if (token.size() <= 3 || *end != '\0' || value < 1 || value > 64) {
    bad_case(function, text, "\"" + token + "\" is not a grid size between 1 and 64");
  }
  return static_cast<int>(value);
}

TestCase parse_layout(const CheckInfo& check, const std::string& text) {
  TestCase test;
  test.function = check.function;
  std::istringstream tokens(text);
  for (std::string token; tokens >> token;) {
    if (token.rfind("mp=", 0) == 0) {
      test.mp = grid_size(token, check.function, text);
    } else if (token.rfind("dp=", 0) == 0) {
      test.dp = grid_size(token, check.function, text);
    } else if (check.typed && (token == "float" || token == "double")) {
      test.type = token;
    } else {
      bad_case(check.function, text,
               "unknown word \"" + token + "\" (expected mp=M, dp=D" +
                   (check.typed ? ", float or double)" : ")"));
    }
  }
  if (check.typed && test.type.empty())
    bad_case(check.function, text, "says neither float nor double");
  return test;
}

TestCase parse_budget(const CheckInfo& check, const std::string& text) {
  if (text != "random" && text.rfind("random ", 0) != 0) {
    char* end = nullptr;
    const double budget = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(budget > 0)) {
      bad_case(check.function, text,
               "a budget is a positive number of FLOPs, or \"random\" (optionally with a tag)");
    }
  }
  return TestCase{check.function, 1, 1, "", text};
}

TestCase parse_config(const CheckInfo& check, const std::string& text) {
  const bool random = text.rfind("random llama", 0) == 0 || text.rfind("random gpt2", 0) == 0;
  for (const std::string& broken : broken_configs()) {
    if (text == broken) return TestCase{check.function, 1, 1, "", text};
  }
  const bool name = !text.empty() && text.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyz"
                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789._-") == std::string::npos;
  if (!random && !name) {
    bad_case(check.function, text,
             "expected a config name from grader/configs, \"random llama\" / \"random gpt2\" "
             "(optionally with a tag), \"missing file\", \"malformed JSON\" or \"missing key\"");
  }
  return TestCase{check.function, 1, 1, "", text};
}

}  // namespace

TestCase parse_test_case(const std::string& function, const std::string& case_text) {
  const CheckInfo* check = find_check(function);
  if (check == nullptr) bad_case(function, case_text, "no hidden test checks \"" + function + "\"");
  switch (check->kind) {
    case CaseKind::layout:
      return parse_layout(*check, case_text);
    case CaseKind::budget:
      return parse_budget(*check, case_text);
    case CaseKind::config:
      return parse_config(*check, case_text);
  }
  bad_case(function, case_text, "unknown kind of check");
}

TestCase parse_test_id(const std::string& id) {
  const std::size_t space = id.find(' ');
  if (space == std::string::npos) return parse_test_case(id, "");
  return parse_test_case(id.substr(0, space), id.substr(space + 1));
}

}  // namespace dtk::grade
