#include "records.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "keys.hpp"

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

std::string block_hash(const std::string& key, const std::string& block) {
  std::uint64_t k[2] = {0, 0};
  for (std::size_t i = 0; i < 32 && i < key.size(); ++i) {
    const char c = key[i];
    const int digit = c >= 'a' ? c - 'a' + 10 : c >= 'A' ? c - 'A' + 10 : c - '0';
    k[i / 16] = (k[i / 16] << 4) | static_cast<std::uint64_t>(digit & 15);
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(siphash(k[0], k[1], block)));
  return text;
}

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

RankOutput parse_rank_output(const std::string& text, const std::string& key) {
  RankOutput outputs;
  TestOutput* current = nullptr;
  std::string current_id, current_part;
  std::string block;                 // the lines the runner hashed, "begin" included
  TestOutput* just_ended = nullptr;  // the test whose verified end is the line before
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    TestOutput* const ended_before = std::exchange(just_ended, nullptr);
    if (current == nullptr && line == "restart") {  // between blocks only
      if (ended_before != nullptr) ended_before->restart_after = true;
      continue;
    }
    const std::size_t space = line.find(' ');
    const std::string kind = line.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
    if (kind == "begin") {
      const bool again = outputs.count(rest) > 0;
      current_id = rest;
      current = &outputs[rest];
      current->tampered |= again;
      current_part.clear();
      block = line + "\n";
      continue;
    }
    if (current == nullptr) continue;
    if (kind == "end") {
      const std::size_t hash_at = rest.rfind(' ');
      const bool verified = hash_at != std::string::npos && rest.substr(0, hash_at) == current_id &&
                            rest.substr(hash_at + 1) == block_hash(key, block);
      if (verified) {
        current->complete = true;
        just_ended = current;
      } else {
        current->tampered = true;
      }
      current = nullptr;
      continue;
    }
    block += line + "\n";
    if (kind == "timeout") {
      current->timed_out = true;
    } else if (kind == "crashed") {
      current->crash_signal = std::atoi(rest.c_str());
    } else if (kind == "exited") {
      current->exited = true;
    } else if (kind == "note") {
      current->notes.push_back(rest);
    } else if (kind == "outcome") {
      current->outcomes.push_back(rest);
    } else if (kind == "part") {
      current_part = rest;
    } else if (kind == "moved") {
      char* end = nullptr;
      const long long bytes = std::strtoll(rest.c_str(), &end, 10);
      if (!rest.empty() && *end == '\0' && bytes >= 0) current->moved = bytes;
    } else if (kind == "received") {
      char* end = nullptr;
      const long long bytes = std::strtoll(rest.c_str(), &end, 10);
      const long long least = *end == ' ' ? std::strtoll(end + 1, &end, 10) : -1;
      if (*end == '\0' && bytes >= 0 && least >= -1) {
        current->received = bytes;
        current->least_received = least;
      }
    } else if (kind == "mistake") {
      const std::size_t tab = rest.find('\t'), second = rest.find('\t', tab + 1);
      if (second == std::string::npos) continue;
      Mistake mistake{rest.substr(0, tab), rest.substr(tab + 1, second - tab - 1), {}};
      if (parse_tensor(rest.substr(second + 1), mistake.wrong))
        current->mistakes.push_back(std::move(mistake));
    } else if (kind == "evidence") {
      const std::size_t tab = rest.find('\t');
      Value value;
      if (tab != std::string::npos && parse_tensor(rest.substr(tab + 1), value))
        current->evidence.emplace_back(rest.substr(0, tab), std::move(value));
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

RecordWriter::RecordWriter(std::string path, std::string key)
    : path_(std::move(path)), key_(std::move(key)) {
  const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
  close(fd);
}

void RecordWriter::append(const std::string& text) const {
  const int fd = open(path_.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;  // the grader sees an unfinished test
  for (std::size_t at = 0; at < text.size();) {
    const ssize_t n = write(fd, text.data() + at, text.size() - at);
    if (n <= 0) break;
    at += static_cast<std::size_t>(n);
  }
  close(fd);
}

void RecordWriter::begin(const std::string& id) {
  block_ = "begin " + id + "\n";
  append(block_);
}

void RecordWriter::end(const std::string& id) {
  append(block_.substr(block_.find('\n') + 1) + "end " + id + " " + block_hash(key_, block_) +
         "\n");
  block_.clear();
}

void RecordWriter::restart() { append("restart\n"); }

void RecordWriter::note(const std::string& text) { block_ += "note " + one_line(text) + "\n"; }
void RecordWriter::outcome(const std::string& text) {
  block_ += "outcome " + one_line(text) + "\n";
}

void RecordWriter::part(const std::string& name) { block_ += "part " + one_line(name) + "\n"; }

void RecordWriter::moved(unsigned long long bytes) {
  block_ += "moved " + std::to_string(bytes) + "\n";
}

void RecordWriter::received(unsigned long long bytes, long long least) {
  block_ += "received " + std::to_string(bytes) + " " + std::to_string(least) + "\n";
}

void RecordWriter::mistake(const std::string& value, const std::string& description,
                           const std::string& dtype, const std::vector<std::size_t>& shape,
                           const std::vector<double>& values) {
  block_ += "mistake " + one_line(value) + "\t" + one_line(description) + "\t";
  tensor_payload(dtype, shape, values);
}

void RecordWriter::integer(const std::string& name, long long value) {
  block_ += "int " + one_line(name) + "\t" + std::to_string(value) + "\n";
}

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

}  // namespace

void RecordWriter::real(const std::string& name, double value) {
  block_ += "real " + one_line(name) + "\t" + number(value) + "\n";
}

void RecordWriter::tensor(const std::string& name, const std::string& dtype,
                          const std::vector<std::size_t>& shape,
                          const std::vector<double>& values) {
  block_ += "tensor " + one_line(name) + "\t";
  tensor_payload(dtype, shape, values);
}

void RecordWriter::tensor_payload(const std::string& dtype, const std::vector<std::size_t>& shape,
                                  const std::vector<double>& values) {
  block_ += dtype + " " + std::to_string(shape.size());
  for (std::size_t dim : shape) block_ += " " + std::to_string(dim);
  block_ += " :";
  for (double v : values) block_ += " " + number(v);
  block_ += "\n";
}

void RecordWriter::evidence(const std::string& name, const std::string& dtype,
                            const std::vector<std::size_t>& shape,
                            const std::vector<double>& values) {
  block_ += "evidence " + one_line(name) + "\t";
  tensor_payload(dtype, shape, values);
}

void RecordWriter::outputs_of(const TestOutput& output) {
  std::string part;
  for (const auto& [name, value] : output.values) {
    if (value.part != part) this->part(part = value.part);
    if (value.kind == Value::Kind::integer) {
      integer(name, value.integer);
    } else if (value.kind == Value::Kind::real) {
      real(name, value.values.at(0));
    } else {
      tensor(name, value.dtype, value.shape, value.values);
    }
  }
  for (const auto& [name, value] : output.evidence)
    evidence(name, value.dtype, value.shape, value.values);
}

void RecordWriter::error(const std::string& text) { block_ += "error " + one_line(text) + "\n"; }

void RecordWriter::forbidden(const std::string& call, const std::string& caller) {
  block_ += "forbidden " + one_line(call) + "\t" + one_line(caller) + "\n";
}

}  // namespace dtk::grade
