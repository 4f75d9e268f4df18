#pragma once
// Loading a GPU runtime or compiler library once per process (CUDA driver, HIP, NVRTC, hipRTC): take
// the opened library (the CUDA driver from its sonames, the others from platform/runtime_discovery),
// resolve its entry points into a table of symbols, build the object that wraps them. A failure is
// kept with its complete reason so every later call reports the same thing.
#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "platform/dynlib.hpp"

namespace sagejit {

// One entry point of a symbol table: the symbol's name (what errors name), optionally a newer
// symbol of the same signature that is used instead when the library exports it, and the address.
// A slot without a name is a call this library does not have; it stays null. An optional slot stays
// null when the library does not export it (a call of newer versions only; the caller checks bound()).
struct SymbolSlot {
  const char* name = nullptr;
  const char* newer = nullptr;
  void* address = nullptr;
  bool newer_bound = false;  // the address is `newer`'s
  bool optional = false;
  bool bound() const noexcept { return address != nullptr; }
};

template <typename Signature>
struct Symbol : SymbolSlot {
  constexpr Symbol(const char* symbol = nullptr, const char* newer_symbol = nullptr, bool optional_symbol = false)
      : SymbolSlot{symbol, newer_symbol, nullptr, false, optional_symbol} {}
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) const {
    return reinterpret_cast<Signature*>(address)(std::forward<Args>(args)...);
  }
};

// A symbol table is a struct of Symbol members whose slots() lists each of them; this holds when it
// lists every member exactly once (the table's static_assert).
template <typename Table>
consteval bool slots_list_every_member() {
  Table table;
  const auto slots = table.slots();
  for (std::size_t i = 0; i < slots.size(); ++i)
    for (std::size_t j = i + 1; j < slots.size(); ++j)
      if (slots[i] == slots[j]) return false;
  return sizeof(Table) == slots.size() * sizeof(SymbolSlot);
}

// `table` (names filled in) with the address of every named slot, in slots() order; throws
// Error(runtime_not_found) naming the library and the first (not optional) symbol it lacks.
template <typename Table>
Table bind_symbols(const DynamicLibrary& library, Table table) {
  for (SymbolSlot* slot : table.slots()) {
    if (slot->name == nullptr) continue;
    if (slot->optional) {
      slot->address = library.optional_symbol(slot->name);
      continue;
    }
    if (slot->newer != nullptr) slot->address = library.optional_symbol(slot->newer);
    slot->newer_bound = slot->address != nullptr;
    if (slot->address == nullptr) slot->address = library.symbol(slot->name);
  }
  return table;
}

template <typename Loaded>
struct LoadedLibrary {
  std::unique_ptr<Loaded> loaded;
  std::string error;  // why it did not load, when `loaded` is null

  // Throws Error(runtime_not_found) with the remembered reason when loading failed.
  Loaded& get() const {
    if (!loaded) throw Error(ErrorCode::runtime_not_found, error);
    return *loaded;
  }
};

// A library opened for a loader, or why there is none (every candidate tried and why each failed).
struct OpenedLibrary {
  std::optional<DynamicLibrary> library;
  std::string error;
};

// The first of `candidates` that loads and exports `required_symbol`; `what` names the library in
// the error: "the CUDA driver library".
inline OpenedLibrary open_first_candidate(const std::vector<std::string>& candidates, const char* required_symbol,
                                          std::string_view what) {
  std::vector<std::string> attempts;
  auto library = DynamicLibrary::open_first(candidates, attempts, required_symbol);
  if (!library) return {std::nullopt, fmt::format("{} could not be loaded; {}", what, describe_attempts(attempts))};
  return {std::move(library), {}};
}

// Binds `vendor.symbols` in `opened` (bind_symbols) and builds Loaded(library, vendor, bound table), an
// Interface; keeps the reason when opening, binding or building failed.
template <typename Interface, typename Loaded, typename Vendor>
LoadedLibrary<Interface> load_library(OpenedLibrary opened, const Vendor& vendor) {
  if (!opened.library) return {nullptr, std::move(opened.error)};
  try {
    const auto symbols = bind_symbols(*opened.library, vendor.symbols);
    return {std::make_unique<Loaded>(std::move(*opened.library), vendor, symbols), {}};
  } catch (const Error& error) {
    return {nullptr, error.what()};
  }
}

}  // namespace sagejit
