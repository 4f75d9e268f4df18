// sagejit-isa-report: the ISA cost report of the gfx12 attention kernel, without a GPU. For every
// shipped config (each table's default and entries, per dtype x head_dim x causal) it renders and
// compiles the kernel for the arch with the offline clang, disassembles it with llvm-objdump, finds
// the key loop, counts one trip's instructions per wave by class and prices it with the RDNA4 model
// (runtime/src/dev/rdna4_cost_model.cpp; sources in docs/RDNA4.md, "ISA cost report"). Output: a
// table on stdout, and JSON with --json. No thresholds: it reports, the reader judges.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "support/cli.hpp"
#include "support/code_object_stats.hpp"
#include "support/summary_table.hpp"
#include "support/tuning_table_files.hpp"
#include "compiler/compiler.hpp"
#include "core/error.hpp"
#include "core/kernel_inputs.hpp"
#include "core/tile_config.hpp"
#include "dev/isa_key_loop.hpp"
#include "dev/rdna4_cost_model.hpp"
#include "jit/kernel_config.hpp"
#include "jit/render.hpp"
#include "kernels/attention_gfx12_desc.hpp"
#include "platform/private_temp_dir.hpp"
#include "platform/subprocess.hpp"

using namespace sagejit;
using namespace sagejit::tools;

namespace {

struct Options {
  std::vector<std::string> archs;  // empty: every arch priced_archs() gives
  std::vector<std::string> dtypes{"bf16"};
  std::vector<int> head_dims{std::begin(kernel_head_dims), std::end(kernel_head_dims)};
  std::vector<int> causal{0, 1};
  std::string objdump;
  std::string json_path;
  std::string listing_dir;  // when set: each config's disassembly is written there (new files only)
  std::string compiler = "clang";  // which compiler builds the objects (in this process)
  std::string objects_dir;  // when set: objects built elsewhere (sagejit-precompile --emit-dir), not compiled here
  bool key_mask = false;    // price the key-mask variant of each config, as the plan runs it (kernel_table_config)
};

struct Row {
  std::string arch, problem;
  TileConfig config;
  Specialization spec;
  bool ok = false;
  std::string error;
  std::string compiler;      // identity of the compiler that built the object
  double compile_ms = -1;    // its compile time (-1: not known, e.g. a cached object)
  std::string object_file;   // with --objects: the emitted file to read instead of compiling
  CodeObjectStats stats;
  isa::KeyLoop loop;
  isa::ModeledCost steady, heaviest;
  int waves_per_simd = 0;
  double ops_per_tile = 0;
};

std::string find_objdump(const std::string& configured) {
  if (!configured.empty()) {
    const std::string path = find_executable(configured);
    if (path.empty()) fail(ErrorCode::invalid_argument, "--objdump {}: not an executable", configured);
    return path;
  }
  for (const char* name : {"llvm-objdump-22", "llvm-objdump-21", "llvm-objdump-20", "llvm-objdump"}) {
    const std::string path = find_executable(name);
    if (!path.empty()) return path;
  }
  fail(ErrorCode::runtime_not_found, "llvm-objdump (20 or newer, for gfx12) not found in PATH; name it with --objdump");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The configs a run can choose for one problem: the table's default and every entry for it.
std::vector<TileConfig> shipped_configs(const std::vector<LoadedTableFile>& files, const std::string& arch,
                                        DType dtype, int head_dim, bool causal) {
  std::vector<TileConfig> configs;
  const std::string table_arch = resolve_table_arch(files, arch);
  for (const LoadedTableFile& file : files) {
    if (file.overlay || file.table.arch != table_arch) continue;
    const auto kernel = file.table.kernels.find("attention");
    if (kernel == file.table.kernels.end()) continue;
    bool default_reachable = true;
    for (const TableEntry& entry : kernel->second.entries)
      if (entry.problem.dtype == dtype && entry.problem.head_dim == head_dim && entry.problem.causal == causal) {
        configs.push_back(entry.config);
        if (matches_every_call(entry.problem)) default_reachable = false;
      }
    if (default_reachable) configs.push_back(kernel->second.space.default_config);
  }
  std::sort(configs.begin(), configs.end(), [](const TileConfig& a, const TileConfig& b) { return config_id(a) < config_id(b); });
  configs.erase(std::unique(configs.begin(), configs.end()), configs.end());
  return configs;
}

// The archs the report can price: those with a shipped tuning table that the gfx12 attention kernel
// builds for (its family rule), so a new gfx12 arch is priced once its table ships.
std::vector<std::string> priced_archs(const std::vector<LoadedTableFile>& files) {
  std::vector<std::string> archs;
  for (const LoadedTableFile& file : files)
    if (!file.overlay && kernel_supports(attention_gfx12_kernel, file.table.arch)) archs.push_back(file.table.arch);
  std::sort(archs.begin(), archs.end());
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  return archs;
}

// Writes `text` to DIR/<arch>.<problem>.<config>.s, refusing to follow or replace an existing file.
void save_listing(const std::string& directory, const Row& row, const std::string& text) {
  std::string name = fmt::format("{}.{}.{}.s", row.arch, row.problem, config_id(row.config));
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  const std::string path = directory + "/" + name;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) fail(ErrorCode::invalid_argument, "--listing-dir: cannot create {} (it must not exist yet)", path);
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written) fail(ErrorCode::internal, "--listing-dir: cannot write {}", path);
}

std::vector<std::byte> read_bytes(const std::string& path) {
  const std::string text = read_file(path);
  if (text.empty()) fail(ErrorCode::invalid_argument, "--objects: {} is missing or empty", path);
  std::vector<std::byte> bytes(text.size());
  std::memcpy(bytes.data(), text.data(), text.size());
  return bytes;
}

// --objects: each row's object from a sagejit-precompile --emit-dir index (the non-LSE variant the
// report prices); a row without one fails with that reason.
void take_emitted_objects(const std::string& directory, std::vector<Row>& rows) {
  const std::string index_path = directory + "/emitted.json";
  const std::string text = read_file(index_path);
  if (text.empty()) fail(ErrorCode::invalid_argument, "--objects {}: {} is missing or empty", directory, index_path);
  const nlohmann::json index = nlohmann::json::parse(text);
  for (Row& row : rows) {
    for (const nlohmann::json& entry : index.at("objects")) {
      const nlohmann::json& spec = entry.at("spec");
      const std::string target = entry.at("target").get<std::string>();
      if (entry.at("kernel") != attention_gfx12_kernel.name || target.substr(0, target.find(':')) != row.arch ||
          entry.at("config").get<TileConfig>() != row.config || spec.at("dtype") != row.spec.dtype ||
          spec.at("head_dim") != row.spec.head_dim || spec.at("causal") != row.spec.causal || spec.at("write_lse") != false ||
          spec.value("key_mask", false) != row.spec.key_mask)
        continue;
      row.object_file = directory + "/" + entry.at("file").get<std::string>();
      row.compiler = entry.at("compiler").get<std::string>();
      if (entry.at("status") == "compiled") row.compile_ms = entry.at("ms").get<double>();
      break;
    }
    if (row.object_file.empty()) row.error = fmt::format("no such object in --objects {}", directory);
  }
}

void analyse(Row& row, const Options& options, const std::string& objdump) {
  const std::string& listing_dir = options.listing_dir;
  if (!row.error.empty()) return;
  try {
    const std::string reason = check_kernel_config(attention_gfx12_kernel, row.config, row.spec, row.arch);
    if (!reason.empty()) fail(ErrorCode::invalid_argument, "config rejected: {}", reason);
    CompileResult result;
    if (!row.object_file.empty()) {
      result.code = read_bytes(row.object_file);
    } else {
      const RenderedKernel rendered = render_kernel(attention_gfx12_kernel, row.config, row.spec, row.arch);
      const Compiler& chosen = compiler(parse_compiler_kind(options.compiler));
      const auto start = std::chrono::steady_clock::now();
      result = chosen.compile({rendered.name, rendered.source, row.arch, rendered.options});
      row.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      row.compiler = chosen.identity();
    }
    row.stats = read_code_object_stats(result.code);
    PrivateTempDir directory("sagejit-isa-report");
    const std::string object = directory.file("kernel.co");
    {
      std::ofstream out(object, std::ios::binary);
      out.write(reinterpret_cast<const char*>(result.code.data()), static_cast<std::streamsize>(result.code.size()));
      if (!out) fail(ErrorCode::internal, "cannot write {}", object);
    }
    const std::string text = isa::disassemble(objdump, object, row.arch);
    if (!listing_dir.empty()) save_listing(listing_dir, row, text);
    row.loop = isa::find_key_loop(isa::parse_objdump(text), isa::modeled_cycles);
    if (!row.loop.found) fail(ErrorCode::internal, "key loop not found: {}", row.loop.problem);
    row.steady = isa::model_cost(row.loop.steady.counts);
    row.heaviest = isa::model_cost(row.loop.heaviest.counts);
    const Gfx12AttentionTile tile = gfx12_attention_tile(row.config);
    row.waves_per_simd = isa::waves_per_simd(static_cast<int>(row.stats.registers.value_or(256)),
                                             static_cast<int>(row.stats.static_shared.value_or(0)), tile.waves);
    row.ops_per_tile = 4.0 * tile.rows_per_wave * tile.block_n * row.spec.head_dim;
    row.ok = true;
  } catch (const std::exception& error) {
    row.error = error.what();
  }
}

nlohmann::json counts_json(const isa::ClassCounts& counts) {
  nlohmann::json j;
  for (int c = 0; c < isa::instr_class_count; ++c)
    j[std::string(isa::class_name(static_cast<isa::InstrClass>(c)))] = counts.n[static_cast<std::size_t>(c)];
  j["instructions"] = counts.instructions;
  j["lds_bytes_per_lane"] = counts.lds_bytes_per_lane;
  j["vmem_bytes_per_lane"] = counts.vmem_bytes_per_lane;
  return j;
}

nlohmann::json cost_json(const isa::ModeledCost& cost) {
  return {{"wmma_cycles", cost.wmma_cycles},         {"valu_issue_cycles", cost.valu_issue_cycles},
          {"trans_unit_cycles", cost.trans_unit_cycles}, {"simd_cycles", cost.simd_cycles},
          {"lds_cycles", cost.lds_cycles},           {"cycles", cost.cycles},
          {"wmma_share", cost.wmma_share}};
}

nlohmann::json row_json(const Row& row) {
  nlohmann::json j{{"arch", row.arch}, {"problem", row.problem}, {"config", row.config}, {"compiler", row.compiler},
                   {"compile_ms", row.compile_ms}, {"ok", row.ok}};
  if (!row.ok) {
    j["error"] = row.error;
    return j;
  }
  j["vgprs"] = row.stats.registers.value_or(0);
  j["lds_bytes"] = row.stats.static_shared.value_or(0);
  j["scratch_bytes"] = row.stats.scratch.value_or(0);
  j["waves_per_simd"] = row.waves_per_simd;
  j["ops_per_tile_per_wave"] = row.ops_per_tile;
  j["loop"] = {{"begin", row.loop.begin}, {"end", row.loop.end}};
  j["steady"] = {{"counts", counts_json(row.loop.steady.counts)}, {"cost", cost_json(row.steady)},
                 {"blocks", row.loop.steady.blocks}};
  j["heaviest"] = {{"counts", counts_json(row.loop.heaviest.counts)}, {"cost", cost_json(row.heaviest)}};
  nlohmann::json predicted = nlohmann::json::object();
  for (const isa::Rdna4Device& device : isa::rdna4_devices())
    predicted[device.name] = isa::predicted_tops(row.ops_per_tile, row.steady.cycles, device);
  j["predicted_tops"] = predicted;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"ISA cost report of the gfx12 attention kernel's key loop (no GPU needed). See docs/RDNA4.md.",
               "sagejit-isa-report"};
  app.add_option("--arch", options.archs, "gfx12 archs with a shipped tuning table (default: all of them)");
  app.add_option("--dtype", options.dtypes, "Input dtypes (default bf16; the key loop does not depend on it)")
      ->check(CLI::IsMember(kernel_dtype_names()));
  app.add_option("--head-dim", options.head_dims, "Head dims (default: " + kernel_head_dims_text() + ")")
      ->check(CLI::IsMember(std::vector<int>(std::begin(kernel_head_dims), std::end(kernel_head_dims))));
  app.add_option("--causal", options.causal, "Causal variants, 0 and/or 1 (default both)")->check(CLI::IsMember({0, 1}));
  app.add_option("--objdump", options.objdump, "llvm-objdump to disassemble with (default: llvm-objdump-22 .. in PATH)");
  app.add_option("--listing-dir", options.listing_dir, "Write each config's disassembly into this directory");
  app.add_option("--json", options.json_path, "Also write the report as JSON to this file");
  app.add_flag("--key-mask", options.key_mask,
               "Price the key-mask variant (SJ_KEY_MASK) of each shipped config, as a masked call runs it");
  app.add_option("--compiler", options.compiler, "Compiler that builds the objects: clang (default) or hiprtc")
      ->check(CLI::IsMember({"clang", "hiprtc"}));
  app.add_option("--objects", options.objects_dir,
                 "Price the objects of a sagejit-precompile --emit-dir (its emitted.json) instead of compiling: e.g. "
                 "hipRTC's, built inside a ROCm root where no llvm-objdump is");
  return run_tool(app, argc, argv, [&]() -> int {
    const std::string objdump = find_objdump(options.objdump);
    const std::vector<LoadedTableFile> files = loaded_table_files();
    const std::vector<std::string> priced = priced_archs(files);
    if (options.archs.empty()) options.archs = priced;
    for (const std::string& arch : options.archs)
      if (std::find(priced.begin(), priced.end(), arch) == priced.end())
        fail(ErrorCode::invalid_argument, "--arch {}: not a gfx12 arch with a shipped tuning table (accepted: {})",
             arch, fmt::join(priced, ", "));
    std::vector<Row> rows;
    for (const std::string& arch : options.archs)
      for (const std::string& dtype_name : options.dtypes)
        for (int head_dim : options.head_dims)
          for (int causal : options.causal) {
            const DType dtype = *kernel_dtype_named(dtype_name);  // --dtype accepts only kernel_dtype_names()
            for (const TileConfig& config : shipped_configs(files, arch, dtype, head_dim, causal != 0)) {
              Row row;
              row.arch = arch;
              row.problem = fmt::format("{} D={}{}{}", dtype_name, head_dim, causal ? " causal" : "",
                                        options.key_mask ? " mask" : "");
              row.spec.dtype = static_cast<int>(dtype);
              row.spec.head_dim = head_dim;
              row.spec.causal = causal != 0;
              row.spec.key_mask = options.key_mask;
              row.config = kernel_table_config(attention_gfx12_kernel, config, row.spec);
              row.spec.v = kernel_v_input(attention_gfx12_kernel, row.config);
              // Two shipped configs may run as one masked config: price it once.
              const bool seen = std::any_of(rows.begin(), rows.end(), [&](const Row& other) {
                return other.arch == row.arch && other.problem == row.problem && other.config == row.config;
              });
              if (!seen) rows.push_back(std::move(row));
            }
          }
    if (!options.objects_dir.empty()) take_emitted_objects(options.objects_dir, rows);
    for (Row& row : rows) analyse(row, options, objdump);

    const auto& devices = isa::rdna4_devices();
    SummaryTable table({{"arch"}, {"problem"}, {"config"}, {"compiler"}, {"compile ms", SummaryTable::Align::right},
                        {"VGPR", SummaryTable::Align::right}, {"scratch", SummaryTable::Align::right},
                        {"LDS B", SummaryTable::Align::right}, {"waves/SIMD", SummaryTable::Align::right},
                        {"WMMA iu8+fp8", SummaryTable::Align::right}, {"VALU", SummaryTable::Align::right},
                        {"VOPD", SummaryTable::Align::right}, {"trans", SummaryTable::Align::right},
                        {"SALU", SummaryTable::Align::right}, {"LDS", SummaryTable::Align::right},
                        {"VMEM", SummaryTable::Align::right}, {"waits", SummaryTable::Align::right},
                        {"cycles/tile", SummaryTable::Align::right}, {"WMMA share", SummaryTable::Align::right},
                        {"worst cycles", SummaryTable::Align::right}, {"TOPS R9700", SummaryTable::Align::right},
                        {"TOPS 9070XT", SummaryTable::Align::right}, {"TOPS 9060XT", SummaryTable::Align::right}});
    int failed = 0;
    for (const Row& row : rows) {
      if (!row.ok) {
        ++failed;
        fmt::print(stderr, "sagejit-isa-report: {} {} {}: {}\n", row.arch, row.problem, config_id(row.config), row.error);
        continue;
      }
      const isa::ClassCounts& c = row.loop.steady.counts;
      table.add_row({row.arch, row.problem, config_id(row.config), row.compiler,
                     row.compile_ms < 0 ? std::string("-") : fmt::format("{:.0f}", row.compile_ms), figure(row.stats.registers), figure(row.stats.scratch),
                     figure(row.stats.static_shared), std::to_string(row.waves_per_simd),
                     fmt::format("{}+{}", c[isa::InstrClass::wmma_iu8], c[isa::InstrClass::wmma_fp8]),
                     std::to_string(c[isa::InstrClass::valu]), std::to_string(c[isa::InstrClass::vopd]),
                     std::to_string(c[isa::InstrClass::trans]), std::to_string(c[isa::InstrClass::salu]),
                     std::to_string(c[isa::InstrClass::lds]), std::to_string(c[isa::InstrClass::vmem]),
                     std::to_string(c[isa::InstrClass::wait]), fmt::format("{:.0f}", row.steady.cycles),
                     fmt::format("{:.0f}%", 100 * row.steady.wmma_share), fmt::format("{:.0f}", row.heaviest.cycles),
                     fmt::format("{:.0f}", isa::predicted_tops(row.ops_per_tile, row.steady.cycles, devices[0])),
                     fmt::format("{:.0f}", isa::predicted_tops(row.ops_per_tile, row.steady.cycles, devices[1])),
                     fmt::format("{:.0f}", isa::predicted_tops(row.ops_per_tile, row.steady.cycles, devices[2]))});
    }
    table.print(stdout);
    fmt::print("Counts per key tile per wave on the steady path (a full tile that fetches the next one, no mask, "
               "no rescale); 'worst' prices the heaviest path of the same tile (mask and rescale). TOPS assume every "
               "SIMD runs the loop back to back (latency hidden by waves).\n");
    if (!options.json_path.empty()) {
      nlohmann::json report{{"tool", tool_version_string("sagejit-isa-report")}, {"rows", nlohmann::json::array()}};
      for (const Row& row : rows) report["rows"].push_back(row_json(row));
      std::ofstream out(options.json_path);
      out << report.dump(2) << "\n";
      out.close();
      if (!out) fail(ErrorCode::internal, "--json {}: cannot write the report", options.json_path);
    }
    if (failed > 0) {
      fmt::print(stderr, "sagejit-isa-report: {} of {} configs failed\n", failed, rows.size());
      return static_cast<int>(exit_failed);
    }
    return static_cast<int>(exit_ok);
  });
}
