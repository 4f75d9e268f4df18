// The command-line tools, run as a user runs them (tests/tools.cmake passes their paths): precompile
// for gfx1201 (clang) and sm_90 (NVRTC) twice (the second run finds everything cached and says so),
// emitted code objects are real ELF for the right machine with readable resource figures, `verify`
// catches a truncated entry and `--fix` repairs it, concurrent precompiles into one directory all
// succeed, bad arguments are usage errors naming the argument, and sagejit-info works without a GPU.
// Kernel lists are small (the probe kernels) so the whole file takes seconds of compile time.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "compiler/compiler.hpp"
#include "core/error.hpp"
#include "device/device.hpp"

namespace fs = std::filesystem;

#if defined(SAGEJIT_TOOL_PRECOMPILE)

#include "common/code_object_stats.hpp"  // tools/common, linked by tests/tools.cmake

namespace {

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

std::string quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Runs a shell command line, capturing stdout and stderr.
RunResult run_shell(const std::string& command_line) {
  const std::string command = command_line + " 2>&1";
  RunResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE_MESSAGE(pipe != nullptr, "cannot run " << command);
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return result;
}

RunResult run(const std::string& tool, const std::string& arguments) { return run_shell(quote(tool) + " " + arguments); }

// A fresh private directory per test case (the cache refuses group/other-writable dirs).
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device random;
    path = fs::path(SAGEJIT_BINARY_DIR) / fmt::format("tools-test-{}-{:08x}", ::getpid(), random());
    fs::create_directories(path);
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::replace);
  }
  ~TempDir() {
    std::error_code error;
    fs::remove_all(path, error);
  }
};

bool compiler_available(sagejit::CompilerKind kind) {
  try {
    (void)sagejit::compiler(kind);
    return true;
  } catch (const sagejit::Error&) {
    return false;
  }
}

// Which vendors this machine can precompile for; nullopt after a "skipped" message when neither.
struct Vendors {
  bool amd = false, nvidia = false;
};
std::optional<Vendors> vendors_or_skip() {
  const Vendors vendors{compiler_available(sagejit::CompilerKind::clang), compiler_available(sagejit::CompilerKind::nvrtc)};
  if (!vendors.amd && !vendors.nvidia) {
    MESSAGE("skipped: neither clang (AMDGPU) nor NVRTC is available");
    return std::nullopt;
  }
  return vendors;
}

bool gpu_present() {
  try {
    (void)sagejit::default_device();
    return true;
  } catch (const sagejit::Error&) {
    return false;
  }
}

std::vector<std::byte> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

std::vector<fs::path> files_with_extension(const fs::path& dir, const std::string& extension) {
  std::vector<fs::path> files;
  if (!fs::exists(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == extension) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// The raw code objects --emit-dir wrote for one arch: two (jit_probe and the arch's probe), named
// "*<name_part>", ELF for `machine`, with a register count; `vendor_checks` adds what that vendor's
// objects must also show.
void check_emitted_objects(const fs::path& emit, const std::string& extension, const std::string& name_part,
                           int machine,
                           const std::function<void(const sagejit::tools::CodeObjectStats&)>& vendor_checks) {
  const auto objects = files_with_extension(emit, extension);
  REQUIRE(objects.size() == 2);
  for (const fs::path& object : objects) {
    INFO(object.string());
    CHECK(object.filename().string().find(name_part) != std::string::npos);
    const auto stats = sagejit::tools::read_code_object_stats(read_bytes(object));
    CHECK(stats.elf);
    CHECK(stats.machine == machine);
    CHECK(stats.registers.has_value());
    vendor_checks(stats);
  }
}

// The archs this machine can precompile for in CI, with their small kernel lists.
std::string precompile_arguments(const fs::path& cache, bool amd, bool nvidia) {
  std::string archs;
  if (amd) archs += "gfx1201";
  if (nvidia) archs += std::string(archs.empty() ? "" : ",") + "sm_90";
  return fmt::format("--arch {} --compiler clang --kernels jit_probe,probe --dtype bf16 --head-dim 128 --jobs 2 "
                     "--cache-dir {}",
                     archs, quote(cache.string()));
}

}  // namespace

TEST_CASE("sagejit-precompile: gfx1201 (clang) and sm_90 (nvrtc), second run all cached, emitted ELF") {
  const auto vendors = vendors_or_skip();
  if (!vendors) return;
  const auto [amd, nvidia] = *vendors;
  if (!amd) MESSAGE("gfx1201 part skipped: no AMDGPU-capable clang");
  if (!nvidia) MESSAGE("sm_90 part skipped: NVRTC not available");
  TempDir temp;
  const fs::path cache = temp.path / "cache", emit = temp.path / "emit";
  const std::string arguments = precompile_arguments(cache, amd, nvidia) + " --emit-dir " + quote(emit.string());

  const RunResult first = run(SAGEJIT_TOOL_PRECOMPILE, arguments);
  INFO(first.output);
  CHECK(first.exit_code == 0);
  CHECK(first.output.find("compiled") != std::string::npos);
  const std::size_t expected_objects = (amd ? 2 : 0) + (nvidia ? 2 : 0);  // jit_probe + the arch's probe
  CHECK(files_with_extension(cache, ".sjco").size() == expected_objects);

  const RunResult second = run(SAGEJIT_TOOL_PRECOMPILE, arguments);
  INFO(second.output);
  CHECK(second.exit_code == 0);
  CHECK(second.output.find(fmt::format("all {} code objects were already cached", expected_objects)) != std::string::npos);

  if (amd)
    check_emitted_objects(emit, ".co", ".gfx1201.co", sagejit::tools::elf_machine_amdgpu, [](const auto& stats) {
      CHECK(stats.kernels >= 1);
      CHECK(stats.static_shared.has_value());
      CHECK(stats.scratch.has_value());
    });
  if (nvidia)
    check_emitted_objects(emit, ".cubin", ".sm_90.cubin", sagejit::tools::elf_machine_cuda, [](const auto& stats) {
      REQUIRE(stats.registers.has_value());
      CHECK(*stats.registers > 0);
    });

  // A dry run lists the same objects as cached and compiles nothing.
  const RunResult dry = run(SAGEJIT_TOOL_PRECOMPILE, precompile_arguments(cache, amd, nvidia) + " --dry-run");
  INFO(dry.output);
  CHECK(dry.exit_code == 0);
  CHECK(dry.output.find(fmt::format("0 to compile, {} already cached", expected_objects)) != std::string::npos);
}

TEST_CASE("sagejit-precompile: a system-cache directory is world-readable and holds no lock files") {
  if (!compiler_available(sagejit::CompilerKind::clang)) {
    MESSAGE("skipped: no AMDGPU-capable clang");
    return;
  }
  TempDir temp;
  const fs::path system = temp.path / "share" / "sagejit" / "cache";
  const RunResult result = run(SAGEJIT_TOOL_PRECOMPILE, "--arch gfx1201 --compiler clang --kernels jit_probe "
                                                        "--system-cache " + quote(system.string()));
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const auto entries = files_with_extension(system, ".sjco");
  REQUIRE(entries.size() == 1);
  CHECK((fs::status(system).permissions() & fs::perms::others_read) != fs::perms::none);
  CHECK((fs::status(entries[0]).permissions() & fs::perms::others_read) != fs::perms::none);
  CHECK(!fs::exists(system / "locks"));
  // The runtime's cache finds it there as a system entry.
  const RunResult listed = run(SAGEJIT_TOOL_CACHE, "--cache-dir " + quote((temp.path / "user").string()) +
                                                       " --system-cache " + quote(system.string()) + " list");
  INFO(listed.output);
  CHECK(listed.exit_code == 0);
  CHECK(listed.output.find("system") != std::string::npos);
  CHECK(listed.output.find("jit_probe") != std::string::npos);
}

TEST_CASE("sagejit-cache: verify catches a truncated entry, --fix repairs it") {
  const auto vendors = vendors_or_skip();
  if (!vendors) return;
  const bool amd = vendors->amd;
  TempDir temp;
  const fs::path cache = temp.path / "cache";
  const std::string arch_arguments =
      amd ? "--arch gfx1201 --compiler clang --kernels jit_probe" : "--arch sm_90 --kernels jit_probe";
  const std::string precompile = arch_arguments + " --cache-dir " + quote(cache.string());
  REQUIRE(run(SAGEJIT_TOOL_PRECOMPILE, precompile).exit_code == 0);
  const std::string cache_argument = "--cache-dir " + quote(cache.string());

  const RunResult clean = run(SAGEJIT_TOOL_CACHE, cache_argument + " verify");
  INFO(clean.output);
  CHECK(clean.exit_code == 0);

  const auto entries = files_with_extension(cache, ".sjco");
  REQUIRE(entries.size() == 1);
  const auto size = fs::file_size(entries[0]);
  REQUIRE(size > 100);
  fs::resize_file(entries[0], size - 37);

  const RunResult caught = run(SAGEJIT_TOOL_CACHE, cache_argument + " verify");
  INFO(caught.output);
  CHECK(caught.exit_code == 1);
  CHECK(caught.output.find("BAD") != std::string::npos);
  CHECK(caught.output.find(entries[0].filename().string()) != std::string::npos);

  const RunResult fixed = run(SAGEJIT_TOOL_CACHE, cache_argument + " verify --fix");
  INFO(fixed.output);
  CHECK(fixed.exit_code == 0);
  CHECK(!fs::exists(entries[0]));
  CHECK(run(SAGEJIT_TOOL_CACHE, cache_argument + " verify").exit_code == 0);

  // The next precompile rebuilds exactly the removed entry.
  const RunResult rebuilt = run(SAGEJIT_TOOL_PRECOMPILE, precompile);
  INFO(rebuilt.output);
  CHECK(rebuilt.exit_code == 0);
  CHECK(rebuilt.output.find("1 compiled") != std::string::npos);
  CHECK(fs::exists(entries[0]));

  const RunResult stat = run(SAGEJIT_TOOL_CACHE, cache_argument + " stat");
  INFO(stat.output);
  CHECK(stat.exit_code == 0);
  CHECK(stat.output.find(cache.string()) != std::string::npos);
  const RunResult pruned = run(SAGEJIT_TOOL_CACHE, cache_argument + " prune --max-size 0");
  INFO(pruned.output);
  CHECK(pruned.exit_code == 0);
  CHECK(files_with_extension(cache, ".sjco").empty());
}

TEST_CASE("sagejit-precompile: concurrent runs into one directory all succeed") {
  const auto vendors = vendors_or_skip();
  if (!vendors) return;
  const auto [amd, nvidia] = *vendors;
  TempDir temp;
  const fs::path cache = temp.path / "cache";
  const std::string command = quote(SAGEJIT_TOOL_PRECOMPILE) + " " + precompile_arguments(cache, amd, nvidia);
  // Three processes at once; each writes its exit code, the shell waits for all of them.
  std::string script;
  for (int i = 0; i < 3; ++i)
    script += fmt::format("( {} > {} 2>&1; echo $? > {} ) & ", command, quote((temp.path / fmt::format("out{}", i)).string()),
                          quote((temp.path / fmt::format("rc{}", i)).string()));
  script += "wait";
  REQUIRE(std::system(("sh -c " + quote(script)).c_str()) == 0);
  for (int i = 0; i < 3; ++i) {
    std::ifstream rc(temp.path / fmt::format("rc{}", i));
    std::ifstream out(temp.path / fmt::format("out{}", i));
    const std::string output((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
    int code = -1;
    rc >> code;
    INFO("run " << i << ": " << output);
    CHECK(code == 0);
  }
  const std::size_t expected_objects = (amd ? 2 : 0) + (nvidia ? 2 : 0);
  CHECK(files_with_extension(cache, ".sjco").size() == expected_objects);
  CHECK(run(SAGEJIT_TOOL_CACHE, "--cache-dir " + quote(cache.string()) + " verify").exit_code == 0);
}

TEST_CASE("bad arguments are usage errors that name the argument") {
  struct Case {
    const char* tool;
    std::string arguments;
    std::string named;
  };
  const std::vector<Case> cases{
      {SAGEJIT_TOOL_PRECOMPILE, "", "--arch"},
      {SAGEJIT_TOOL_PRECOMPILE, "--arch gfx1201 --jobs 0", "--jobs"},
      {SAGEJIT_TOOL_PRECOMPILE, "--arch gfx1201 --compiler gcc", "--compiler"},
      {SAGEJIT_TOOL_PRECOMPILE, "--arch gfx1201 --head-dim 96", "--head-dim"},
      {SAGEJIT_TOOL_PRECOMPILE, "--arch gfx9999", "gfx9999"},
      {SAGEJIT_TOOL_PRECOMPILE, "--arch sm_90 --compiler clang --dry-run", "--compiler"},
      {SAGEJIT_TOOL_PRECOMPILE, "--arch gfx1201 --kernels no_such_kernel --dry-run", "--kernels"},
      {SAGEJIT_TOOL_PRECOMPILE, "--arch gfx1201 --no-such-flag", "--no-such-flag"},
      {SAGEJIT_TOOL_CACHE, "", "subcommand"},
      {SAGEJIT_TOOL_CACHE, "frobnicate", "frobnicate"},
      {SAGEJIT_TOOL_CACHE, "prune", "--max-size"},
      {SAGEJIT_TOOL_CACHE, "prune --max-size 12Q", "--max-size"},
      {SAGEJIT_TOOL_AUTOTUNE, "--shape 1,2,3 --out x.json", "--shape"},
      {SAGEJIT_TOOL_AUTOTUNE, "--shape 1,8,128,128,100 --out x.json", "D 100"},
      {SAGEJIT_TOOL_AUTOTUNE, "--shape 1,8,128,128,128", "--out"},
      {SAGEJIT_TOOL_AUTOTUNE, "--shape 1,8,128,128,128 --out x.json --candidates few", "--candidates"},
      {SAGEJIT_TOOL_SELFTEST, "--quick --bogus", "--bogus"},
      {SAGEJIT_TOOL_INFO, "--bogus", "--bogus"},
  };
  TempDir temp;
  for (const Case& c : cases) {
    // Run inside the temp dir (with its own cache) so nothing lands in the build tree or in HOME.
    const RunResult result = run_shell("cd " + quote(temp.path.string()) + " && SAGEJIT_CACHE_DIR=" +
                                       quote((temp.path / "c").string()) + " " + quote(c.tool) + " " + c.arguments);
    INFO(c.tool << " " << c.arguments << "\n" << result.output);
    CHECK(result.exit_code == 2);
    CHECK(result.output.find(c.named) != std::string::npos);
  }
}

TEST_CASE("every tool answers --help with exit 0") {
  for (const char* tool : {SAGEJIT_TOOL_PRECOMPILE, SAGEJIT_TOOL_CACHE, SAGEJIT_TOOL_INFO, SAGEJIT_TOOL_AUTOTUNE,
                           SAGEJIT_TOOL_SELFTEST}) {
    const RunResult result = run(tool, "--help");
    INFO(tool << "\n" << result.output);
    CHECK(result.exit_code == 0);
    CHECK(result.output.find("--help") != std::string::npos);
  }
}

TEST_CASE("sagejit-info works on this machine (with or without a GPU)") {
  TempDir temp;
  const RunResult result = run_shell("SAGEJIT_CACHE_DIR=" + quote((temp.path / "c").string()) + " " + quote(SAGEJIT_TOOL_INFO));
  INFO(result.output);
  CHECK(result.exit_code == 0);
  for (const char* expected : {"sagejit ", "GPU runtimes", "Kernel compilers", "Code-object caches", "Tuning tables",
                               "configs/gfx1201.json", "SAGEJIT_CACHE_DIR"})
    CHECK(result.output.find(expected) != std::string::npos);
  if (!gpu_present()) CHECK(result.output.find("No GPU found") != std::string::npos);
}

TEST_CASE("GPU tools without a GPU: a clear message and exit code 3") {
  if (gpu_present()) {
    MESSAGE("skipped: a GPU is present (the GPU tests cover these tools)");
    return;
  }
  TempDir temp;
  const std::string env = "SAGEJIT_CACHE_DIR=" + quote((temp.path / "c").string()) + " ";
  const RunResult selftest = run_shell(env + quote(SAGEJIT_TOOL_SELFTEST) + " --quick");
  INFO(selftest.output);
  CHECK(selftest.exit_code == 3);
  CHECK(selftest.output.find("no GPU") != std::string::npos);
  const RunResult autotune = run_shell(env + quote(SAGEJIT_TOOL_AUTOTUNE) + " --shape 1,8,256,256,128 --out " +
                                       quote((temp.path / "t.json").string()));
  INFO(autotune.output);
  CHECK(autotune.exit_code == 3);
  CHECK(autotune.output.find("no GPU") != std::string::npos);
  CHECK(!fs::exists(temp.path / "t.json"));
}

#else

TEST_CASE("tool tests") { MESSAGE("skipped: the tools are not built (SAGEJIT_BUILD_TOOLS=OFF)"); }

#endif
