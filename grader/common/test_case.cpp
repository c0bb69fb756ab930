#include "test_case.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace dtk::grade {

const std::vector<std::string>& broken_configs() {
  static const std::vector<std::string> broken = {"missing file", "malformed JSON", "missing key"};
  return broken;
}

const CheckInfo& TestCase::check() const { return *find_check(function); }

double TestCase::value(const std::string& key, double otherwise) const {
  const auto found = values.find(key);
  return found == values.end() ? otherwise : found->second;
}

bool TestCase::has_word(const std::string& word) const {
  for (const std::string& w : words) {
    if (w == word) return true;
  }
  return false;
}

int TestCase::ranks() const {
  if (!check().collective) return 1;
  const CaseKind kind = check().kind;
  if (kind == CaseKind::fields) return p;
  if (kind == CaseKind::zero) return dp;
  return kind == CaseKind::buffer || kind == CaseKind::pipeline ? p : mp * dp * pp;
}

std::string TestCase::case_text() const {
  if (is_speed()) {
    return "speed p=" + std::to_string(p) + " bytes=" + std::to_string(bytes) +
           " repetitions=" + std::to_string(repetitions);
  }
  if (check().kind == CaseKind::buffer) {
    const std::string text =
        "p=" + std::to_string(p) + " count=" + std::to_string(count) + " " + type;
    return op.empty() ? text : text + " " + op;
  }
  if (check().kind == CaseKind::zero) {
    if (!arg.empty()) return arg;  // "random ..."
    char psi_text[32], k_text[32];
    std::snprintf(psi_text, sizeof psi_text, "%g", psi);
    std::snprintf(k_text, sizeof k_text, "%g", k);
    if (psi > 0)
      return std::string("psi=") + psi_text + " dp=" + std::to_string(dp) + " k=" + k_text;
    std::string text = "numel=" + std::to_string(numel) + " dp=" + std::to_string(dp);
    return type.empty() ? text : text + " " + type;
  }
  if (check().kind == CaseKind::pipeline) {
    std::string text = "p=" + std::to_string(p);
    if (m > 0) text += " m=" + std::to_string(m);
    if (layers > 0) text += " layers=" + std::to_string(layers);
    if (!costs.empty()) text += " costs=" + costs;
    if (!schedule.empty()) text += " " + schedule;
    if (!type.empty()) text += " " + type;
    if (width > 0) text += " width=" + std::to_string(width);
    return text;
  }
  if (check().kind != CaseKind::layout) return arg;  // config, budget, fields, plan: the text
  std::string text = "mp=" + std::to_string(mp) + " dp=" + std::to_string(dp);
  if (pp != 1) text += " pp=" + std::to_string(pp);
  return type.empty() ? text : text + " " + type;
}

namespace {

[[noreturn]] void bad_case(const std::string& function, const std::string& text,
                           const std::string& why) {
  throw std::invalid_argument("test case \"" + function + " " + text + "\": " + why);
}

// A word of a case text, "key=value" or a plain word ("float"): its key ("" for a plain word)
// and its value when that is a number ("7.5e9", "13"). The case parsers share it.
struct Field {
  std::string key;
  std::optional<double> number;
  bool digits = false;  // the value is written in decimal digits only ("13", not "1.3e1")

  // Whether the value is a count written in digits, in [lo, hi].
  bool count_in(double lo, double hi) const { return digits && *number >= lo && *number <= hi; }
  // Whether the value is a whole number, however written ("7.5e9"), in [lo, hi].
  bool whole_in(double lo, double hi) const {
    return number && *number == std::floor(*number) && *number >= lo && *number <= hi;
  }
};

Field field_of(const std::string& token) {
  Field field;
  const std::size_t equals = token.find('=');
  if (equals == std::string::npos) return field;
  field.key = token.substr(0, equals);
  const std::string value = token.substr(equals + 1);
  char* end = nullptr;
  const double number = std::strtod(value.c_str(), &end);
  if (!value.empty() && *end == '\0' && std::isfinite(number)) field.number = number;
  field.digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
  return field;
}

// "mp=4" -> 4; anything else, or a size outside [1, 64], is an error.
int grid_size(const std::string& token, const std::string& function, const std::string& text) {
  const Field field = field_of(token);
  if (!field.count_in(1, 64)) {
    bad_case(function, text, "\"" + token + "\" is not a grid size between 1 and 64");
  }
  return static_cast<int>(*field.number);
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
    } else if (token.rfind("pp=", 0) == 0) {
      test.pp = grid_size(token, check.function, text);
    } else if (check.typed && (token == "float" || token == "double")) {
      test.type = token;
    } else {
      bad_case(check.function, text,
               "unknown word \"" + token + "\" (expected mp=M, dp=D, pp=P" +
                   (check.typed ? ", float or double)" : ")"));
    }
  }
  if (check.typed && test.type.empty())
    bad_case(check.function, text, "says neither float nor double");
  return test;
}

// "psi=7.5e9 dp=64 k=12", "random [tag]" or "numel=10 dp=4 [float|double]".
TestCase parse_zero(const CheckInfo& check, const std::string& text) {
  TestCase test;
  test.function = check.function;
  if (text == "random" || text.rfind("random ", 0) == 0) {
    test.arg = text;
    return test;
  }
  bool has_psi = false, has_numel = false;
  std::istringstream tokens(text);
  for (std::string token; tokens >> token;) {
    const Field field = field_of(token);
    if (field.key == "psi" && field.number && *field.number > 0) {
      test.psi = *field.number;
      has_psi = true;
    } else if (field.key == "k" && field.number && *field.number >= 0) {
      test.k = *field.number;
    } else if (field.key == "dp" && field.whole_in(1, 4096)) {
      test.dp = static_cast<int>(*field.number);
    } else if (field.key == "numel" && field.whole_in(0, 1 << 24)) {
      test.numel = static_cast<std::size_t>(*field.number);
      has_numel = true;
    } else if (check.typed && (token == "float" || token == "double")) {
      test.type = token;
    } else {
      bad_case(check.function, text,
               "unknown word \"" + token + "\" (expected psi=, dp=, k=, numel=, float or double)");
    }
  }
  if (has_psi == has_numel)
    bad_case(check.function, text, "needs psi=P (9.1) or numel=N (9.2 to 9.5)");
  if (check.typed && test.type.empty())
    bad_case(check.function, text, "says neither float nor double");
  return test;
}

// The profiles of partition_layers' costs (checks_pipeline.cpp draws them).
bool is_cost_profile(const std::string& name) {
  return name == "random" || name == "heavy-ends" || name == "dominant-first" ||
         name == "zero-layers";
}

// "p=4 m=8 layers=12 1f1b float width=4096": key=value numbers and words, in any order.
TestCase parse_pipeline(const CheckInfo& check, const std::string& text) {
  TestCase test;
  test.function = check.function;
  std::istringstream tokens(text);
  for (std::string token; tokens >> token;) {
    const Field field = field_of(token);
    if (field.key == "p" && field.count_in(1, 64)) {
      test.p = static_cast<int>(*field.number);
    } else if (field.key == "m" && field.count_in(1, 1000)) {
      test.m = static_cast<int>(*field.number);
    } else if (field.key == "layers" && field.count_in(1, 1000)) {
      test.layers = static_cast<int>(*field.number);
    } else if (field.key == "width" && field.count_in(1, 1 << 22)) {
      test.width = static_cast<std::size_t>(*field.number);
    } else if (field.key == "costs" && is_cost_profile(token.substr(6))) {
      test.costs = token.substr(6);
    } else if (token == "gpipe" || token == "1f1b") {
      test.schedule = token;
    } else if (check.typed && (token == "float" || token == "double")) {
      test.type = token;
    } else {
      bad_case(check.function, text,
               "unknown word \"" + token +
                   "\" (expected p=P, m=M, layers=L, costs=random|heavy-ends|dominant-first|"
                   "zero-layers, width=W, gpipe, 1f1b" +
                   std::string(check.typed ? ", float or double)" : ")"));
    }
  }
  if (test.m == 0 && test.layers == 0)
    bad_case(check.function, text, "says neither m=M nor layers=L");
  if (!test.costs.empty() && test.layers == 0)
    bad_case(check.function, text, "has costs= without layers=L");
  if (check.typed && test.type.empty())
    bad_case(check.function, text, "says neither float nor double");
  return test;
}

// "speed p=2 bytes=4194304 repetitions=7", for a function with an MPI counterpart.
TestCase parse_speed(const CheckInfo& check, const std::string& text) {
  if (check.timed_against.empty()) bad_case(check.function, text, "cannot be timed against MPI");
  TestCase test;
  test.function = check.function;
  std::istringstream tokens(text.substr(5));
  for (std::string token; tokens >> token;) {
    const Field field = field_of(token);
    if (field.key == "p" && field.count_in(1, 64)) {
      test.p = static_cast<int>(*field.number);
    } else if (field.key == "bytes" && field.count_in(4, 1 << 28)) {
      test.bytes = static_cast<std::size_t>(*field.number);
    } else if (field.key == "repetitions" && field.count_in(1, 1000)) {
      test.repetitions = static_cast<int>(*field.number);
    } else {
      bad_case(check.function, text,
               "\"" + token +
                   "\" is not p=P (1 to 64), bytes=B (4 to 2^28) or repetitions=N "
                   "(1 to 1000)");
    }
  }
  if (test.bytes == 0 || test.repetitions == 0)
    bad_case(check.function, text, "says no bytes=B or no repetitions=N");
  test.type = "float";
  if (check.reduces) test.op = "sum";
  return test;
}

// "p=4 count=13 float sum": the ranks, the element count, the type and (for checks that reduce)
// the op, in any order.
TestCase parse_buffer(const CheckInfo& check, const std::string& text) {
  if (text.rfind("speed ", 0) == 0) return parse_speed(check, text);
  TestCase test;
  test.function = check.function;
  bool has_count = false;
  std::istringstream tokens(text);
  for (std::string token; tokens >> token;) {
    const Field field = field_of(token);
    if (field.key == "p") {
      if (!field.count_in(1, 64))
        bad_case(check.function, text, "\"" + token + "\" is not a rank count between 1 and 64");
      test.p = static_cast<int>(*field.number);
    } else if (field.key == "count") {
      if (!field.count_in(0, 1 << 26))
        bad_case(check.function, text, "\"" + token + "\" is not an element count up to 2^26");
      test.count = static_cast<std::size_t>(*field.number);
      has_count = true;
    } else if (token == "float" || token == "double" || token == "int32") {
      test.type = token;
    } else if (check.reduces && (token == "sum" || token == "min" || token == "max")) {
      test.op = token;
    } else {
      bad_case(check.function, text,
               "unknown word \"" + token + "\" (expected p=P, count=N, float, double or int32" +
                   (check.reduces ? ", and sum, min or max)" : ")"));
    }
  }
  if (!has_count) bad_case(check.function, text, "says no count=N");
  if (test.type.empty()) bad_case(check.function, text, "says neither float, double nor int32");
  if (check.reduces && test.op.empty())
    bad_case(check.function, text, "says no op (sum, min or max)");
  return test;
}

// A case whose text is its argument (a config or a budget).
TestCase with_arg(const CheckInfo& check, const std::string& text) {
  TestCase test;
  test.function = check.function;
  test.arg = text;
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
  return with_arg(check, text);
}

TestCase parse_config(const CheckInfo& check, const std::string& text) {
  const bool random = text.rfind("random llama", 0) == 0 || text.rfind("random gpt2", 0) == 0;
  for (const std::string& broken : broken_configs()) {
    if (text == broken) return with_arg(check, text);
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
  return with_arg(check, text);
}

// "p=4 float heads=3 zigzag": p=P, the type, and the check's own keys and words, in any order.
TestCase parse_fields(const CheckInfo& check, const std::string& text) {
  TestCase test;
  test.function = check.function;
  auto declared = [&](const std::string& word) {
    for (const std::string& w : check.case_words) {
      if (w == word) return true;
    }
    return false;
  };
  std::string expected = "p=P";
  if (check.typed) expected += ", float, double";
  for (const std::string& w : check.case_words) expected += ", " + w;
  std::istringstream tokens(text);
  for (std::string token; tokens >> token;) {
    test.arg += (test.arg.empty() ? "" : " ") + token;
    const Field field = field_of(token);
    if (field.key == "p") {
      if (!field.count_in(1, 64))
        bad_case(check.function, text, "\"" + token + "\" is not a rank count between 1 and 64");
      test.p = static_cast<int>(*field.number);
    } else if (check.typed && (token == "float" || token == "double")) {
      test.type = token;
    } else if (!field.key.empty() && declared(field.key)) {
      if (!field.number) bad_case(check.function, text, "\"" + token + "\" needs a number");
      if (!test.values.emplace(field.key, *field.number).second)
        bad_case(check.function, text, "gives " + field.key + " twice");
    } else if (field.key.empty() && declared(token)) {
      test.words.push_back(token);
    } else {
      bad_case(check.function, text, "unknown word \"" + token + "\" (expected " + expected + ")");
    }
  }
  if (check.typed && test.type.empty())
    bad_case(check.function, text, "says neither float nor double");
  return test;
}

// "model=llama3_8b cluster=h100_80gb_x64 tokens=4194304 seq=8192", in this order: config names
// and the batch.
TestCase parse_plan(const CheckInfo& check, const std::string& text) {
  TestCase test = with_arg(check, text);
  const std::string expected =
      " (expected model=NAME cluster=NAME tokens=T seq=S: two config names of grader/configs, "
      "a whole number of tokens and a sequence length; a batch that is not a positive multiple "
      "of the sequence length is a case plan_training must refuse)";
  std::istringstream tokens(text);
  std::vector<std::string> words;
  for (std::string word; tokens >> word;) words.push_back(word);
  const std::vector<std::string> keys = {"model", "cluster", "tokens", "seq"};
  if (words.size() != keys.size()) bad_case(check.function, text, "has no plan" + expected);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (words[i].rfind(keys[i] + "=", 0) != 0)
      bad_case(check.function, text, "\"" + words[i] + "\" is not " + keys[i] + "=" + expected);
  }
  auto name = [&](const std::string& word) {
    const std::string value = word.substr(word.find('=') + 1);
    if (value.empty() ||
        value.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") != std::string::npos)
      bad_case(check.function, text, "\"" + word + "\" is not a config name" + expected);
    return value;
  };
  test.model = name(words[0]);
  test.cluster = name(words[1]);
  const Field batch = field_of(words[2]), seq = field_of(words[3]);
  if (!batch.whole_in(0, 1e12) || !seq.count_in(0, 1 << 24))
    bad_case(check.function, text, "has no batch" + expected);
  test.tokens = *batch.number;
  test.seq = static_cast<int>(*seq.number);
  return test;
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
    case CaseKind::buffer:
      return parse_buffer(*check, case_text);
    case CaseKind::pipeline:
      return parse_pipeline(*check, case_text);
    case CaseKind::zero:
      return parse_zero(*check, case_text);
    case CaseKind::fields:
      return parse_fields(*check, case_text);
    case CaseKind::plan:
      return parse_plan(*check, case_text);
  }
  bad_case(function, case_text, "unknown kind of check");
}

TestCase parse_test_id(const std::string& id) {
  const std::size_t space = id.find(' ');
  if (space == std::string::npos) return parse_test_case(id, "");
  return parse_test_case(id.substr(0, space), id.substr(space + 1));
}

}  // namespace dtk::grade
