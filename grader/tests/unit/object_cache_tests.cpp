// The compiled objects a grading keeps for the next (object_cache.hpp): found again only for the
// same file, source and compiler and unchanged headers it read, never through a hash alone, never
// half-written; and the compiler's identity changes when the content of a file it reads does.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "compile/object_cache.hpp"

using namespace dtk::grade;

namespace fs = std::filesystem;

namespace {

struct ScratchDir {
  std::string path =
      fs::temp_directory_path() / ("dtk-object-cache-test-" + std::to_string(getpid()));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() { fs::remove_all(path); }
};

// The one entry file under `dir`.
std::string only_entry(const std::string& dir) {
  std::vector<std::string> entries;
  for (const auto& entry : fs::directory_iterator(dir)) entries.push_back(entry.path());
  REQUIRE(entries.size() == 1);
  return entries[0];
}

}  // namespace

TEST_CASE("an object kept is found again for the same file, source and compiler",
          "[object_cache]") {
  ScratchDir dir;
  fs::create_directories(dir.path + "/include");
  const std::string objects = dir.path + "/objects", headers = dir.path + "/include";
  const std::string object(
      "\x7f"
      "ELF\0object bytes",
      17);
  ObjectCache(objects, "g++ -O0", headers).save("zero/zero.cpp", "int f();", {}, object);
  CHECK((fs::status(objects).permissions() & fs::perms::all) == fs::perms::owner_all);

  std::string found;
  REQUIRE(ObjectCache(objects, "g++ -O0", headers).load("zero/zero.cpp", "int f();", found));
  CHECK(found == object);
  // Anything else in the key: not found.
  CHECK_FALSE(ObjectCache(objects, "g++ -O2", headers).load("zero/zero.cpp", "int f();", found));
  CHECK_FALSE(
      ObjectCache(objects, "g++ -O0", headers).load("pipeline/pipeline.cpp", "int f();", found));
  CHECK_FALSE(ObjectCache(objects, "g++ -O0", headers).load("zero/zero.cpp", "int f(); ", found));
}

TEST_CASE("a header the compile read changes: not found; one it did not read: found",
          "[object_cache]") {
  ScratchDir dir;
  const std::string headers = dir.path + "/include";
  fs::create_directories(headers + "/dtk/gpt");
  std::ofstream(headers + "/dtk/zero.hpp") << "int f();";
  std::ofstream(headers + "/dtk/gpt/block.hpp") << "struct Block;";
  ObjectCache(dir.path, "g++", headers)
      .save("zero/zero.cpp", "#include ...", {"dtk/zero.hpp"}, "OBJECT");
  std::string found;
  SECTION("another header's content") {
    std::ofstream(headers + "/dtk/gpt/block.hpp") << "struct Block { int layers; };";
    CHECK(ObjectCache(dir.path, "g++", headers).load("zero/zero.cpp", "#include ...", found));
  }
  SECTION("the header it read, rewritten with the same size") {
    std::ofstream(headers + "/dtk/zero.hpp") << "int g();";
    CHECK_FALSE(ObjectCache(dir.path, "g++", headers).load("zero/zero.cpp", "#include ...", found));
  }
  SECTION("a header added (an #include or __has_include may now find it)") {
    std::ofstream(headers + "/dtk/overlap.hpp") << "";
    CHECK_FALSE(ObjectCache(dir.path, "g++", headers).load("zero/zero.cpp", "#include ...", found));
  }
}

TEST_CASE("an entry found under another key's name, cut short or empty is not used",
          "[object_cache]") {
  ScratchDir dir;
  const ObjectCache cache(dir.path + "/objects", "g++", dir.path);
  cache.save("a.cpp", "one", {}, "OBJECT");
  const std::string entry = only_entry(dir.path + "/objects");
  std::string text;
  {
    std::ifstream file(entry, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  }
  std::string found;
  SECTION("another key under this key's file name (a hash collision)") {
    // A key of the same length differing in its source: only a comparison of the whole key
    // tells them apart.
    std::string other = text;
    other.replace(other.find("one"), 3, "two");
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << other;
    CHECK_FALSE(cache.load("a.cpp", "one", found));
  }
  SECTION("cut inside the key") {
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << text.substr(0, text.size() - 10);
    CHECK_FALSE(cache.load("a.cpp", "one", found));
  }
  SECTION("the key without an object") {
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << text.substr(0, text.size() - 6);
    CHECK_FALSE(cache.load("a.cpp", "one", found));
  }
  SECTION("the whole entry") {
    CHECK(cache.load("a.cpp", "one", found));
    CHECK(found == "OBJECT");
  }
}

TEST_CASE("beyond its bound, the entries used longest ago go", "[object_cache]") {
  ScratchDir dir;
  fs::create_directories(dir.path + "/objects");
  // Each entry takes 36 bytes: the bound holds two.
  const ObjectCache cache(dir.path + "/objects", "g++", dir.path + "/include", 80);
  const auto age = [&](const std::string& source, int seconds) {
    std::string found;
    REQUIRE(cache.load("a.cpp", source, found));  // found, and so used now
    for (const auto& entry : fs::directory_iterator(dir.path + "/objects")) {
      std::ifstream file(entry.path(), std::ios::binary);
      const std::string content((std::istreambuf_iterator<char>(file)), {});
      if (content.find(source + "0\nOBJ") != std::string::npos) {
        fs::last_write_time(entry.path(),
                            fs::last_write_time(entry.path()) - std::chrono::seconds(seconds));
      }
    }
  };
  cache.save("a.cpp", "one", {}, "OBJ1");
  cache.save("a.cpp", "two", {}, "OBJ2");
  age("one", 100);
  age("two", 200);  // "two" used longest ago
  cache.save("a.cpp", "six", {}, "OBJ6");
  std::string found;
  CHECK(cache.load("a.cpp", "one", found));
  CHECK_FALSE(cache.load("a.cpp", "two", found));
  CHECK(cache.load("a.cpp", "six", found));
}

TEST_CASE("no directory: nothing is kept or found", "[object_cache]") {
  const ObjectCache none;
  CHECK_FALSE(none.enabled());
  none.save("a.cpp", "one", {}, "OBJECT");
  std::string found;
  CHECK_FALSE(none.load("a.cpp", "one", found));
}

TEST_CASE("the identity of a compiler's files follows their content, wherever they lie",
          "[object_cache]") {
  ScratchDir dir;
  for (const char* checkout : {"/one", "/two"}) {
    fs::create_directories(dir.path + checkout);
    std::ofstream(dir.path + checkout + "/compiler") << "binary";
    std::ofstream(dir.path + checkout + "/pch.hpp") << "#include <mpi.h>";
  }
  const auto identity = [&](const std::string& checkout) {
    return contents_identity({dir.path + checkout + "/compiler", dir.path + checkout + "/pch.hpp"});
  };
  const std::string before = identity("/one");
  CHECK(before.find("compiler 6 ") == 0);
  CHECK(before.find("\npch.hpp 16 ") != std::string::npos);
  CHECK(identity("/two") == before);  // another checkout of the same files

  SECTION("a file rewritten with the same size") {
    std::ofstream(dir.path + "/one/pch.hpp") << "#include <mpi.x>";
    CHECK(identity("/one") != before);
  }
  SECTION("the compiler gone") {
    fs::remove(dir.path + "/one/compiler");
    CHECK(identity("/one").find("compiler missing\n") == 0);
  }
}
