#pragma once
// Loading a GPU runtime or compiler library once per process (CUDA driver, HIP, NVRTC, hipRTC): open
// the first candidate that loads, resolve its entry points, build the object that wraps them. A
// failure is kept with its complete reason so every later call reports the same thing.
#include <memory>
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

// Opens the first of `candidates` exporting `required_symbol`, resolves its functions with
// `resolve_functions(library)` (which throws Error naming a missing symbol) and builds
// Loaded(library, functions). `what` names the library in the error: "the NVRTC library".
template <typename Loaded, typename Resolve>
LoadedLibrary<Loaded> load_library(const std::vector<std::string>& candidates, const char* required_symbol,
                                   std::string_view what, Resolve resolve_functions) {
  std::vector<std::string> attempts;
  auto library = DynamicLibrary::open_first(candidates, attempts, required_symbol);
  if (!library) return {nullptr, fmt::format("{} could not be loaded; {}", what, describe_attempts(attempts))};
  try {
    const auto functions = resolve_functions(*library);
    return {std::make_unique<Loaded>(std::move(*library), functions), {}};
  } catch (const Error& error) {
    return {nullptr, error.what()};
  }
}

}  // namespace sagejit
