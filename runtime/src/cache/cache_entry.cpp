#include "cache/cache_entry.hpp"

#include <xxhash.h>

#include <cctype>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace sagejit {
namespace {

constexpr unsigned char magic[8] = {'S', 'J', 'C', 'O', '\r', '\n', 0x1a, '\n'};

void put_u32(std::byte* out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::byte>(value >> (8 * i));
}
void put_u64(std::byte* out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>(value >> (8 * i));
}
std::uint32_t get_u32(const std::byte* in) {
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= static_cast<std::uint32_t>(in[i]) << (8 * i);
  return value;
}
std::uint64_t get_u64(const std::byte* in) {
  std::uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= static_cast<std::uint64_t>(in[i]) << (8 * i);
  return value;
}

std::uint64_t header_checksum(std::span<const std::byte> fixed, std::span<const std::byte> metadata) {
  XXH64_state_t state;
  XXH64_reset(&state, 0);
  XXH64_update(&state, fixed.data(), 48);
  XXH64_update(&state, metadata.data(), metadata.size());
  return XXH64_digest(&state);
}

std::string readable(std::string_view text, std::size_t max_length) {
  std::string out;
  for (const char c : text.substr(0, max_length))
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_') ? c : '_';
  return out.empty() ? "none" : out;
}

}  // namespace

std::vector<std::byte> encode_entry(const CacheKey& key, const EntryLabel& label, std::span<const std::byte> payload,
                                    std::uint32_t format_version) {
  const std::string metadata = nlohmann::json{{"kernel", label.kernel},
                                              {"config", label.config},
                                              {"target", label.target},
                                              {"compiler", label.compiler},
                                              {"compile_ms", label.compile_ms},
                                              {"created", label.created_unix}}
                                   .dump();
  std::vector<std::byte> out(entry_header_size + metadata.size() + payload.size());
  std::memcpy(out.data(), magic, sizeof magic);
  put_u32(out.data() + 8, format_version);
  put_u32(out.data() + 12, static_cast<std::uint32_t>(metadata.size()));
  std::memcpy(out.data() + 16, key.bytes.data(), key.bytes.size());
  put_u64(out.data() + 32, payload.size());
  put_u64(out.data() + 40, XXH64(payload.data(), payload.size(), 0));
  std::memcpy(out.data() + entry_header_size, metadata.data(), metadata.size());
  const std::span<const std::byte> metadata_bytes(out.data() + entry_header_size, metadata.size());
  put_u64(out.data() + 48, header_checksum(out, metadata_bytes));
  if (!payload.empty()) std::memcpy(out.data() + entry_header_size + metadata.size(), payload.data(), payload.size());
  return out;
}

EntryCheck decode_entry(std::span<const std::byte> bytes, const std::optional<CacheKey>& expected) {
  auto bad = [](std::string problem) { return EntryCheck{std::nullopt, std::move(problem)}; };
  if (bytes.size() < entry_header_size)
    return bad(fmt::format("truncated: {} bytes, the header alone is {}", bytes.size(), entry_header_size));
  if (std::memcmp(bytes.data(), magic, sizeof magic) != 0) return bad("not a sagejit cache entry (bad magic)");
  const std::uint32_t version = get_u32(bytes.data() + 8);
  if (version != cache_format_version)
    return bad(fmt::format("format version {}, this build reads {}", version, cache_format_version));
  const std::uint64_t metadata_length = get_u32(bytes.data() + 12);
  const std::uint64_t payload_length = get_u64(bytes.data() + 32);
  const std::uint64_t body = bytes.size() - entry_header_size;
  if (metadata_length > body || payload_length != body - metadata_length)
    return bad(fmt::format("length mismatch: file has {} bytes after the header, header says {} + {}", body,
                           metadata_length, payload_length));
  const auto metadata = bytes.subspan(entry_header_size, metadata_length);
  if (header_checksum(bytes, metadata) != get_u64(bytes.data() + 48)) return bad("header checksum mismatch");
  const auto payload = bytes.subspan(entry_header_size + metadata_length);
  if (XXH64(payload.data(), payload.size(), 0) != get_u64(bytes.data() + 40)) return bad("payload checksum mismatch");

  DecodedEntry entry;
  std::memcpy(entry.key.bytes.data(), bytes.data() + 16, entry.key.bytes.size());
  if (expected && entry.key != *expected)
    return bad(fmt::format("holds key {}, expected {}", entry.key.hex(), expected->hex()));
  const auto json = nlohmann::json::parse(reinterpret_cast<const char*>(metadata.data()),
                                          reinterpret_cast<const char*>(metadata.data()) + metadata.size(), nullptr,
                                          /*allow_exceptions=*/false);
  if (!json.is_object()) return bad("metadata is not a JSON object");
  try {
    entry.label.kernel = json.value("kernel", "");
    entry.label.config = json.value("config", "");
    entry.label.target = json.value("target", "");
    entry.label.compiler = json.value("compiler", "");
    entry.label.compile_ms = json.value("compile_ms", 0.0);
    entry.label.created_unix = json.value("created", std::int64_t{0});
  } catch (const nlohmann::json::exception& e) {
    return bad(fmt::format("metadata field of the wrong type: {}", e.what()));
  }
  entry.payload.assign(payload.begin(), payload.end());
  return EntryCheck{std::move(entry), {}};
}

std::string entry_file_name(const CacheKey& key, const EntryLabel& label) {
  return fmt::format("{}-{}-{}-{}{}", readable(label.kernel, 48), readable(label.config, 96),
                     readable(label.target, 48), key.hex(), entry_suffix);
}

std::optional<CacheKey> key_of_entry_file_name(std::string_view file_name) {
  if (file_name.size() < 33 + entry_suffix.size() || !file_name.ends_with(entry_suffix)) return std::nullopt;
  file_name.remove_suffix(entry_suffix.size());
  if (file_name[file_name.size() - 33] != '-') return std::nullopt;
  return CacheKey::from_hex(file_name.substr(file_name.size() - 32));
}

}  // namespace sagejit
