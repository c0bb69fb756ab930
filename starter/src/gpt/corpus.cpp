#include "dtk/gpt/corpus.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unordered_map>

namespace dtk::gpt {

namespace {

constexpr const char* kBibleCommand = "bible 'gen1:1-rev22:21'";

// The code points of a UTF-8 text; DataError at the first byte that is not UTF-8 (a stray
// continuation byte, a truncated or overlong sequence, a surrogate, beyond U+10FFFF).
std::vector<char32_t> decode_utf8(const std::string& text, const std::string& source) {
  std::vector<char32_t> points;
  points.reserve(text.size());
  std::size_t i = 0;
  const auto byte = [&](std::size_t at) { return static_cast<unsigned char>(text[at]); };
  while (i < text.size()) {
    const unsigned char lead = byte(i);
    const int length = lead < 0x80           ? 1
                       : (lead >> 5) == 0x6  ? 2
                       : (lead >> 4) == 0xe  ? 3
                       : (lead >> 3) == 0x1e ? 4
                                             : 0;
    bool valid = length > 0 && i + length <= text.size();
    char32_t point = length == 1 ? lead : lead & (0x7f >> length);
    for (int k = 1; valid && k < length; ++k) {
      valid = (byte(i + k) & 0xc0) == 0x80;
      point = (point << 6) | (byte(i + k) & 0x3f);
    }
    static const char32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    valid = valid && point >= smallest[length] && point <= 0x10ffff &&
            !(point >= 0xd800 && point <= 0xdfff);
    if (!valid) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", lead);
      throw DataError(source + " is not UTF-8 text: byte " + hex + " at offset " +
                      std::to_string(i) + " starts no valid character");
    }
    points.push_back(point);
    i += length;
  }
  return points;
}

void append_utf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xc0 | (c >> 6));
    out += char(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += char(0xe0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3f));
    out += char(0x80 | (c & 0x3f));
  } else {
    out += char(0xf0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3f));
    out += char(0x80 | ((c >> 6) & 0x3f));
    out += char(0x80 | (c & 0x3f));
  }
}

// "  12 And God said" -> the length of the label "  12 ", or 0 when the line starts no verse.
std::size_t verse_label(const std::string& line) {
  if (line.size() < 4 || line[0] != ' ' || line[1] != ' ') return 0;
  std::size_t i = 2;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  return i > 2 && i < line.size() && line[i] == ' ' ? i + 1 : 0;
}

}  // namespace

std::string strip_verse_labels(const std::string& bible_output) {
  // `bible` prints a chapter as an empty line, its heading ("Genesis 1"), an empty line, then
  // its verses, each "  <number> <text>" wrapped on lines of at most 79 characters.
  std::istringstream lines(bible_output);
  std::string line, text, verse;
  bool after_empty_line = true;
  const auto end_verse = [&] {
    if (!verse.empty()) text += verse + "\n";
    verse.clear();
  };
  while (std::getline(lines, line)) {
    const std::size_t label = verse_label(line);
    if (line.empty()) {
      after_empty_line = true;
      continue;
    }
    if (label == 0 && after_empty_line) {  // a chapter's heading
      end_verse();
      if (!text.empty()) text += "\n";
    } else if (label > 0) {
      end_verse();
      verse = line.substr(label);
    } else {  // the verse goes on
      verse += " " + line;
    }
    after_empty_line = false;
  }
  end_verse();
  return text;
}

std::string king_james_bible() {
  FILE* pipe = popen((std::string(kBibleCommand) + " 2>/dev/null").c_str(), "r");
  std::string output;
  if (pipe) {
    char chunk[1 << 16];
    std::size_t got = 0;
    while ((got = std::fread(chunk, 1, sizeof chunk, pipe)) > 0) output.append(chunk, got);
  }
  const int status = pipe ? pclose(pipe) : -1;
  if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    throw DataError(
        "the default corpus, the King James Bible, comes from the program `bible`, which is not "
        "installed: apt-get install bible-kjv, or pass --corpus FILE");
  }
  if (status != 0 || output.empty()) {
    throw DataError(std::string(kBibleCommand) + " failed (status " + std::to_string(status) +
                    "): is Debian's bible-kjv installed? Or pass --corpus FILE");
  }
  return strip_verse_labels(output);
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError("--corpus " + path + ": cannot open this file");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw DataError("--corpus " + path + ": cannot read this file");
  return text;
}

Corpus make_corpus(const std::string& text, const std::string& source, int seq_len) {
  if (text.empty()) throw DataError(source + " is empty: there is nothing to learn");
  const std::vector<char32_t> points = decode_utf8(text, source);
  const std::size_t needed = 2 * (std::size_t(seq_len) + 1);
  if (points.size() < needed) {
    throw DataError(source + " holds " + std::to_string(points.size()) +
                    " characters, too few for sequences of " + std::to_string(seq_len) +
                    ": it needs at least 2 x (" + std::to_string(seq_len) + " + 1) = " +
                    std::to_string(needed) + ", a sequence to train on and one held out");
  }
  Corpus corpus;
  corpus.source = source;
  std::vector<bool> seen(0x110000, false);  // every code point
  for (const char32_t c : points) seen[c] = true;
  for (char32_t c = 0; c < seen.size(); ++c) {
    if (seen[c]) corpus.alphabet.push_back(c);
  }
  corpus.vocab_size = static_cast<int>((corpus.alphabet.size() + 63) / 64 * 64);
  std::unordered_map<char32_t, std::int32_t> token_of;
  for (std::size_t t = 0; t < corpus.alphabet.size(); ++t) token_of[corpus.alphabet[t]] = t;
  corpus.tokens.reserve(points.size());
  for (const char32_t c : points) corpus.tokens.push_back(token_of[c]);
  // The last tenth, at least one sequence, is held out; the rest holds at least one too.
  const std::size_t held_out = std::max(points.size() / 10, std::size_t(seq_len) + 1);
  corpus.validation_begin = points.size() - held_out;
  return corpus;
}

std::string Corpus::decode(const std::vector<std::int32_t>& ids) const {
  std::string text;
  for (const std::int32_t t : ids) {
    append_utf8(t >= 0 && std::size_t(t) < alphabet.size() ? alphabet[t] : U'?', text);
  }
  return text;
}

Corpus load_corpus(const std::string& path, int seq_len, const Communicator& world) {
  // Rank 0 reads; the others wait for its text, or for its error, which every rank then throws.
  std::string text, error;
  if (world.Get_rank() == 0) {
    try {
      text = path.empty() ? king_james_bible() : read_text_file(path);
    } catch (const DataError& e) {
      error = e.what();
    }
  }
  const auto broadcast = [&](std::string& s) {
    unsigned long long size = s.size();
    MPI_Bcast(&size, 1, MPI_UNSIGNED_LONG_LONG, 0, world.handle());
    s.resize(size);
    MPI_Bcast(s.data(), static_cast<int>(size), MPI_CHAR, 0, world.handle());
  };
  broadcast(error);
  if (!error.empty()) throw DataError(error);
  broadcast(text);
  const std::string source = path.empty()
                                 ? "the King James Bible (" + std::string(kBibleCommand) + ")"
                                 : "--corpus " + path;
  return make_corpus(text, source, seq_len);
}

double bigram_entropy(const std::vector<std::int32_t>& tokens, std::size_t begin, std::size_t end,
                      int vocab_size) {
  std::unordered_map<std::int64_t, double> pairs;  // previous · V + next -> count
  std::vector<double> previous(vocab_size, 0.0);
  for (std::size_t i = begin + 1; i < end; ++i) {
    pairs[std::int64_t(tokens[i - 1]) * vocab_size + tokens[i]] += 1;
    previous[tokens[i - 1]] += 1;
  }
  const double total = end > begin + 1 ? double(end - begin - 1) : 1.0;
  double entropy = 0;  // -Σ p(a, b) log p(b | a)
  for (const auto& [pair, count] : pairs) {
    entropy -= count / total * std::log(count / previous[pair / vocab_size]);
  }
  return entropy;
}

}  // namespace dtk::gpt
