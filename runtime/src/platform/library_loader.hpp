#pragma once
// Loading a GPU runtime or compiler library once per process (CUDA driver, HIP, NVRTC, hipRTC): take
// the opened library (the CUDA driver from its sonames, the others from platform/runtime_discovery),
// resolve its entry points, build the object that wraps them. A failure is kept with its complete
// reason so every later call reports the same thing.
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

// Resolves the functions of `opened` with `resolve_functions(library)` (which throws Error naming a
// missing symbol) and builds Loaded(library, functions); keeps the reason when either step failed.
template <typename Loaded, typename Resolve>
LoadedLibrary<Loaded> load_library(OpenedLibrary opened, Resolve resolve_functions) {
  if (!opened.library) return {nullptr, std::move(opened.error)};
  try {
    const auto functions = resolve_functions(*opened.library);
    return {std::make_unique<Loaded>(std::move(*opened.library), functions), {}};
  } catch (const Error& error) {
    return {nullptr, error.what()};
  }
}

}  // namespace sagejit
