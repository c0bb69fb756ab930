// The compiled objects a grading keeps for the next (object_cache.hpp): found again only for the
// same file, source and compiler, never through a hash alone, never half-written; and the
// compiler's identity changes when a file it reads does.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
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
  const std::string object(
      "\x7f"
      "ELF\0object bytes",
      17);
  ObjectCache(dir.path + "/objects", "g++ -O0").save("zero/zero.cpp", "int f();", object);
  CHECK((fs::status(dir.path + "/objects").permissions() & fs::perms::all) == fs::perms::owner_all);

  std::string found;
  REQUIRE(ObjectCache(dir.path + "/objects", "g++ -O0").load("zero/zero.cpp", "int f();", found));
  CHECK(found == object);
  // Anything else in the key: not found.
  CHECK_FALSE(
      ObjectCache(dir.path + "/objects", "g++ -O2").load("zero/zero.cpp", "int f();", found));
  CHECK_FALSE(ObjectCache(dir.path + "/objects", "g++ -O0")
                  .load("pipeline/pipeline.cpp", "int f();", found));
  CHECK_FALSE(
      ObjectCache(dir.path + "/objects", "g++ -O0").load("zero/zero.cpp", "int f(); ", found));
}

TEST_CASE("an entry found under another key's name, cut short or empty is not used",
          "[object_cache]") {
  ScratchDir dir;
  const ObjectCache cache(dir.path, "g++");
  cache.save("a.cpp", "one", "OBJECT");
  const std::string entry = only_entry(dir.path);
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
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << text.substr(0, text.size() - 8);
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
  // Each entry takes 24 bytes: the bound holds two.
  const ObjectCache cache(dir.path, "g++", 70);
  const auto age = [&](const std::string& source, int seconds) {
    std::string found;
    REQUIRE(cache.load("a.cpp", source, found));  // found, and so used now
    for (const auto& entry : fs::directory_iterator(dir.path)) {
      std::ifstream file(entry.path(), std::ios::binary);
      const std::string content((std::istreambuf_iterator<char>(file)), {});
      if (content.find(source + "OBJ") != std::string::npos) {
        fs::last_write_time(entry.path(),
                            fs::last_write_time(entry.path()) - std::chrono::seconds(seconds));
      }
    }
  };
  cache.save("a.cpp", "one", "OBJ1");
  cache.save("a.cpp", "two", "OBJ2");
  age("one", 100);
  age("two", 200);  // "two" used longest ago
  cache.save("a.cpp", "six", "OBJ6");
  std::string found;
  CHECK(cache.load("a.cpp", "one", found));
  CHECK_FALSE(cache.load("a.cpp", "two", found));
  CHECK(cache.load("a.cpp", "six", found));
}

TEST_CASE("no directory: nothing is kept or found", "[object_cache]") {
  const ObjectCache none;
  CHECK_FALSE(none.enabled());
  none.save("a.cpp", "one", "OBJECT");
  std::string found;
  CHECK_FALSE(none.load("a.cpp", "one", found));
}

TEST_CASE("the identity of a compiler's files changes with any file below a directory",
          "[object_cache]") {
  ScratchDir dir;
  fs::create_directories(dir.path + "/include/dtk");
  std::ofstream(dir.path + "/include/dtk/a.hpp") << "int a();";
  std::ofstream(dir.path + "/compiler") << "binary";
  const std::vector<std::string> read = {dir.path + "/compiler", dir.path + "/include"};
  const std::string before = files_identity(read);
  CHECK(before.find(dir.path + "/include/dtk/a.hpp 8 ") != std::string::npos);
  CHECK(files_identity(read) == before);

  SECTION("a header rewritten with the same size") {
    const timespec later[2] = {{0, UTIME_OMIT}, {1, 0}};
    std::ofstream(dir.path + "/include/dtk/a.hpp") << "int b();";
    utimensat(AT_FDCWD, (dir.path + "/include/dtk/a.hpp").c_str(), later, 0);
    CHECK(files_identity(read) != before);
  }
  SECTION("a header added") {
    std::ofstream(dir.path + "/include/dtk/b.hpp") << "";
    CHECK(files_identity(read) != before);
  }
  SECTION("the compiler gone") {
    fs::remove(dir.path + "/compiler");
    CHECK(files_identity(read).find(dir.path + "/compiler missing") != std::string::npos);
  }
}
