#pragma once
// Helpers shared by the cache tests: private temp dirs, random payloads, stderr capture.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "random_support.hpp"
#include "cache/cache_entry.hpp"
#include "cache/cache_key.hpp"
#include "cache/code_cache.hpp"
#include "core/log.hpp"

namespace sagejit::test {

// A fresh private directory, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "sagejit-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ignored);
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// The library's log off for one test case (its cases provoke warnings on purpose), back to warn after.
struct QuietLog {
  QuietLog() { log::set_level(log::Level::off); }
  ~QuietLog() { log::set_level(log::Level::warn); }
  QuietLog(const QuietLog&) = delete;
  QuietLog& operator=(const QuietLog&) = delete;
};

// `path` created with its parents, then given `mode` (what a trusted or an untrusted directory needs).
inline std::filesystem::path make_dir(const std::filesystem::path& path, mode_t mode) {
  std::filesystem::create_directories(path);
  ::chmod(path.c_str(), mode);
  return path;
}

// Per thread, from the run's logged (replayable) seed.
inline std::mt19937_64& rng() { return thread_rng(); }

inline std::vector<std::byte> random_bytes(std::size_t size) {
  std::vector<std::byte> bytes(size);
  for (auto& byte : bytes) byte = static_cast<std::byte>(rng()() & 0xff);
  return bytes;
}

// Random bytes under the header of a 64-bit little-endian AMDGPU ELF: a payload that passes the
// code-object check (compiler/code_object_check.hpp) for test_label()'s target.
inline std::vector<std::byte> code_object_bytes(std::size_t size) {
  std::vector<std::byte> bytes = random_bytes(size < 64 ? 64 : size);
  const unsigned char header[20] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 224, 0};
  for (std::size_t i = 0; i < sizeof header; ++i) bytes[i] = static_cast<std::byte>(header[i]);
  return bytes;
}

inline std::string random_text(std::size_t size) {
  std::string text;
  for (std::size_t i = 0; i < size; ++i) text += static_cast<char>('a' + rng()() % 26);
  return text;
}

inline CacheKey random_key() {
  CacheKeyInputs inputs;
  inputs.source = random_text(64);
  inputs.target = "sm_90";
  return make_cache_key(inputs);
}

inline EntryLabel test_label(const std::string& kernel = "probe") {
  EntryLabel label;
  label.kernel = kernel;
  label.config = "block=128,scale=3";
  label.target = "gfx1201:xnack-";
  label.compiler = "fake 1.0";
  return label;
}

// A compile callback for get_or_compile that returns `payload` and counts its calls in `calls`, so a
// test can tell a cache hit (no call) from a rebuild.
inline std::function<std::vector<std::byte>()> counting_compile(int& calls, std::vector<std::byte> payload) {
  return [&calls, payload = std::move(payload)] {
    ++calls;
    return payload;
  };
}

// One entry's worth of test state: a random key, the test label, and a compile callback that returns
// `compiled` (random bytes) and counts its calls in `compiles`. Not copyable: `compile` refers to
// `compiles`.
struct CompiledEntry {
  explicit CompiledEntry(std::size_t payload_bytes) : compiled(random_bytes(payload_bytes)) {}
  CompiledEntry(const CompiledEntry&) = delete;
  CompiledEntry& operator=(const CompiledEntry&) = delete;

  const CacheKey key = random_key();
  const EntryLabel label = test_label();
  const std::vector<std::byte> compiled;
  int compiles = 0;
  const std::function<std::vector<std::byte>()> compile = counting_compile(compiles, compiled);
};

inline CodeCacheSettings settings_for(const std::filesystem::path& user_dir) {
  CodeCacheSettings settings;
  settings.user_dir = user_dir;
  settings.max_bytes = 0;
  return settings;
}

inline std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  for (std::size_t i = 0; i < chars.size(); ++i) bytes[i] = static_cast<std::byte>(chars[i]);
  return bytes;
}

inline void write_bytes(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Redirects stderr (where sagejit logs) into a file for the lifetime of the object.
class StderrCapture {
 public:
  explicit StderrCapture(const std::filesystem::path& file) : file_(file) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~StderrCapture() { restore(); }
  // Restores stderr and returns what was written.
  std::string finish() {
    restore();
    std::ifstream in(file_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::filesystem::path file_;
  int saved_ = -1;
};

inline std::size_t count_occurrences(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

inline std::vector<std::filesystem::path> entry_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& item : std::filesystem::directory_iterator(dir))
    if (item.path().extension() == ".sjco") files.push_back(item.path());
  return files;
}

}  // namespace sagejit::test
