#include "support/code_object_stats.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace sagejit::tools {

namespace {

constexpr std::uint32_t sht_note = 7;
constexpr std::uint32_t nt_amdgpu_metadata = 32;
// .nv.info attribute encoding: one format byte, one attribute byte, then a payload by format.
constexpr std::uint8_t eifmt_nval = 0x01, eifmt_bval = 0x02, eifmt_hval = 0x03, eifmt_sval = 0x04;
constexpr std::uint8_t eiattr_frame_size = 0x11, eiattr_regcount = 0x2f;

struct Reader {
  std::span<const std::byte> bytes;
  bool in_bounds(std::uint64_t offset, std::uint64_t size) const {
    return offset <= bytes.size() && size <= bytes.size() - offset;
  }
  template <typename T>
  T get(std::uint64_t offset) const {  // caller checked bounds; ELF here is little-endian like the host
    T value;
    std::memcpy(&value, bytes.data() + offset, sizeof(T));
    return value;
  }
};

struct Section {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t offset = 0, size = 0;
};

void keep_max(std::optional<std::uint64_t>& slot, std::uint64_t value) {
  slot = slot ? std::max(*slot, value) : value;
}

void read_amdgpu_notes(const Reader& elf, const Section& section, CodeObjectStats& stats) {
  std::uint64_t at = section.offset;
  const std::uint64_t end = section.offset + section.size;
  while (at + 12 <= end) {
    const auto name_size = elf.get<std::uint32_t>(at), desc_size = elf.get<std::uint32_t>(at + 4),
               type = elf.get<std::uint32_t>(at + 8);
    const std::uint64_t name_at = at + 12, desc_at = name_at + ((name_size + 3u) & ~3u);
    const std::uint64_t next = desc_at + ((desc_size + 3ull) & ~3ull);
    if (!elf.in_bounds(name_at, name_size) || !elf.in_bounds(desc_at, desc_size) || next > end) return;
    const std::string_view name(reinterpret_cast<const char*>(elf.bytes.data() + name_at), name_size);
    if (type == nt_amdgpu_metadata && name.substr(0, 6) == "AMDGPU") {
      const auto* first = reinterpret_cast<const std::uint8_t*>(elf.bytes.data() + desc_at);
      const nlohmann::json metadata = nlohmann::json::from_msgpack(first, first + desc_size, true, false);
      if (metadata.is_discarded() || !metadata.contains("amdhsa.kernels")) return;
      for (const auto& kernel : metadata["amdhsa.kernels"]) {
        const auto number = [&](const char* key) -> std::optional<std::uint64_t> {
          if (!kernel.contains(key) || !kernel[key].is_number_integer()) return std::nullopt;
          return kernel[key].get<std::uint64_t>();
        };
        ++stats.kernels;
        if (auto v = number(".vgpr_count")) keep_max(stats.registers, *v);
        if (auto v = number(".sgpr_count")) keep_max(stats.scalar_registers, *v);
        if (auto v = number(".group_segment_fixed_size")) keep_max(stats.static_shared, *v);
        if (auto v = number(".private_segment_fixed_size")) keep_max(stats.scratch, *v);
        const auto vgpr_spills = number(".vgpr_spill_count"), sgpr_spills = number(".sgpr_spill_count");
        if (vgpr_spills || sgpr_spills) keep_max(stats.spills, vgpr_spills.value_or(0) + sgpr_spills.value_or(0));
      }
    }
    at = next;
  }
}

void read_nv_info(const Reader& elf, const Section& section, CodeObjectStats& stats, std::size_t& register_entries) {
  std::uint64_t at = section.offset;
  const std::uint64_t end = section.offset + section.size;
  while (at + 2 <= end) {
    const auto format = elf.get<std::uint8_t>(at), attribute = elf.get<std::uint8_t>(at + 1);
    at += 2;
    switch (format) {
      case eifmt_nval: break;
      case eifmt_bval: at += 1; break;
      case eifmt_hval: at += 2; break;
      case eifmt_sval: {
        if (at + 2 > end) return;
        const auto size = elf.get<std::uint16_t>(at);
        at += 2;
        if (at + size > end) return;
        // Per-function attributes: u32 symbol index, u32 value.
        if (size == 8 && attribute == eiattr_regcount) {
          keep_max(stats.registers, elf.get<std::uint32_t>(at + 4));
          ++register_entries;
        } else if (size == 8 && attribute == eiattr_frame_size) {
          keep_max(stats.scratch, elf.get<std::uint32_t>(at + 4));
        }
        at += size;
        break;
      }
      default: return;  // an encoding we do not know: stop rather than misread the rest
    }
  }
}

}  // namespace

CodeObjectStats read_code_object_stats(std::span<const std::byte> bytes) {
  CodeObjectStats stats;
  const Reader elf{bytes};
  if (bytes.size() < 64 || std::memcmp(bytes.data(), "\x7f" "ELF", 4) != 0) {
    stats.problem = "not an ELF file";
    return stats;
  }
  if (elf.get<std::uint8_t>(4) != 2 || elf.get<std::uint8_t>(5) != 1) {
    stats.problem = "not a little-endian 64-bit ELF";
    return stats;
  }
  stats.machine = elf.get<std::uint16_t>(18);
  const auto section_offset = elf.get<std::uint64_t>(0x28);
  const auto entry_size = elf.get<std::uint16_t>(0x3a), count = elf.get<std::uint16_t>(0x3c),
             names_index = elf.get<std::uint16_t>(0x3e);
  if (entry_size < 64 || !elf.in_bounds(section_offset, std::uint64_t{entry_size} * count) || names_index >= count) {
    stats.problem = "section header table out of bounds";
    return stats;
  }
  std::vector<Section> sections(count);
  for (std::uint16_t i = 0; i < count; ++i) {
    const std::uint64_t header = section_offset + std::uint64_t{i} * entry_size;
    sections[i].type = elf.get<std::uint32_t>(header + 4);
    sections[i].offset = elf.get<std::uint64_t>(header + 24);
    sections[i].size = elf.get<std::uint64_t>(header + 32);
    sections[i].name = std::to_string(elf.get<std::uint32_t>(header));  // resolved below
  }
  const Section names = sections[names_index];
  if (!elf.in_bounds(names.offset, names.size)) {
    stats.problem = "section name table out of bounds";
    return stats;
  }
  for (Section& section : sections) {
    const std::uint64_t name_at = std::stoull(section.name);
    section.name.clear();
    for (std::uint64_t at = names.offset + name_at; at < names.offset + names.size; ++at) {
      const char c = static_cast<char>(elf.get<std::uint8_t>(at));
      if (c == '\0') break;
      section.name += c;
    }
  }
  stats.elf = true;
  constexpr std::uint32_t sht_nobits = 8;
  std::size_t register_entries = 0;
  for (const Section& section : sections) {
    const bool has_bytes = section.type != sht_nobits;
    if (has_bytes && !elf.in_bounds(section.offset, section.size)) continue;
    if (stats.machine == elf_machine_amdgpu && section.type == sht_note) {
      read_amdgpu_notes(elf, section, stats);
    } else if (stats.machine == elf_machine_cuda) {
      if (section.name == ".nv.info" || section.name.rfind(".nv.info.", 0) == 0)
        read_nv_info(elf, section, stats, register_entries);
      else if (section.name.rfind(".nv.shared.", 0) == 0 && section.name != ".nv.shared.reserved.0")
        keep_max(stats.static_shared, section.size);
    }
  }
  if (stats.machine == elf_machine_cuda) {
    stats.kernels = register_entries;
    // A kernel with no .nv.shared.<name> section uses no static shared memory: 0 is read, not guessed,
    // once the register attributes proved the .nv.info tables were understood.
    if (register_entries > 0 && !stats.static_shared) stats.static_shared = 0;
  }
  return stats;
}

std::string figure(const std::optional<std::uint64_t>& value) { return value ? std::to_string(*value) : "n/a"; }

}  // namespace sagejit::tools
