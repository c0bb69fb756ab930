#include "launch_file.hpp"

#include <sstream>

#include "keys.hpp"

namespace dtk::grade {

std::string LaunchFile::text() const {
  std::string text = "record " + record_key + "\n";
  if (seed) text += "seed " + std::to_string(*seed) + "\n";
  for (const auto& [own, shared] : test_keys)
    text += "test " + key_hex(own) + " " + key_hex(shared) + "\n";
  return text;
}

bool LaunchFile::parse(const std::string& text, LaunchFile& file) {
  file = LaunchFile{};
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string kind, first, second, rest;
    words >> kind >> first;
    if (kind == "record" && first.size() == 32 && !(words >> rest)) {
      file.record_key = first;
    } else if (kind == "seed" && !first.empty() && !(words >> rest)) {
      std::size_t used = 0;
      try {
        file.seed = std::stoull(first, &used);
      } catch (const std::exception&) {
        return false;
      }
      if (used != first.size()) return false;
    } else if (kind == "test" && (words >> second) && !(words >> rest)) {
      std::uint64_t own = 0, shared = 0;
      if (!parse_key_hex(first, own) || !parse_key_hex(second, shared)) return false;
      file.test_keys.emplace_back(own, shared);
    } else {
      return false;
    }
  }
  return file.record_key.size() == 32;
}

LaunchFile launch_file_for(int rank, const std::vector<std::string>& test_ids, std::uint64_t seed,
                           bool judging) {
  LaunchFile file;
  file.record_key = random_key_hex();
  if (judging) file.seed = seed;
  for (const std::string& id : test_ids)
    file.test_keys.emplace_back(input_key(seed, id, rank), shared_key(seed, id));
  return file;
}

std::string launch_file_path(const std::string& out_dir, int rank) {
  return out_dir + "/rank" + std::to_string(rank) + ".key";
}

std::string rank_records_path(const std::string& out_dir, int rank) {
  return out_dir + "/rank" + std::to_string(rank) + ".out";
}

}  // namespace dtk::grade
