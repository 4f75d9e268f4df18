#include "platform/runtime_discovery.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <mutex>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "platform/trusted_dir.hpp"

namespace sagejit {
namespace {

// What identifies one library and where its files are called what.
struct LibrarySpec {
  std::string_view display;             // "the HIP runtime library", in messages
  const char* explicit_variable;        // rule (b)
  const char* required_symbol;          // a file without it is not this library
  std::vector<std::string> file_names;  // newest first: tried in each directory of (c)/(d) and as sonames (e)
  const ToolkitLayout* toolkit;         // rule (d)
  bool one_per_process;                 // a loaded but unusable one is refused, never joined by a second
};

const LibrarySpec& spec_of(RuntimeLibrary which) {
  // torch's ROCm wheels carry the unversioned file names, hence "libamdhip64.so" last.
  static const LibrarySpec hip{"the HIP runtime library", "SAGEJIT_HIP_LIBRARY", "hipInit",
                               {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"},
                               &kRocmLayout, true};
  // ROCm >= 6: hipRTC is its own library. ROCm 5 (e.g. Debian 12): its symbols are in libamdhip64.
  static const LibrarySpec hiprtc{
      "the hipRTC library", "SAGEJIT_HIPRTC_LIBRARY", "hiprtcCreateProgram",
      {"libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so", "libamdhip64.so.5", "libamdhip64.so"}, &kRocmLayout, false};
  static const LibrarySpec nvrtc{"the NVRTC library", "SAGEJIT_NVRTC_LIBRARY", "nvrtcGetCUBIN",
                                 {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, &kCudaLayout, false};
  switch (which) {
    case RuntimeLibrary::hip_runtime: return hip;
    case RuntimeLibrary::hiprtc: return hiprtc;
    case RuntimeLibrary::nvrtc: return nvrtc;
  }
  return nvrtc;
}

// "libamdhip64.so.6.4.60401" is a libamdhip64.so.6; "libnvrtc-builtins.so.13" is no libnvrtc.so.
bool file_is(std::string_view file, std::string_view name) {
  return file == name || (file.size() > name.size() && file.substr(0, name.size()) == name && file[name.size()] == '.');
}

bool file_exists(const std::string& path) {
  std::error_code error;
  return std::filesystem::exists(path, error);
}

// One run of the rule for one library; collects every attempt for the message when nothing is found.
class Search {
 public:
  Search(RuntimeLibrary which, const DiscoveryInputs& inputs) : which_(which), spec_(spec_of(which)), inputs_(inputs) {}

  DiscoveredLibrary run(const DiscoveredLibrary* hip_runtime) {
    if (which_ == RuntimeLibrary::hiprtc && hip_runtime != nullptr && hip_runtime->library)
      return from_rocm_of(*hip_runtime);
    if (which_ == RuntimeLibrary::hiprtc && hip_runtime != nullptr && hip_runtime->refused)
      return refused(fmt::format("{} is not loaded because the HIP runtime was refused, and hipRTC must come from "
                                 "the HIP runtime's ROCm (never from another one by directory or soname): {}",
                                 spec_.display, hip_runtime->error));
    if (auto chosen = already_loaded()) return std::move(*chosen);
    if (auto chosen = explicit_file()) return std::move(*chosen);
    if (auto chosen = in_directories(inputs_.handed_over, DiscoveryRule::handed_over)) return std::move(*chosen);
    if (auto chosen = in_directories(inputs_.toolkit, DiscoveryRule::toolkit_root)) return std::move(*chosen);
    if (inputs_.search_sonames)
      if (auto chosen = by_soname()) return std::move(*chosen);
    return not_found();
  }

 private:
  static DiscoveredLibrary found(DynamicLibrary library, DiscoveryRule rule, std::string origin) {
    DiscoveredLibrary chosen;
    chosen.library = std::move(library);
    chosen.rule = rule;
    chosen.origin = std::move(origin);
    return chosen;
  }

  static DiscoveredLibrary refused(std::string error) {
    DiscoveredLibrary none;
    none.error = std::move(error);
    none.refused = true;
    return none;
  }

  DiscoveredLibrary not_found() const {
    DiscoveredLibrary none;
    none.error = fmt::format("{} could not be loaded; {}", spec_.display, describe_attempts(attempts_));
    return none;
  }

  // (a) The first loaded file of the newest name that exports the required symbol.
  std::optional<DiscoveredLibrary> already_loaded() {
    const std::vector<std::string> loaded = loaded_library_paths();
    std::vector<std::string> unusable;
    for (const std::string& name : spec_.file_names) {
      for (const std::string& path : loaded) {
        if (!file_is(std::filesystem::path(path).filename().string(), name)) continue;
        auto library = DynamicLibrary::open_loaded(path);
        if (!library) continue;  // unloaded since the scan
        if (library->optional_symbol(spec_.required_symbol) == nullptr) {
          attempts_.push_back(fmt::format("{} (already loaded, but has no symbol {})", path, spec_.required_symbol));
          unusable.push_back(path);
          continue;
        }
        warn_if_explicit_file_differs(*library);
        return found(std::move(*library), DiscoveryRule::already_loaded, "");
      }
    }
    if (spec_.one_per_process && !unusable.empty())
      return refused(fmt::format(
          "{} {} is already loaded in this process but has no symbol {}; sagejit does not load a second one into "
          "the same process (two HIP runtimes in one process are a known crash source). Use sagejit in a process "
          "whose HIP runtime is a complete one",
          spec_.display, unusable.front(), spec_.required_symbol));
    return std::nullopt;
  }

  void warn_if_explicit_file_differs(const DynamicLibrary& loaded) const {
    if (!inputs_.explicit_path) return;
    std::error_code error;
    const auto named = std::filesystem::canonical(*inputs_.explicit_path, error);
    if (error || named.string() != loaded.path())
      log::warn("{}={} is not used: this process has already loaded {} from {}, which sagejit uses instead of "
                "loading a second one",
                spec_.explicit_variable, *inputs_.explicit_path, spec_.display, loaded.path());
  }

  // (b) The named file, or an error: what the user named is not silently replaced.
  std::optional<DiscoveredLibrary> explicit_file() {
    if (!inputs_.explicit_path) return std::nullopt;
    const std::string& named = *inputs_.explicit_path;
    if (named.find('/') != std::string::npos) {  // a bare file name is the dynamic linker's to find
      const std::string variable = fmt::format("{}={}", spec_.explicit_variable, named);
      if (!std::filesystem::path(named).is_absolute())
        return refused(fmt::format("{}: a relative path, which would follow the current directory; give an absolute "
                                   "path (or a bare file name for the dynamic linker's search)",
                                   variable));
      if (file_exists(named))
        if (const std::string untrusted = untrusted_library_file_reason(named, variable); !untrusted.empty())
          return refused(fmt::format("{}; {} is not loaded from a file or directory another user could have "
                                     "written. Point it at a library of root or of this user, or unset it",
                                     untrusted, spec_.display));
    }
    std::vector<std::string> attempts;
    auto library = DynamicLibrary::open_first({*inputs_.explicit_path}, attempts, spec_.required_symbol);
    if (!library)
      return refused(fmt::format("{}={}: {} could not be loaded from it ({}); point it at a library exporting {}, "
                                 "or unset it to let sagejit search",
                                 spec_.explicit_variable, *inputs_.explicit_path, spec_.display,
                                 describe_attempts(attempts), spec_.required_symbol));
    return found(std::move(*library), DiscoveryRule::explicit_path, spec_.explicit_variable);
  }

  // (c), (d) Each directory in order, each with every file name, newest first.
  std::optional<DiscoveredLibrary> in_directories(const std::vector<SearchDir>& directories, DiscoveryRule rule) {
    for (const SearchDir& directory : directories) {
      bool any_file = false;
      for (const std::string& name : spec_.file_names) {
        const std::string file = directory.path + "/" + name;
        if (!file_exists(file)) continue;
        any_file = true;
        if (const std::string untrusted = untrusted_library_file_reason(file, fmt::format("{} ({})", file, directory.origin));
            !untrusted.empty()) {
          log::warn("{}; not loaded (a library another user could have written)", untrusted);
          attempts_.push_back(untrusted);
          continue;
        }
        if (auto library = DynamicLibrary::open_first({file}, attempts_, spec_.required_symbol))
          return found(std::move(*library), rule, directory.origin);
      }
      if (!any_file)  // the origin is worth naming when it is not the path itself ("ROCM_PATH")
        attempts_.push_back(fmt::format("{}{}: none of {}", directory.path,
                                        directory.origin.starts_with('/') ? "" : fmt::format(" ({})", directory.origin),
                                        fmt::join(spec_.file_names, ", ")));
    }
    return std::nullopt;
  }

  // (e) The dynamic linker's search path, newest soname first.
  std::optional<DiscoveredLibrary> by_soname() {
    for (const std::string& name : spec_.file_names)
      if (auto library = DynamicLibrary::open_first({name}, attempts_, spec_.required_symbol))
        return found(std::move(*library), DiscoveryRule::soname, name);
    return std::nullopt;
  }

  // hipRTC when there is a HIP runtime: (a) and (b) still come first, but only from the runtime's
  // ROCm; otherwise it is taken from the runtime's directory. Nothing from another ROCm is loaded.
  DiscoveredLibrary from_rocm_of(const DiscoveredLibrary& hip_runtime) {
    const DynamicLibrary& runtime = *hip_runtime.library;
    auto mismatch = [&](const DiscoveredLibrary& hiprtc) {
      return refused(fmt::format(
          "hipRTC {} ({}) is not from the same ROCm as the HIP runtime {} ({}): {} is not {}. hipRTC must come "
          "from the HIP runtime's ROCm; point SAGEJIT_HIPRTC_LIBRARY and SAGEJIT_HIP_LIBRARY into one ROCm",
          hiprtc.library->path(), hiprtc.rule_text(), runtime.path(), hip_runtime.rule_text(),
          hiprtc.library->directory(), runtime.directory()));
    };
    if (auto loaded = already_loaded()) {
      if (loaded->library->path() == runtime.path()) {  // ROCm 5: hipRTC inside the runtime
        // Debian's ROCm 6.4 runtime also exports hipRTC's symbols; where the runtime's directory has
        // hipRTC's own library (ROCm >= 6), that file is hipRTC.
        if (auto own = in_directories({{runtime.directory(), "the HIP runtime's directory"}},
                                      DiscoveryRule::next_to_hip_runtime);
            own && own->library->path() != runtime.path())
          return std::move(*own);
        loaded->rule = DiscoveryRule::next_to_hip_runtime;
        loaded->origin = runtime.directory();
        return std::move(*loaded);
      }
      if (loaded->library->directory() != runtime.directory()) return mismatch(*loaded);
      return std::move(*loaded);
    }
    if (auto named = explicit_file()) {
      if (named->library && named->library->directory() != runtime.directory()) return mismatch(*named);
      return std::move(*named);
    }
    if (auto next = in_directories({{runtime.directory(), "the HIP runtime's directory"}},
                                   DiscoveryRule::next_to_hip_runtime))
      return std::move(*next);
    return refused(fmt::format("{} was not found next to the HIP runtime {} ({}), and it must come from the same "
                               "ROCm; {}",
                               spec_.display, runtime.path(), hip_runtime.rule_text(), describe_attempts(attempts_)));
  }

  RuntimeLibrary which_;
  const LibrarySpec& spec_;
  const DiscoveryInputs& inputs_;
  std::vector<std::string> attempts_;
};

// NVRTC dlopens its builtins (libnvrtc-builtins.so.<major>.<minor>) by soname at the first compile.
// pip's wheel (nvidia/cu13/lib) is on no linker path, so the builtins next to the chosen NVRTC are
// loaded first (newest name first, trust-checked like NVRTC itself); the linker then matches the
// soname to the loaded copy. Where the linker finds them anyway this changes nothing.
std::vector<DynamicLibrary> nvrtc_builtins_next_to(const DynamicLibrary& nvrtc) {
  constexpr std::string_view prefix = "libnvrtc-builtins.so.";
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& item : std::filesystem::directory_iterator(nvrtc.directory(), error)) {
    const std::string name = item.path().filename().string();
    if (name.starts_with(prefix)) names.push_back(name);
  }
  std::sort(names.begin(), names.end(), std::greater<>());
  std::vector<DynamicLibrary> loaded;
  for (const std::string& name : names) {
    const std::string file = nvrtc.directory() + "/" + name;
    if (const std::string untrusted = untrusted_library_file_reason(file, "NVRTC's builtins " + file);
        !untrusted.empty()) {
      log::warn("{}; not loaded", untrusted);
      continue;
    }
    std::vector<std::string> attempts;
    if (auto library = DynamicLibrary::open_first({file}, attempts)) {
      loaded.push_back(std::move(*library));
      break;
    }
    log::debug("NVRTC's builtins {} did not load: {}", file, describe_attempts(attempts));
  }
  return loaded;
}

// Rule (c)'s directories given by the host, and whether they can still change.
struct HandOver {
  std::mutex mutex;
  std::vector<std::string> directories;
  bool libraries_chosen = false;
};

HandOver& hand_over() {
  static auto* state = new HandOver;  // never destroyed: read by the process-wide choices
  return *state;
}

DiscoveredLibrary choose_for_process(RuntimeLibrary which) {
  {
    std::lock_guard lock(hand_over().mutex);
    hand_over().libraries_chosen = true;
  }
  const DiscoveredLibrary* hip_runtime =
      which == RuntimeLibrary::hiprtc ? &process_runtime_library(RuntimeLibrary::hip_runtime) : nullptr;
  DiscoveredLibrary chosen = discover_library(which, process_discovery_inputs(which), hip_runtime);
  if (chosen.library)
    log::info("{}: {} ({})", to_string(which), chosen.library->path(), chosen.rule_text());
  else if (chosen.refused)
    log::warn("{}", chosen.error);  // a misconfiguration, not an absence: say it even when nothing asks
  return chosen;
}

}  // namespace

std::string_view to_string(RuntimeLibrary which) {
  switch (which) {
    case RuntimeLibrary::hip_runtime: return "HIP runtime";
    case RuntimeLibrary::hiprtc: return "hipRTC";
    case RuntimeLibrary::nvrtc: return "NVRTC";
  }
  return "?";
}

std::string DiscoveredLibrary::rule_text() const {
  switch (rule) {
    case DiscoveryRule::already_loaded: return "(a) already loaded in this process";
    case DiscoveryRule::explicit_path: return fmt::format("(b) {}", origin);
    case DiscoveryRule::handed_over: return fmt::format("(c) {}", origin);
    case DiscoveryRule::toolkit_root: return fmt::format("(d) {}", origin);
    case DiscoveryRule::soname: return fmt::format("(e) soname {}", origin);
    case DiscoveryRule::next_to_hip_runtime: return "next to the HIP runtime (one ROCm)";
  }
  return "?";
}

DiscoveredLibrary discover_library(RuntimeLibrary which, const DiscoveryInputs& inputs,
                                   const DiscoveredLibrary* hip_runtime) {
  DiscoveredLibrary chosen = Search(which, inputs).run(hip_runtime);
  if (which == RuntimeLibrary::nvrtc && chosen.library) chosen.companions = nvrtc_builtins_next_to(*chosen.library);
  return chosen;
}

DiscoveryInputs process_discovery_inputs(RuntimeLibrary which) {
  const LibrarySpec& spec = spec_of(which);
  DiscoveryInputs inputs;
  inputs.explicit_path = env::get(spec.explicit_variable);
  if (auto listed = env::get("SAGEJIT_LIBRARY_DIRS"))
    for (std::string& directory : split_search_path(*listed)) {
      if (!std::filesystem::path(directory).is_absolute()) {  // it would follow the current directory
        log::warn("SAGEJIT_LIBRARY_DIRS entry {} is ignored: not an absolute path", directory);
        continue;
      }
      inputs.handed_over.push_back({std::move(directory), "SAGEJIT_LIBRARY_DIRS"});
    }
  for (std::string& directory : handed_over_library_dirs())
    inputs.handed_over.push_back({std::move(directory), "handed over by the host"});
  inputs.toolkit = toolkit_library_dirs(*spec.toolkit, env::get(spec.toolkit->root_variable),
                                        std::string(spec.toolkit->install_prefix));
  return inputs;
}

const DiscoveredLibrary& process_runtime_library(RuntimeLibrary which) {
  // Each chosen once and never destroyed: a HIP runtime must not be unloaded during static
  // destruction, and every later caller must get the same answer.
  switch (which) {
    case RuntimeLibrary::hip_runtime: {
      static const auto* chosen = new DiscoveredLibrary(choose_for_process(RuntimeLibrary::hip_runtime));
      return *chosen;
    }
    case RuntimeLibrary::hiprtc: {
      static const auto* chosen = new DiscoveredLibrary(choose_for_process(RuntimeLibrary::hiprtc));
      return *chosen;
    }
    case RuntimeLibrary::nvrtc: {
      static const auto* chosen = new DiscoveredLibrary(choose_for_process(RuntimeLibrary::nvrtc));
      return *chosen;
    }
  }
  fail(ErrorCode::internal, "unknown runtime library {}", static_cast<int>(which));
}

OpenedLibrary open_runtime_library(RuntimeLibrary which) {
  const DiscoveredLibrary& chosen = process_runtime_library(which);
  if (!chosen.library) return {std::nullopt, chosen.error};
  auto handle = chosen.library->another_handle();
  if (!handle) return {std::nullopt, fmt::format("{} {} is no longer loaded", to_string(which), chosen.library->path())};
  return {std::move(handle), {}};
}

void hand_over_library_dirs(const std::vector<std::string>& directories) {
  std::lock_guard lock(hand_over().mutex);
  if (hand_over().libraries_chosen)
    fail(ErrorCode::unsupported,
         "library search directories handed over too late: this process has already chosen its GPU runtime "
         "libraries (at the first device, compile or info use), and a loaded library is not swapped; hand them "
         "over right after loading sagejit (sagejit_set_library_search_dirs), or set SAGEJIT_LIBRARY_DIRS");
  for (const std::string& directory : directories) {
    if (directory.empty())
      fail(ErrorCode::invalid_argument, "library search directories: an empty directory name was given; pass paths");
    if (!std::filesystem::path(directory).is_absolute())  // resolved at first GPU use, it would follow the cwd
      fail(ErrorCode::invalid_argument, "library search directories: {} is not an absolute path; pass absolute ones",
           directory);
  }
  hand_over().directories = directories;
}

std::vector<std::string> split_search_path(std::string_view text) {
  std::vector<std::string> directories;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find(':'), text.size());
    if (end > 0) directories.emplace_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return directories;
}

std::vector<std::string> handed_over_library_dirs() {
  std::lock_guard lock(hand_over().mutex);
  return hand_over().directories;
}

}  // namespace sagejit
