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

// The regular files below `dir`, by name relative to it, in order.
std::vector<std::string> names_below(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : fs::recursive_directory_iterator(dir, error)) {
    if (entry.is_regular_file(error))
      names.push_back(fs::relative(entry.path(), dir, error).string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Splits `text` at `at` into a length-prefixed field ("<length>\n<bytes>"), advancing `at`.
bool take_field(const std::string& text, std::size_t& at, std::string& field) {
  const std::size_t newline = text.find('\n', at);
  if (newline == std::string::npos || newline == at || newline - at > 12) return false;
  const std::string digits = text.substr(at, newline - at);
  if (digits.find_first_not_of("0123456789") != std::string::npos) return false;
  const std::size_t length = std::stoull(digits);
  if (text.size() - (newline + 1) < length) return false;
  field = text.substr(newline + 1, length);
  at = newline + 1 + length;
  return true;
}

std::string field(const std::string& bytes) { return std::to_string(bytes.size()) + "\n" + bytes; }

}  // namespace

ObjectCache::ObjectCache(std::string dir, std::string compiler, std::string headers_dir,
                         std::uintmax_t max_bytes)
    : dir_(std::move(dir)),
      compiler_(std::move(compiler)),
      headers_dir_(std::move(headers_dir)),
      max_bytes_(max_bytes) {
  fs::create_directories(dir_);
  fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::replace);
  // Which headers exist is part of the key: a header added may change what an #include or a
  // __has_include finds, though no earlier compile read it.
  compiler_ += "headers:\n";
  for (const std::string& name : names_below(headers_dir_)) compiler_ += name + "\n";
}

std::string ObjectCache::key(const std::string& file, const std::string& source) const {
  return field(compiler_) + field(file) + field(source);
}

std::string ObjectCache::entry_path(const std::string& key) const {
  return dir_ + "/" + name_of(key);
}

std::string ObjectCache::headers_read(const std::vector<std::string>& names) const {
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string lines;
  for (const std::string& name : sorted) lines += content_line(name, headers_dir_ + "/" + name);
  return lines;
}

bool ObjectCache::load(const std::string& file, const std::string& source,
                       std::string& object) const {
  if (!enabled()) return false;
  const std::string wanted = key(file, source);
  std::ifstream entry(entry_path(wanted), std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(entry)), std::istreambuf_iterator<char>());
  // An entry: its key, the headers its compile read ("name size hash" lines), the object.
  std::size_t at = 0;
  std::string kept_key, kept_headers;
  if (!take_field(text, at, kept_key) || kept_key != wanted ||
      !take_field(text, at, kept_headers) || at == text.size()) {
    return false;  // none, another key's, or half-written
  }
  std::vector<std::string> names;
  for (std::size_t line = 0, end; (end = kept_headers.find('\n', line)) != std::string::npos;
       line = end + 1) {
    names.push_back(kept_headers.substr(line, kept_headers.find(' ', line) - line));
  }
  if (headers_read(names) != kept_headers) return false;  // a header it read has changed
  object = text.substr(at);
  utimensat(AT_FDCWD, entry_path(wanted).c_str(), nullptr, 0);  // used now: evicted last
  return true;
}

void ObjectCache::save(const std::string& file, const std::string& source,
                       const std::vector<std::string>& headers, const std::string& object) const {
  if (!enabled() || object.empty()) return;
  const std::string saved = key(file, source);
  const std::string path = entry_path(saved);
  const std::string temporary = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream entry(temporary, std::ios::binary | std::ios::trunc);
    entry << field(saved) << field(headers_read(headers)) << object;
    if (!entry.flush()) return;  // not kept: the next grading compiles it again
  }
  std::rename(temporary.c_str(), path.c_str());
  evict(dir_, max_bytes_);
}

std::string contents_identity(const std::vector<std::string>& files) {
  std::string identity;
  for (const std::string& path : files) {
    identity += content_line(fs::path(path).filename().string(), path);
  }
  return identity;
}

}  // namespace dtk::grade
