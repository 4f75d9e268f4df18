// sagejit-info: what this machine offers sagejit: library version, GPU runtimes and compilers found
// (versions and paths), devices and their targets, cache dirs and sizes, tuning tables and their entry
// counts, kernels, and the environment variables in effect. Works (exit 0) without any GPU.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cache/code_cache.hpp"
#include "support/cache_stats_table.hpp"
#include "support/cli.hpp"
#include "support/summary_table.hpp"
#include "support/tuning_table_files.hpp"
#include "compiler/compiler.hpp"
#include "core/build_report.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "jit/compiler_choice.hpp"
#include "dev/cache_admin.hpp"
#include "device/device.hpp"
#include "kernels/registry.hpp"
#include "platform/runtime_discovery.hpp"
#include "sagejit/sagejit.hpp"

using namespace sagejit;
using namespace sagejit::tools;

namespace {

void section(const char* title) { fmt::print("\n== {} ==\n", title); }

// The first line of an error message (a missing runtime lists every path tried; keep the table readable).
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

void print_build() {
  const BuildReport report = build_report();
  fmt::print("sagejit {} ({} build, {})\n", report.version, report.build_type, report.cxx_compiler);
  fmt::print("embedded: {} kernel source files, {} tuning tables; configure-time AMDGPU clang: {}\n",
             report.embedded_kernel_files, report.embedded_config_files,
             report.default_clang.empty() ? "none" : report.default_clang);
}

// Which HIP runtime, hipRTC and NVRTC this process chose and by which rule (platform/runtime_discovery);
// the CUDA driver is the system's and appears with the devices.
void print_runtime_libraries(bool verbose) {
  section("GPU runtime libraries");
  const std::vector<std::string> handed_over = handed_over_library_dirs();
  const auto listed = env::get("SAGEJIT_LIBRARY_DIRS");
  fmt::print("search order: (a) already loaded, (b) SAGEJIT_<LIB>_LIBRARY, (c) SAGEJIT_LIBRARY_DIRS{}, "
             "(d) ROCM_PATH|CUDA_HOME then /opt/rocm-*|/usr/local/cuda-* newest first, (e) sonames newest first; "
             "hipRTC from the HIP runtime's ROCm\n",
             handed_over.empty() ? "" : " and the host's directories");
  if (listed) fmt::print("SAGEJIT_LIBRARY_DIRS: {}\n", *listed);
  if (!handed_over.empty()) fmt::print("handed over by the host: {}\n", fmt::join(handed_over, ":"));
  SummaryTable table({{"library"}, {"state"}, {"chosen by"}, {"file"}});
  for (RuntimeLibrary which : {RuntimeLibrary::hip_runtime, RuntimeLibrary::hiprtc, RuntimeLibrary::nvrtc}) {
    const DiscoveredLibrary& chosen = process_runtime_library(which);
    if (chosen.library)
      table.add_row({std::string(to_string(which)), "found", chosen.rule_text(), chosen.library->path()});
    else
      table.add_row({std::string(to_string(which)), chosen.refused ? "refused" : "not found", "-",
                     verbose ? chosen.error : first_line(chosen.error)});
  }
  table.print();
}

// Returns the number of GPUs found.
int print_runtimes_and_devices(bool verbose) {
  section("GPU runtimes and devices");
  SummaryTable runtimes({{"runtime"}, {"state"}, {"version"}, {"library"}});
  SummaryTable devices({{"#", SummaryTable::Align::right}, {"runtime"}, {"name"}, {"target"}, {"full target"},
                        {"CUs/SMs", SummaryTable::Align::right}, {"memory", SummaryTable::Align::right},
                        {"LDS/smem per block", SummaryTable::Align::right}});
  int gpus = 0;
  for (auto [name, backend] : {std::pair{"CUDA", &cuda_device}, std::pair{"HIP", &hip_device}}) {
    try {
      Device& device = backend();
      const int count = device.device_count();
      const std::string state = count == 0 ? fmt::format("loaded, 0 devices: {}", device.no_device_reason())
                                           : fmt::format("loaded, {} device(s)", count);
      runtimes.add_row({name, state, device.runtime_version(), device.library_path()});
      for (int ordinal = 0; ordinal < count; ++ordinal) {
        const DeviceInfo info = device.info(ordinal);
        devices.add_row({std::to_string(ordinal), name, info.name, info.target, info.full_target,
                         std::to_string(info.compute_units), human_bytes(info.total_memory),
                         human_bytes(std::max(info.shared_memory_per_block, info.shared_memory_per_block_optin))});
        ++gpus;
      }
    } catch (const Error& error) {
      const std::string message = verbose ? std::string(error.what()) : first_line(error.what());
      runtimes.add_row({name, "not available", "-", message});
    }
  }
  runtimes.print();
  if (gpus == 0) {
    fmt::print("No GPU found: kernels can still be precompiled (sagejit-precompile); sagejit-selftest and "
               "sagejit-autotune need a GPU.\n");
  } else {
    fmt::print("\n");
    devices.print();
  }
  return gpus;
}

void print_compilers(bool verbose) {
  section("Kernel compilers");
  SummaryTable table({{"compiler"}, {"state"}, {"identity"}, {"location"}});
  for (CompilerKind kind : {CompilerKind::nvrtc, CompilerKind::hiprtc, CompilerKind::clang}) {
    try {
      const Compiler& found = compiler(kind);
      table.add_row({std::string(to_string(kind)), "available", found.identity(), found.location()});
    } catch (const Error& error) {
      table.add_row({std::string(to_string(kind)), "not available", "-",
                     verbose ? std::string(error.what()) : first_line(error.what())});
    }
  }
  table.print();
  // What a first call would use (the runtime's own policy, jit/compiler_choice.hpp), per supported arch.
  for (const std::string& arch : supported_archs()) {
    try {
      const CompilerChoice choice = choose_compiler(parse_target(arch), std::nullopt, &code_cache());
      std::string prebuilt;
      for (const auto& stand_in : choice.prebuilt) prebuilt += (prebuilt.empty() ? "" : ", ") + stand_in->identity();
      fmt::print("{} compiles with {}{}\n", arch, choice.compiler->identity(),
                 prebuilt.empty() ? "" : fmt::format("; also loads system-cache objects of {}", prebuilt));
    } catch (const Error& error) {
      fmt::print("{} has no compiler: {}\n", arch, verbose ? std::string(error.what()) : first_line(error.what()));
    }
  }
}

void print_caches() {
  section("Code-object caches");
  try {
    CodeCache cache(CodeCacheSettings::from_environment());
    const CacheStats stats = cache_stat(cache);
    cache_stats_table(stats).print();
  } catch (const Error& error) {
    fmt::print("cache settings are invalid: {}\n", error.what());
  }
}

void print_tables() {
  section("Tuning tables");
  try {
    const std::vector<LoadedTableFile> files = loaded_table_files();
    SummaryTable table({{"file"}, {"arch"}, {"kind"}, {"kernels (entries)"}});
    for (const LoadedTableFile& file : files) {
      std::string kernels;
      for (const auto& [family, kernel] : file.table.kernels)
        kernels += fmt::format("{}{} ({})", kernels.empty() ? "" : ", ", family, kernel.entries.size());
      if (!file.table.alias_of.empty()) kernels = "alias of " + file.table.alias_of;
      table.add_row({file.table.source, file.table.arch, file.overlay ? "overlay" : "shipped", kernels});
    }
    table.print();
  } catch (const Error& error) {
    fmt::print("a tuning table is invalid (every kernel call would fail): {}\n", error.what());
  }
}

void print_kernels() {
  section("Kernels");
  SummaryTable table({{"kernel"}, {"family"}, {"source"}, {"entries"}});
  for (const KernelDesc* desc : all_kernels())
    table.add_row({desc->name, desc->family, "kernel_src/" + desc->source_path, fmt::format("{}", fmt::join(desc->entries, ", "))});
  table.print();
}

void print_environment() {
  section("Environment variables");
  SummaryTable table({{"variable"}, {"value"}, {"meaning"}});
  for (const env::Variable& variable : env::variables) {
    const auto value = env::get(std::string(variable.name).c_str());
    table.add_row({std::string(variable.name), value ? *value : "(unset)", std::string(variable.meaning)});
  }
  table.print();
}

}  // namespace

int main(int argc, char** argv) {
  bool verbose = false;
  CLI::App app{"Show what sagejit finds on this machine: version, GPU runtimes, compilers, devices, caches, tuning "
               "tables, environment. Needs no GPU.",
               "sagejit-info"};
  app.set_version_flag("--version", tool_version_string("sagejit-info"));
  app.add_flag("--verbose,-v", verbose, "Show the full reason when a runtime or compiler is not available");
  return run_tool(app, argc, argv, [&] {
    print_build();
    print_runtime_libraries(verbose);
    print_runtimes_and_devices(verbose);
    print_compilers(verbose);
    print_caches();
    print_tables();
    print_kernels();
    print_environment();
    return exit_ok;
  });
}
