#include "cache/cache_key.hpp"

#include <xxhash.h>

#include <cstring>

#include <fmt/format.h>

namespace sagejit {
namespace {

// Each field is fed as tag, length, bytes, so no two different inputs can concatenate to the same
// stream ("ab"+"c" vs "a"+"bc").
class KeyHasher {
 public:
  KeyHasher() { XXH3_128bits_reset(&state_); }
  void field(std::string_view tag, std::string_view value) {
    feed(tag);
    feed(value);
  }
  CacheKey finish() {
    const XXH128_hash_t hash = XXH3_128bits_digest(&state_);
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, hash);
    CacheKey key;
    std::memcpy(key.bytes.data(), canonical.digest, key.bytes.size());
    return key;
  }

 private:
  void feed(std::string_view bytes) {
    const std::uint64_t length = bytes.size();
    unsigned char encoded[8];
    for (int i = 0; i < 8; ++i) encoded[i] = static_cast<unsigned char>(length >> (8 * i));
    XXH3_128bits_update(&state_, encoded, sizeof encoded);
    XXH3_128bits_update(&state_, bytes.data(), bytes.size());
  }
  XXH3_state_t state_;
};

}  // namespace

std::string CacheKey::hex() const {
  std::string out;
  out.reserve(32);
  for (const auto byte : bytes) out += fmt::format("{:02x}", byte);
  return out;
}

std::optional<CacheKey> CacheKey::from_hex(std::string_view hex) {
  if (hex.size() != 32) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  CacheKey key;
  for (std::size_t i = 0; i < 16; ++i) {
    const int high = nibble(hex[2 * i]), low = nibble(hex[2 * i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    key.bytes[i] = static_cast<std::uint8_t>(high * 16 + low);
  }
  return key;
}

std::size_t CacheKeyHash::operator()(const CacheKey& key) const noexcept {
  std::size_t value;
  std::memcpy(&value, key.bytes.data(), sizeof value);  // already uniformly distributed
  return value;
}

std::vector<std::string> normalise_options(const std::vector<std::string>& options) {
  std::vector<std::string> out;
  for (const auto& option : options) {
    std::string normal;
    bool pending_blank = false;
    for (const char c : option) {
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        pending_blank = !normal.empty();
        continue;
      }
      if (pending_blank) normal += ' ';
      pending_blank = false;
      normal += c;
    }
    if (!normal.empty()) out.push_back(std::move(normal));
  }
  return out;
}

CacheKey make_cache_key(const CacheKeyInputs& inputs) {
  KeyHasher hasher;
  hasher.field("format", std::to_string(inputs.format_version));
  hasher.field("source", inputs.source);
  for (const auto& option : normalise_options(inputs.options)) hasher.field("option", option);
  hasher.field("target", inputs.target);
  hasher.field("compiler", inputs.compiler_identity);
  hasher.field("runtime", inputs.runtime_version);
  for (const auto& [name, value] : inputs.environment) {
    hasher.field("env", name);
    hasher.field(value ? "set" : "unset", value.value_or(""));
  }
  return hasher.finish();
}

}  // namespace sagejit
