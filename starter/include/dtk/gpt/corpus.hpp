// The text the GPT learns, and its tokeniser: characters.
//
// A token is one character, a Unicode code point of the UTF-8 text (not a byte: a character
// such as "é" is one token, not two the model would have to learn to pair, and every sample the
// model writes is valid UTF-8). The vocabulary is the text's distinct characters in code point
// order (token i is the i-th), padded with unused tokens up to a multiple of 64, so that
// tensor parallelism can split it evenly. The last tenth of the text (at least one sequence) is
// held out: the model never trains on it, and the validation loss is measured there.
//
// The default text is the King James Bible from Debian's bible-kjv (`bible 'gen1:1-rev22:21'`,
// about 4.3 MB, public domain): chapter headings and verse numbers stripped, one verse per line,
// a blank line between chapters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dtk/communicator.hpp"
#include "dtk/data/idx_loader.hpp"  // DataError

namespace dtk::gpt {

struct Corpus {
  std::string source;                // where the text came from, for messages
  std::vector<char32_t> alphabet;    // token i is the character alphabet[i]
  int vocab_size = 0;                // alphabet.size() rounded up to a multiple of 64
  std::vector<std::int32_t> tokens;  // the whole text
  std::size_t validation_begin = 0;  // tokens [0, validation_begin) train, the rest validate

  std::size_t training_tokens() const { return validation_begin; }
  std::size_t validation_tokens() const { return tokens.size() - validation_begin; }
  // The characters of `tokens` as UTF-8 (a padding token, never in the text, as "?").
  std::string decode(const std::vector<std::int32_t>& tokens) const;
};

// The King James Bible, as the class comment says. Throws DataError when `bible` is not
// installed or fails.
std::string king_james_bible();

// What king_james_bible makes of `bible`'s output: headings and verse numbers stripped.
std::string strip_verse_labels(const std::string& bible_output);

// The bytes of a file. Throws DataError when it cannot be read.
std::string read_text_file(const std::string& path);

// The corpus of a UTF-8 text. Throws DataError (naming `source`) when the text is empty, not
// UTF-8 (with the offset of the first bad byte), or too short to hold one sequence of
// seq_len + 1 tokens to train on and one to validate on.
Corpus make_corpus(const std::string& text, const std::string& source, int seq_len);

// Collective: the text of `path` (the King James Bible when empty), read on rank 0 and sent to
// every rank, made into a corpus on every rank; or the same DataError on every rank.
Corpus load_corpus(const std::string& path, int seq_len, const Communicator& world);

// The conditional entropy, in nats per character, of a character given the one before it, over
// tokens[begin, end): the loss of the best model that sees only the previous character.
double bigram_entropy(const std::vector<std::int32_t>& tokens, std::size_t begin, std::size_t end,
                      int vocab_size);

}  // namespace dtk::gpt
