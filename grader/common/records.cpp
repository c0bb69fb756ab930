#include "records.hpp"

#include <cstdlib>
#include <sstream>

namespace dtk::grade {

namespace {

constexpr std::size_t kMaxTensorElements = 1 << 20;

// "<dtype> <ndim> <dims...> : <values...>"
bool parse_tensor(const std::string& payload, Value& value) {
  std::istringstream in(payload);
  std::size_t ndim = 0;
  if (!(in >> value.dtype >> ndim) || ndim > 8) return false;
  std::size_t count = 1;
  for (std::size_t i = 0; i < ndim; ++i) {
    std::size_t dim = 0;
    if (!(in >> dim) || dim > kMaxTensorElements) return false;
    value.shape.push_back(dim);
    count *= dim;
    if (count > kMaxTensorElements) return false;
  }
  std::string colon;
  if (!(in >> colon) || colon != ":") return false;
  value.values.resize(count);
  for (double& element : value.values) {
    std::string token;
    if (!(in >> token)) return false;
    char* end = nullptr;
    element = std::strtod(token.c_str(), &end);
    if (*end != '\0') return false;
  }
  value.kind = Value::Kind::tensor;
  return true;
}

bool parse_value(const std::string& kind, const std::string& payload, Value& value) {
  if (kind == "tensor") return parse_tensor(payload, value);
  char* end = nullptr;
  if (kind == "int") {
    value.kind = Value::Kind::integer;
    value.integer = std::strtoll(payload.c_str(), &end, 10);
  } else {
    value.kind = Value::Kind::real;
    value.values = {std::strtod(payload.c_str(), &end)};
  }
  return !payload.empty() && *end == '\0';
}

}  // namespace

const Value* TestOutput::find(const std::string& name) const {
  for (const auto& [key, value] : values) {
    if (key == name) return &value;
  }
  return nullptr;
}

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return text;
}

RankOutput parse_rank_output(const std::string& text) {
  RankOutput outputs;
  TestOutput* current = nullptr;
  std::string current_id, current_part;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t space = line.find(' ');
    const std::string kind = line.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
    if (kind == "begin") {
      current_id = rest;
      current = &outputs[rest];
      *current = TestOutput{};
      current_part.clear();
      continue;
    }
    if (current == nullptr) continue;
    if (kind == "end") {
      if (rest == current_id) current->complete = true;
      current = nullptr;
    } else if (kind == "timeout") {
      current->timed_out = true;
    } else if (kind == "crashed") {
      current->crash_signal = std::atoi(rest.c_str());
    } else if (kind == "exited") {
      current->exited = true;
    } else if (kind == "note") {
      current->notes.push_back(rest);
    } else if (kind == "part") {
      current_part = rest;
    } else if (kind == "moved") {
      char* end = nullptr;
      const long long bytes = std::strtoll(rest.c_str(), &end, 10);
      if (!rest.empty() && *end == '\0' && bytes >= 0) current->moved = bytes;
    } else if (kind == "mistake") {
      const std::size_t tab = rest.find('\t'), second = rest.find('\t', tab + 1);
      if (second == std::string::npos) continue;
      Mistake mistake{rest.substr(0, tab), rest.substr(tab + 1, second - tab - 1), {}};
      if (parse_tensor(rest.substr(second + 1), mistake.wrong))
        current->mistakes.push_back(std::move(mistake));
    } else if (kind == "error") {
      current->errors.push_back(rest);
    } else if (kind == "forbidden") {
      const std::size_t tab = rest.find('\t');
      current->forbidden.push_back(tab == std::string::npos
                                       ? rest
                                       : rest.substr(0, tab) + " (called from " +
                                             rest.substr(tab + 1) + ")");
    } else if (kind == "int" || kind == "real" || kind == "tensor") {
      const std::size_t tab = rest.find('\t');
      if (tab == std::string::npos) continue;
      Value value;
      value.part = current_part;
      if (parse_value(kind, rest.substr(tab + 1), value)) {
        current->values.emplace_back(rest.substr(0, tab), std::move(value));
      }
    }
  }
  return outputs;
}

void RecordWriter::begin(const std::string& id) {
  std::fprintf(file_, "begin %s\n", id.c_str());
  std::fflush(file_);  // a test that crashes must still show it began
}

void RecordWriter::end(const std::string& id) {
  std::fprintf(file_, "end %s\n", id.c_str());
  std::fflush(file_);
}

void RecordWriter::note(const std::string& text) {
  std::fprintf(file_, "note %s\n", one_line(text).c_str());
}

void RecordWriter::part(const std::string& name) {
  std::fprintf(file_, "part %s\n", one_line(name).c_str());
}

void RecordWriter::moved(unsigned long long bytes) { std::fprintf(file_, "moved %llu\n", bytes); }

void RecordWriter::mistake(const std::string& value, const std::string& description,
                           const std::string& dtype, const std::vector<std::size_t>& shape,
                           const std::vector<double>& values) {
  std::fprintf(file_, "mistake %s\t%s\t", one_line(value).c_str(), one_line(description).c_str());
  tensor_payload(dtype, shape, values);
}

void RecordWriter::integer(const std::string& name, long long value) {
  std::fprintf(file_, "int %s\t%lld\n", one_line(name).c_str(), value);
}

void RecordWriter::real(const std::string& name, double value) {
  std::fprintf(file_, "real %s\t%.17g\n", one_line(name).c_str(), value);
}

void RecordWriter::tensor(const std::string& name, const std::string& dtype,
                          const std::vector<std::size_t>& shape,
                          const std::vector<double>& values) {
  std::fprintf(file_, "tensor %s\t", one_line(name).c_str());
  tensor_payload(dtype, shape, values);
}

void RecordWriter::tensor_payload(const std::string& dtype, const std::vector<std::size_t>& shape,
                                  const std::vector<double>& values) {
  std::fprintf(file_, "%s %zu", dtype.c_str(), shape.size());
  for (std::size_t dim : shape) std::fprintf(file_, " %zu", dim);
  std::fputs(" :", file_);
  for (double v : values) std::fprintf(file_, " %.17g", v);
  std::fputc('\n', file_);
}

void RecordWriter::error(const std::string& text) {
  std::fprintf(file_, "error %s\n", one_line(text).c_str());
  std::fflush(file_);
}

void RecordWriter::forbidden(const std::string& call, const std::string& caller) {
  std::fprintf(file_, "forbidden %s\t%s\n", one_line(call).c_str(), one_line(caller).c_str());
  std::fflush(file_);
}

}  // namespace dtk::grade
