// What a sandboxed command sees: on a made-up file system, the directories paths_to_hide covers.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sandbox/sandbox_view.hpp"

using namespace dtk::grade;
namespace fs = std::filesystem;

namespace {

// A root with system directories, two checkouts of the kit, a home and a class, the grader's
// scratch under work/kit/build, and a file at the top.
struct FakeRoot {
  std::string root;
  FakeRoot() {
    char path[] = "/tmp/dtk-view-test.XXXXXX";
    REQUIRE(mkdtemp(path) != nullptr);
    root = path;
    for (const char* dir :
         {"usr/bin", "usr/include/xtensor", "etc", "tmp/other", "home/ta/handins/alice",
          "work/kit/solutions", "work/kit/build/grader", "work/kit/build/scratch/run",
          "work/old-kit/solutions", "opt/gcc/bin", "opt/other"}) {
      fs::create_directories(root + "/" + dir);
    }
    std::ofstream(root + "/notes.txt") << "a file\n";
    fs::create_directory_symlink(root + "/work/old-kit", root + "/work/link-to-old-kit");
  }
  ~FakeRoot() { fs::remove_all(root); }
  std::vector<std::string> hide(const std::vector<std::string>& needed,
                                const std::vector<std::string>& private_paths = {}) const {
    std::vector<std::string> in_root;
    for (const std::string& path : needed) in_root.push_back(root + "/" + path);
    std::vector<std::string> private_in_root;
    for (const std::string& path : private_paths) private_in_root.push_back(root + "/" + path);
    std::vector<std::string> hidden;
    for (const std::string& path :
         paths_to_hide(in_root, private_in_root, root, {"usr", "etc", "tmp"})) {
      hidden.push_back(path.substr(root.size() + 1));
    }
    return hidden;
  }
};

}  // namespace

TEST_CASE("everything but the system and the way to the scratch is covered", "[view]") {
  const FakeRoot fake;
  CHECK(fake.hide({"work/kit/build/scratch"}) ==
        std::vector<std::string>{"home", "opt", "work/kit/build/grader", "work/kit/solutions",
                                 "work/old-kit"});
}

TEST_CASE("a needed path outside the system keeps its way visible, not its neighbours", "[view]") {
  const FakeRoot fake;
  CHECK(fake.hide({"tmp/other", "opt/gcc", "usr/include/xtensor"}) ==
        std::vector<std::string>{"home", "opt/other", "work"});
}

TEST_CASE("private paths are covered wherever they are, unless the scratch is inside", "[view]") {
  const FakeRoot fake;
  // Under a system directory: covered by name; under a covered one: already covered.
  CHECK(fake.hide({"work/kit/build/scratch"}, {"tmp/other", "home/ta/handins"}) ==
        std::vector<std::string>{"home", "opt", "work/kit/build/grader", "work/kit/solutions",
                                 "work/old-kit", "tmp/other"});
  // The scratch inside a private path: that one cannot be covered.
  CHECK(fake.hide({"tmp/other/scratch"}, {"tmp/other"}) ==
        std::vector<std::string>{"home", "opt", "work"});
}
