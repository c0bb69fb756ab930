// The tar reader: regular files come out, everything else is refused with a reason.
#include <catch2/catch.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "compile/tar_reader.hpp"

using namespace dtk::grade;

namespace {

// One ustar member: a 512-byte header, then the content padded to 512 bytes.
std::string member(const std::string& path, const std::string& content, char type = '0',
                   const std::string& link = "") {
  std::string header(512, '\0');
  auto put = [&](std::size_t at, const std::string& text) {
    header.replace(at, text.size(), text);
  };
  auto octal = [](std::size_t value, int digits) {
    char text[32];
    std::snprintf(text, sizeof text, "%0*zo", digits, value);
    return std::string(text);
  };
  put(0, path);
  put(100, "0000644");
  put(108, "0000000");
  put(116, "0000000");
  put(124, octal(type == '0' ? content.size() : 0, 11));
  put(136, octal(0, 11));
  put(148, "        ");  // the checksum counts its own field as spaces
  header[156] = type;
  put(157, link);
  put(257, std::string("ustar\0"
                       "00",
                       8));
  unsigned sum = 0;
  for (unsigned char c : header) sum += c;
  put(148, octal(sum, 6) + std::string("\0 ", 2));
  std::string data = type == '0' ? content : "";
  data.resize((data.size() + 511) / 512 * 512, '\0');
  return header + data;
}

std::string archive(const std::string& members) { return members + std::string(1024, '\0'); }

// read_tar with room for any archive of these tests, files up to max_file_bytes.
TarContents read_archive(const std::string& data, std::size_t max_file_bytes) {
  return read_tar(data, std::size_t{16} << 20, max_file_bytes);
}

}  // namespace

TEST_CASE("regular files come out with their content, ./ prefixes removed", "[tar]") {
  const TarContents contents = read_archive(
      archive(member("./model/func_impl.cpp", "int x;\n") + member("notes.txt", "")), 1 << 20);
  REQUIRE(contents.files.size() == 2);
  CHECK(contents.files[0].path == "model/func_impl.cpp");
  CHECK(contents.files[0].content == "int x;\n");
  CHECK(contents.files[1].path == "notes.txt");
  CHECK(contents.refused.empty());
}

TEST_CASE("links, absolute paths, .. and oversized files are refused with a reason", "[tar]") {
  const TarContents contents = read_archive(
      archive(member("/etc/passwd", "x") + member("../up.cpp", "x") + member("a/../../b.cpp", "x") +
              member("link.cpp", "", '2', "/etc/passwd") +
              member("big.cpp", std::string(2000, 'x')) + member("ok.cpp", "fine")),
      1000);
  REQUIRE(contents.files.size() == 1);
  CHECK(contents.files[0].path == "ok.cpp");
  REQUIRE(contents.refused.size() == 5);
  for (const std::string& refusal : contents.refused) {
    INFO(refusal);
    CHECK(refusal.find(": ") != std::string::npos);  // "path: why"
  }
  CHECK(contents.refused[0].rfind("/etc/passwd", 0) == 0);
  CHECK(contents.refused[3].find("link") != std::string::npos);
  CHECK(contents.refused[4].find("1000") != std::string::npos);
}

TEST_CASE("what is not a tar archive, or is cut short, throws", "[tar]") {
  CHECK_THROWS_AS(
      read_archive("This is my homework, please grade it.\n" + std::string(1024, 'x'), 1000),
      std::runtime_error);
  const std::string whole = archive(member("a.cpp", std::string(1500, 'x')));
  CHECK_THROWS_AS(read_archive(whole.substr(0, 1024), 1 << 20), std::runtime_error);
  std::string corrupt = whole;
  corrupt[0] = 'b';  // the checksum no longer matches
  CHECK_THROWS_AS(read_archive(corrupt, 1 << 20), std::runtime_error);
}

TEST_CASE("a valid archive without members is empty, not broken", "[tar]") {
  const TarContents contents = read_archive(archive(""), 1 << 20);
  CHECK(contents.empty);
  CHECK(contents.files.empty());
}
