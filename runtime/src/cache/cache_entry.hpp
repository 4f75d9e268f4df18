#pragma once
// The on-disk format of one cache entry (*.sjco): a fixed header, a small JSON metadata block, then
// the code object. Everything is validated on every read (docs/CACHE.md), because a torn,
// truncated, stale-format or foreign file must be rebuilt, never loaded.
//
//   offset  size  field (little-endian)
//        0     8  magic "SJCO\r\n\x1a\n" (detects text-mode mangling and truncation at byte 0)
//        8     4  format version (cache_format_version)
//       12     4  metadata length M
//       16    16  cache key
//       32     8  payload length P
//       40     8  XXH64 of the payload
//       48     8  XXH64 of bytes [0, 48) followed by the metadata
//       56     M  metadata: JSON (kernel, config, target, compiler, compile_ms, created)
//     56+M     P  payload: the code object
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/cache_key.hpp"

namespace sagejit {

// What a cache entry was built from, for `sagejit-cache list` and the entry's file name.
struct EntryLabel {
  std::string kernel;    // "attention_sm80"
  std::string config;    // config id, "block_n=64,warps=4"
  std::string target;    // "sm_90", "gfx1201:xnack-"
  std::string compiler;  // compiler identity
  double compile_ms = 0;
  std::int64_t created_unix = 0;  // seconds since the epoch
};

inline constexpr std::size_t entry_header_size = 56;
inline constexpr std::string_view entry_suffix = ".sjco";

std::vector<std::byte> encode_entry(const CacheKey& key, const EntryLabel& label,
                                    std::span<const std::byte> payload,
                                    std::uint32_t format_version = cache_format_version);

struct DecodedEntry {
  CacheKey key;
  EntryLabel label;
  std::vector<std::byte> payload;
};

struct EntryCheck {
  std::optional<DecodedEntry> entry;  // set when the bytes are a valid entry
  std::string problem;                // otherwise why not: "bad magic", "payload checksum mismatch", ...
};

// Validates everything; when `expected` is given the stored key must equal it.
EntryCheck decode_entry(std::span<const std::byte> bytes, const std::optional<CacheKey>& expected = std::nullopt);

// "<kernel>-<config>-<target>-<key hex>.sjco" with every character outside [A-Za-z0-9._] of the
// readable part replaced by '_' (so a label can never form a path), e.g.
// "jit_probe-block_128_scale_2-sm_90-0f3c....sjco".
std::string entry_file_name(const CacheKey& key, const EntryLabel& label);
// The key hex of an entry file name, or nullopt when the name is not one.
std::optional<CacheKey> key_of_entry_file_name(std::string_view file_name);

}  // namespace sagejit
