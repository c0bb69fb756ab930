// Kit self-test: the GPT's data and set-up, on one rank: the King James Bible's verse labels
// stripped, the character tokeniser (code points, vocabulary padded to 64, the held-out tail),
// every refused text (empty, too short, not UTF-8), the bigram entropy, the batches of a step
// (the same for a seed, inside the training text), the learning-rate schedule and the shapes and
// layouts the model refuses.
//   ./build/tests/kit/kit_gpt_data
#include "dtk_test.hpp"

#include <dtk/gpt/batches.hpp>
#include <dtk/gpt/corpus.hpp>
#include <dtk/gpt/trainer.hpp>

#include <cmath>

namespace {

using dtk::testing::Checks;

// Runs `make`, which must throw a one-line DataError holding `expected`.
template <class Make>
void check_refused(Checks& check, const std::string& what, Make make, const std::string& expected) {
  try {
    make();
    check.that(false, what + ": accepted");
  } catch (const dtk::DataError& e) {
    const std::string message = e.what();
    check.that(message.find('\n') == std::string::npos, what + ": the message is not one line");
    check.that(message.find(expected) != std::string::npos,
               what + ": message '" + message + "' does not contain '" + expected + "'");
  }
}

std::string repeat(const std::string& s, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += s;
  return out;
}

}  // namespace

TEST_CASE("kit | corpus: the Bible's chapter headings and verse numbers are stripped", "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    const std::string bible =
        "\nGenesis 1\n\n  1 In the beginning God created the heaven and the earth.\n"
        "  2 And the earth was without form, and void; and darkness was upon the face of\n"
        "the deep.\n\n1 Samuel 2\n\n  1 And Hannah prayed, and said, My heart rejoiceth in the\n"
        "LORD, 2 times.\n";
    const std::string expected =
        "In the beginning God created the heaven and the earth.\n"
        "And the earth was without form, and void; and darkness was upon the face of the deep.\n"
        "\nAnd Hannah prayed, and said, My heart rejoiceth in the LORD, 2 times.\n";
    const std::string stripped = dtk::gpt::strip_verse_labels(bible);
    check.that(stripped == expected, "stripped:\n" + stripped + "expected:\n" + expected);
  });
}

TEST_CASE("kit | corpus: characters are code points, the vocabulary padded to 64, a tail held out",
          "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    // "é" (2 bytes), "日" (3 bytes), "😀" (4 bytes): one token each.
    const std::string text = repeat("ab é日😀\n", 20);  // 7 characters, 140 in all
    const dtk::gpt::Corpus corpus = dtk::gpt::make_corpus(text, "test", 10);
    check.equal("alphabet", 7, corpus.alphabet.size());
    check.that(
        corpus.alphabet == std::vector<char32_t>({U'\n', U' ', U'a', U'b', U'é', U'日', U'😀'}),
        "the alphabet is the characters in code point order");
    check.equal("vocabulary", 64, corpus.vocab_size);
    check.equal("tokens", 140, corpus.tokens.size());
    check.that(corpus.decode(corpus.tokens) == text, "decoding the tokens gives the text back");
    check.equal("held out (a tenth, at least seq + 1 = 11)", 14, corpus.validation_tokens());
    const dtk::gpt::Corpus short_tail = dtk::gpt::make_corpus(repeat("abcd", 10), "test", 12);
    check.equal("held out (seq + 1 when a tenth is less)", 13, short_tail.validation_tokens());
    std::string many;
    for (char32_t c = 0x4e00; c < 0x4e00 + 70; ++c) {
      many += std::string{char(0xe0 | (c >> 12)), char(0x80 | ((c >> 6) & 0x3f)),
                          char(0x80 | (c & 0x3f))};
    }
    check.equal("70 characters pad to", 128, dtk::gpt::make_corpus(many, "test", 8).vocab_size);
  });
}

TEST_CASE("kit | corpus: an empty, a too short or a non-UTF-8 text is refused with one line",
          "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    using dtk::gpt::make_corpus;
    check_refused(
        check, "empty", [] { make_corpus("", "--corpus e.txt", 8); }, "--corpus e.txt is empty");
    check_refused(
        check, "too short", [] { make_corpus(std::string(17, 'a'), "--corpus s.txt", 8); },
        "holds 17 characters, too few for sequences of 8: it needs at least 2 x (8 + 1) = 18");
    make_corpus(std::string(18, 'a'), "--corpus s.txt", 8);  // just enough
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"abc\xff", "byte 0xff at offset 3"},          // never in UTF-8
        {"ab\x80", "byte 0x80 at offset 2"},           // a continuation byte alone
        {"a\xc0\x80", "byte 0xc0 at offset 1"},        // an overlong NUL
        {"a\xed\xa0\x80", "byte 0xed at offset 1"},    // a surrogate
        {"abcd\xe2\x82", "byte 0xe2 at offset 4"},     // cut short
        {"\xf4\x90\x80\x80", "byte 0xf4 at offset 0"}  // beyond U+10FFFF
    };
    for (const auto& [text, expected] : bad) {
      check_refused(
          check, "not UTF-8 (" + expected + ")",
          [text = text] { make_corpus(text + std::string(40, 'x'), "--corpus b.txt", 4); },
          "--corpus b.txt is not UTF-8 text: " + expected);
    }
    check_refused(
        check, "missing file", [] { dtk::gpt::read_text_file("/nonexistent/dtk.txt"); },
        "--corpus /nonexistent/dtk.txt: cannot open this file");
  });
}

TEST_CASE("kit | corpus: bigram entropy", "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    // abab...: the next character is certain. aab aab ...: after b comes a; after a, a or b
    // equally often (2 of 3 pairs start with a): 2/3 log 2.
    const std::vector<std::int32_t> alternating = {0, 1, 0, 1, 0, 1, 0, 1, 0};
    std::vector<std::int32_t> aab;
    for (int i = 0; i < 300; ++i) aab.insert(aab.end(), {0, 0, 1});
    check.that(dtk::gpt::bigram_entropy(alternating, 0, alternating.size(), 64) == 0,
               "a text that alternates has entropy 0");
    const double h = dtk::gpt::bigram_entropy(aab, 0, aab.size(), 64);
    check.that(std::abs(h - 2.0 / 3 * std::log(2.0)) < 1e-3,
               "aab aab ...: expected 2/3 log 2, got " + std::to_string(h));
  });
}

TEST_CASE("kit | batches: a step's windows come from the seed, inside the training text", "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    std::string text;
    for (int i = 0; i < 1000; ++i) text += char('a' + i % 26);
    const dtk::gpt::Corpus corpus = dtk::gpt::make_corpus(text, "test", 16);
    using dtk::gpt::training_windows;
    const auto step1 = training_windows(corpus, 16, 8, 42, 1);
    check.that(step1 == training_windows(corpus, 16, 8, 42, 1),
               "the same seed and step: the same windows");
    check.that(step1 != training_windows(corpus, 16, 8, 42, 2), "another step: other windows");
    check.that(step1 != training_windows(corpus, 16, 8, 43, 1), "another seed: other windows");
    for (long step = 1; step <= 50; ++step) {
      for (const std::size_t start : training_windows(corpus, 16, 8, 42, step)) {
        check.that(start + 17 <= corpus.training_tokens(),
                   "a window reaches into the held-out text");
      }
    }
    const dtk::gpt::GptBatch batch = dtk::gpt::make_batch(corpus, step1, 2, 3, 16, 128);
    check.equal("sequences", 3, batch.batch);
    check.equal("tokens", 48, batch.tokens.size());
    for (std::size_t b = 0; b < 3; ++b) {
      for (std::size_t s = 0; s < 16; ++s) {
        check.equal("token", corpus.tokens[step1[2 + b] + s], batch.tokens(b * 16 + s));
        check.equal("target: the next token", corpus.tokens[step1[2 + b] + s + 1],
                    batch.targets(b * 16 + s));
      }
    }
    const auto validation = dtk::gpt::validation_windows(corpus, 16, 4);
    check.equal("validation windows", 4, validation.size());
    check.equal("the first validation window starts the held-out text", corpus.validation_begin,
                validation.front());
    check.equal("the last ends the text", corpus.tokens.size() - 17, validation.back());
  });
}

TEST_CASE("kit | trainer: the learning rate warms up, then follows a cosine to a tenth", "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    using dtk::gpt::learning_rate;
    const auto near = [](double a, double b) { return std::abs(a - b) < 1e-12; };
    check.that(near(learning_rate(1.0, 1, 1000), 0.01), "step 1 of 100 warm-up steps: lr / 100");
    check.that(near(learning_rate(1.0, 100, 1000), 1.0), "the end of the warm-up: lr");
    check.that(near(learning_rate(1.0, 550, 1000), 0.55),
               "half way down the cosine: (1 + 0.1) / 2");
    check.that(near(learning_rate(1.0, 1000, 1000), 0.1), "the last step: lr / 10");
    check.that(near(learning_rate(1.0, 1, 20), 0.5), "20 steps warm up over 2");
  });
}

TEST_CASE("kit | config and layout: shapes the model cannot take are named", "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    dtk::gpt::GptConfig c;
    check.that(dtk::gpt::config_problem(c).empty(), "the default shape is fine");
    c.heads = 3;
    check.that(dtk::gpt::config_problem(c).find("3 heads do not divide the hidden width 256") !=
                   std::string::npos,
               "heads not dividing the width: " + dtk::gpt::config_problem(c));
    c = {};
    c.vocab_size = 100;
    check.that(dtk::gpt::config_problem(c).find("multiple of 64") != std::string::npos,
               "a vocabulary not padded");
    c = {};
    c.experts = 2;
    c.top_k = 3;
    check.that(dtk::gpt::config_problem(c).find("top_k 3") != std::string::npos,
               "top_k beyond the experts");
    c = {};
    dtk::gpt::GptLayout layout = dtk::gpt::one_rank_layout(c);
    check.that(dtk::gpt::layout_problem(c, layout).empty(), "one rank holds it all");
    std::swap(layout.qkv_columns[0], layout.qkv_columns[1]);
    check.that(dtk::gpt::layout_problem(c, layout).find("whole heads") != std::string::npos,
               "QKV columns out of order are refused");
    layout.qkv_columns = dtk::gpt::index_range(0, c.hidden);
    check.that(dtk::gpt::layout_problem(c, layout).find("whole heads") != std::string::npos,
               "Q columns without K and V are refused");
    // A Llama of 4 heads reading 2 key/value heads (d = 64): rank 1 of 2 holds query heads 2, 3,
    // which read key/value head 1: Q [128, 256), K [320, 384), V [448, 512).
    dtk::gpt::GptConfig llama = c;
    llama.arch = dtk::gpt::Architecture::Llama;
    llama.kv_heads = 2;
    layout = dtk::gpt::one_rank_layout(llama);
    layout.tp_size = 2;
    layout.tp_idx = 1;
    layout.qkv_columns = dtk::gpt::index_range(128, 256);
    for (const int first : {320, 448}) {
      for (int column = first; column < first + 64; ++column) layout.qkv_columns.push_back(column);
    }
    check.that(dtk::gpt::layout_problem(llama, layout).empty(),
               "a Llama rank's query heads with the key/value head they read: " +
                   dtk::gpt::layout_problem(llama, layout));
    for (int& column : layout.qkv_columns) column -= column >= 256 ? 64 : 0;  // key/value head 0
    check.that(dtk::gpt::layout_problem(llama, layout).find("whole heads") != std::string::npos,
               "a Llama rank's query heads with a key/value head they do not read are refused");
    layout = dtk::gpt::one_rank_layout(c);
    layout.tp_size = 3;
    check.that(dtk::gpt::layout_problem(c, layout).find("tp = 3 must divide") != std::string::npos,
               "tp not dividing the heads");
  });
}
