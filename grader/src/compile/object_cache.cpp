#include "compile/object_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace dtk::grade {

namespace fs = std::filesystem;

namespace {

std::uint64_t fnv1a(const std::string& bytes) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

// An entry's file name: a hash of its key. Two keys may share a name; the key kept inside the
// entry decides.
std::string name_of(const std::string& key) {
  char name[32];
  std::snprintf(name, sizeof name, "%016" PRIx64 ".o", fnv1a(key));
  return name;
}

// Removes the entries used longest ago until those left take at most `max_bytes`.
void evict(const std::string& dir, std::uintmax_t max_bytes) {
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  std::uintmax_t total = 0;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (entry.path().extension() != ".o" || !entry.is_regular_file(error)) continue;
    total += entry.file_size(error);
    entries.emplace_back(entry.last_write_time(error), entry.path());
  }
  std::sort(entries.begin(), entries.end());
  for (const auto& [when, path] : entries) {
    if (total <= max_bytes) break;
    total -= std::min(total, fs::file_size(path, error));
    fs::remove(path, error);
  }
}

// "name size hash" of a file's content.
std::string content_line(const std::string& name, const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return name + " missing\n";
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  char hash[24];
  std::snprintf(hash, sizeof hash, "%016" PRIx64, fnv1a(bytes));
  return name + " " + std::to_string(bytes.size()) + " " + hash + "\n";
}

}  // namespace

ObjectCache::ObjectCache(std::string dir, std::string compiler, std::uintmax_t max_bytes)
    : dir_(std::move(dir)), compiler_(std::move(compiler)), max_bytes_(max_bytes) {
  fs::create_directories(dir_);
  fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::replace);
}

std::string ObjectCache::key(const std::string& file, const std::string& source) const {
  // Lengths first: no two different triples make the same text.
  return std::to_string(compiler_.size()) + " " + std::to_string(file.size()) + " " +
         std::to_string(source.size()) + "\n" + compiler_ + file + source;
}

std::string ObjectCache::entry_path(const std::string& key) const {
  return dir_ + "/" + name_of(key);
}

bool ObjectCache::load(const std::string& file, const std::string& source,
                       std::string& object) const {
  if (!enabled()) return false;
  const std::string wanted = key(file, source);
  std::ifstream entry(entry_path(wanted), std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(entry)), std::istreambuf_iterator<char>());
  // An entry is its key's length, a newline, the key, then the object.
  const std::size_t newline = text.find('\n');
  if (newline == std::string::npos || text.substr(0, newline) != std::to_string(wanted.size()) ||
      text.compare(newline + 1, wanted.size(), wanted) != 0 ||
      text.size() == newline + 1 + wanted.size()) {
    return false;  // none, another key's, or half-written
  }
  object = text.substr(newline + 1 + wanted.size());
  utimensat(AT_FDCWD, entry_path(wanted).c_str(), nullptr, 0);  // used now: evicted last
  return true;
}

void ObjectCache::save(const std::string& file, const std::string& source,
                       const std::string& object) const {
  if (!enabled() || object.empty()) return;
  const std::string saved = key(file, source);
  const std::string path = entry_path(saved);
  const std::string temporary = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream entry(temporary, std::ios::binary | std::ios::trunc);
    entry << saved.size() << '\n' << saved << object;
    if (!entry.flush()) return;  // not kept: the next grading compiles it again
  }
  std::rename(temporary.c_str(), path.c_str());
  evict(dir_, max_bytes_);
}

std::string contents_identity(const std::vector<std::string>& paths) {
  std::string identity;
  for (const std::string& path : paths) {
    std::error_code error;
    if (!fs::is_directory(path, error)) {
      identity += content_line(fs::path(path).filename().string(), path);
      continue;
    }
    std::vector<std::string> below;
    for (const auto& entry : fs::recursive_directory_iterator(path, error)) {
      if (entry.is_regular_file(error))
        below.push_back(fs::relative(entry.path(), path, error).string());
    }
    std::sort(below.begin(), below.end());
    identity += fs::path(path).filename().string() + "/\n";
    for (const std::string& file : below) identity += content_line(file, path + "/" + file);
  }
  return identity;
}

}  // namespace dtk::grade
