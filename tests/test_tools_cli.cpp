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

#include "random_support.hpp"
#include "skip_support.hpp"
#include <fmt/format.h>

#include "compiler/compiler.hpp"
#include "core/error.hpp"
#include "device/device.hpp"

namespace fs = std::filesystem;

#if defined(SAGEJIT_TOOL_PRECOMPILE)

#include "support/code_object_stats.hpp"  // tools/support, linked by tests/tools.cmake

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

// True after a "skipped" message when this machine has no AMDGPU-capable clang (the tests that
// precompile gfx1201 objects need one).
bool skipped_without_clang() {
  if (compiler_available(sagejit::CompilerKind::clang)) return false;
  SAGEJIT_SKIP("no AMDGPU-capable clang");
  return true;
}

// Which vendors this machine can precompile for; nullopt after a "skipped" message when neither.
struct Vendors {
  bool amd = false, nvidia = false;
};
std::optional<Vendors> vendors_or_skip() {
  const Vendors vendors{compiler_available(sagejit::CompilerKind::clang), compiler_available(sagejit::CompilerKind::nvrtc)};
  if (!vendors.amd && !vendors.nvidia) {
    SAGEJIT_SKIP("neither clang (AMDGPU) nor NVRTC is available");
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
  if (!amd) SAGEJIT_SKIP("gfx1201 part: no AMDGPU-capable clang");
  if (!nvidia) SAGEJIT_SKIP("sm_90 part: NVRTC not available");
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
  if (skipped_without_clang()) return;
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
      {SAGEJIT_TOOL_PRECOMPILE, "--arch gfx1201:bogus+ --dry-run", "gfx1201:bogus+"},
      {SAGEJIT_TOOL_PRECOMPILE, "--arch gfx1201 --jobs 0", "1 to 4096"},
      {SAGEJIT_TOOL_PRECOMPILE, "--arch sm_90 --compiler clang --dry-run", "--compiler"},
      {SAGEJIT_TOOL_PRECOMPILE, "--arch gfx1201 --kernels no_such_kernel --dry-run", "--kernels"},
      {SAGEJIT_TOOL_PRECOMPILE, "--arch gfx1201 --no-such-flag", "--no-such-flag"},
      {SAGEJIT_TOOL_CACHE, "", "subcommand"},
      {SAGEJIT_TOOL_CACHE, "frobnicate", "frobnicate"},
      {SAGEJIT_TOOL_CACHE, "prune", "--max-size"},
      {SAGEJIT_TOOL_CACHE, "prune --max-size 12Q", "--max-size"},
      {SAGEJIT_TOOL_CACHE, "prune --max-size garbage", "0 removes every entry"},
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
    // The documented one-line form (docs/TOOLS.md), CLI11's own errors included; no 300-digit ranges.
    CHECK(result.output.find(": error (invalid argument): ") != std::string::npos);
    CHECK(result.output.find("no cap") == std::string::npos);
    CHECK(result.output.find("179769313486231570") == std::string::npos);  // DBL_MAX as a range bound
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
    SAGEJIT_SKIP("a GPU is present (the GPU tests cover these tools)");
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

// ---- Issue 18: no file of another user touched, no unbounded wait, no silent success, no abort ----

namespace {

bool running_as_root() { return ::geteuid() == 0; }

std::string mode_of(const fs::path& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return "missing";
  return fmt::format("{:o}", info.st_mode & 07777);
}

void write_text_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A stand-in for SAGEJIT_CLANG: answers --version like clang++-22, runs `body` for a compile.
fs::path fake_clang(const fs::path& dir, const std::string& name, const std::string& body) {
  const fs::path script = dir / name;
  write_text_file(script, "#!/bin/sh\ncase \"$1\" in --version) exec clang++-22 --version;; esac\n" + body + "\n");
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

const std::string one_kernel = "--arch gfx1201 --compiler clang --kernels jit_probe --jobs 1 ";

}  // namespace

TEST_CASE("--system-cache in a directory another user controls: refused, nothing chmod-ed or deleted (root)") {
  if (skipped_without_clang()) return;
  if (!running_as_root()) {
    SAGEJIT_SKIP("needs root to make a directory owned by another user (nobody)");
    return;
  }
  TempDir temp;
  write_text_file(temp.path / "victim", "secret\n");
  fs::permissions(temp.path / "victim", fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  // The issue's /tmp/teamcache: 0777, owned by another user, holding b.sjco -> the victim's file.
  const fs::path team = temp.path / "team";
  fs::create_directories(team);
  REQUIRE(::chown(team.c_str(), 65534, 65534) == 0);
  REQUIRE(::chmod(team.c_str(), 0777) == 0);
  fs::create_symlink(temp.path / "victim", team / "b.sjco");
  const RunResult shared = run(SAGEJIT_TOOL_PRECOMPILE, one_kernel + "--system-cache " + quote(team.string()));
  INFO(shared.output);
  CHECK(shared.exit_code == 1);
  CHECK(shared.output.find("cannot store code objects there") != std::string::npos);
  CHECK(shared.output.find("system cache ready") == std::string::npos);
  CHECK(mode_of(temp.path / "victim") == "600");

  // The planted parent/cache -> rootdir: a 0700 dir with a locks/ subtree stays as it was.
  const fs::path rootdir = temp.path / "rootdir", parent = temp.path / "parent";
  fs::create_directories(rootdir / "locks");
  write_text_file(rootdir / "locks" / "keep", "x");
  REQUIRE(::chmod(rootdir.c_str(), 0700) == 0);
  fs::create_directories(parent);
  REQUIRE(::chown(parent.c_str(), 65534, 65534) == 0);
  REQUIRE(::chmod(parent.c_str(), 0777) == 0);
  fs::create_symlink(rootdir, parent / "cache");
  const RunResult planted = run(SAGEJIT_TOOL_PRECOMPILE, one_kernel + "--system-cache " + quote((parent / "cache").string()));
  INFO(planted.output);
  CHECK(planted.exit_code == 1);
  CHECK(mode_of(rootdir) == "700");
  CHECK(fs::exists(rootdir / "locks" / "keep"));
}

TEST_CASE("--system-cache: parents 0755 under umask 000, and a symlinked entry name is never chmod-ed through") {
  if (skipped_without_clang()) return;
  TempDir temp;
  const fs::path system = temp.path / "a" / "b" / "c";
  const RunResult made = run_shell("umask 000 && " + quote(SAGEJIT_TOOL_PRECOMPILE) + " " + one_kernel +
                                   "--system-cache " + quote(system.string()));
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  CHECK(mode_of(temp.path / "a") == "755");
  CHECK(mode_of(temp.path / "a" / "b") == "755");
  CHECK(mode_of(system) == "755");
  for (const auto& entry : files_with_extension(system, ".sjco")) CHECK(mode_of(entry) == "644");

  // In our own system cache, a symlink named like an entry: left alone, the victim keeps its mode,
  // and the run fails instead of saying "ready".
  write_text_file(temp.path / "victim", "secret\n");
  fs::permissions(temp.path / "victim", fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  fs::create_symlink(temp.path / "victim", system / "b.sjco");
  const RunResult again = run(SAGEJIT_TOOL_PRECOMPILE, one_kernel + "--system-cache " + quote(system.string()));
  INFO(again.output);
  CHECK(again.exit_code == 1);
  CHECK(again.output.find("b.sjco") != std::string::npos);
  CHECK(mode_of(temp.path / "victim") == "600");
}

TEST_CASE("a compile worker that cannot be started is a named error, not an abort (RLIMIT_NPROC)") {
  if (!running_as_root() || std::system("command -v prlimit >/dev/null && command -v setpriv >/dev/null") != 0) {
    SAGEJIT_SKIP("needs root, prlimit and setpriv to run as an unprivileged user under a process limit");
    return;
  }
  TempDir temp;
  fs::permissions(temp.path, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::replace);
  const fs::path cache = temp.path / "nobody-cache";
  fs::create_directories(cache);
  REQUIRE(::chown(cache.c_str(), 65534, 65534) == 0);
  // 4 tasks for uid 65534: the tool and 3 more threads; the pool asks for 16 (every gfx1201 job).
  const RunResult limited = run_shell("prlimit --nproc=4 setpriv --reuid=65534 --regid=65534 --clear-groups " +
                                      quote(SAGEJIT_TOOL_PRECOMPILE) + " --arch gfx1201 --compiler clang -j 16 --cache-dir " +
                                      quote(cache.string()));
  INFO(limited.output);
  CHECK(limited.exit_code == 1);  // 134 was std::terminate ("terminate called without an active exception")
  CHECK(limited.output.find("sagejit-precompile's compile workers (-j 16): could not start thread") != std::string::npos);
  CHECK(limited.output.find("RLIMIT_NPROC") != std::string::npos);
}

TEST_CASE("entries removed while a precompile runs are reported as removed, not as a cap too small") {
  if (skipped_without_clang()) return;
  TempDir temp;
  const fs::path cache = temp.path / "c";
  // A clang that compiles, then empties the cache (as `sagejit-cache clear` from another shell does).
  const fs::path clearing = fake_clang(temp.path, "clearing-clang",
                                       "clang++-22 \"$@\" || exit $?\nrm -f " + quote(cache.string()) + "/*.sjco");
  const RunResult result = run_shell("SAGEJIT_CLANG=" + quote(clearing.string()) + " " + quote(SAGEJIT_TOOL_PRECOMPILE) +
                                     " --arch gfx1201 --compiler clang --kernels jit_probe,probe --jobs 1 --cache-dir " +
                                     quote(cache.string()));
  INFO(result.output);
  CHECK(result.exit_code == 1);
  CHECK(result.output.find("are not stored in") != std::string::npos);
  CHECK(result.output.find("stored and then removed by something else") != std::string::npos);
  CHECK(result.output.find("is smaller than the entries") == std::string::npos);
}

TEST_CASE("precompile --dry-run counts only valid entries as cached: a truncated or random one is to compile") {
  if (skipped_without_clang()) return;
  TempDir temp;
  const fs::path cache = temp.path / "c";
  const std::string arguments = one_kernel + "--cache-dir " + quote(cache.string());
  REQUIRE(run(SAGEJIT_TOOL_PRECOMPILE, arguments).exit_code == 0);
  const auto entries = files_with_extension(cache, ".sjco");
  REQUIRE(entries.size() == 1);
  const RunResult good = run(SAGEJIT_TOOL_PRECOMPILE, arguments + " --dry-run");
  INFO(good.output);
  CHECK(good.output.find("0 to compile, 1 already cached") != std::string::npos);
  const auto size = fs::file_size(entries[0]);
  fs::resize_file(entries[0], size / 2);
  const RunResult truncated = run(SAGEJIT_TOOL_PRECOMPILE, arguments + " --dry-run");
  INFO(truncated.output);
  CHECK(truncated.output.find("1 to compile (1 over a bad entry), 0 already cached") != std::string::npos);
  CHECK(truncated.output.find("to compile (bad entry: ") != std::string::npos);
  std::string noise(size, '\0');
  for (char& c : noise) c = static_cast<char>(sagejit::test::logged_rng()());  // seed logged, replayable
  write_text_file(entries[0], noise);
  const RunResult garbage = run(SAGEJIT_TOOL_PRECOMPILE, arguments + " --dry-run");
  INFO(garbage.output);
  CHECK(garbage.output.find("1 to compile (1 over a bad entry), 0 already cached") != std::string::npos);
}

TEST_CASE("a hung compiler is killed after SAGEJIT_COMPILE_TIMEOUT with an error naming it") {
  if (skipped_without_clang()) return;
  TempDir temp;
  const fs::path slow = fake_clang(temp.path, "slow-clang", "sleep 1000");
  const RunResult result = run_shell("SAGEJIT_CLANG=" + quote(slow.string()) + " SAGEJIT_COMPILE_TIMEOUT=1 " +
                                     quote(SAGEJIT_TOOL_PRECOMPILE) + " " + one_kernel + "--cache-dir " +
                                     quote((temp.path / "c").string()));
  INFO(result.output);
  CHECK(result.exit_code == 1);
  CHECK(result.output.find("SAGEJIT_COMPILE_TIMEOUT") != std::string::npos);
  CHECK(result.output.find("within 1 s") != std::string::npos);
}

TEST_CASE("stderr that cannot be written never aborts a tool, nor fails a compile") {
  if (skipped_without_clang()) return;
  TempDir temp;
  const fs::path cache = temp.path / "c";
  // In a subshell, so that run_shell's own 2>&1 does not override the redirection under test.
  const RunResult full = run_shell("(" + quote(SAGEJIT_TOOL_PRECOMPILE) + " " + one_kernel + "--cache-dir " +
                                   quote(cache.string()) + " 2>/dev/full)");
  INFO(full.output);
  CHECK(full.exit_code == 0);
  CHECK(full.output.find("1 compiled") != std::string::npos);
  CHECK(files_with_extension(cache, ".sjco").size() == 1);
  // An error to report with stderr closed: exit 1 (the error), not 134 (std::terminate).
  write_text_file(temp.path / "file", "x");
  const RunResult closed = run_shell("(" + quote(SAGEJIT_TOOL_CACHE) + " --cache-dir " +
                                     quote((temp.path / "file").string()) + " clear 2>&-)");
  CHECK(closed.exit_code == 1);
}

TEST_CASE("a precompile that stores less than it compiled is an error") {
  if (skipped_without_clang()) return;
  TempDir temp;
  // A directory others may write is refused: no compile reported as done into it.
  const fs::path open_dir = temp.path / "open";
  fs::create_directories(open_dir);
  REQUIRE(::chmod(open_dir.c_str(), 0777) == 0);
  const RunResult refused = run(SAGEJIT_TOOL_PRECOMPILE, one_kernel + "--cache-dir " + quote(open_dir.string()));
  INFO(refused.output);
  CHECK(refused.exit_code == 1);
  CHECK(refused.output.find("cannot store code objects there") != std::string::npos);
  CHECK(refused.output.find("compiled (") == std::string::npos);
  // A cap below one entry: compiled, not stored, said so.
  const RunResult capped = run_shell("SAGEJIT_CACHE_MAX_SIZE=1 " + quote(SAGEJIT_TOOL_PRECOMPILE) + " " + one_kernel +
                                     "--cache-dir " + quote((temp.path / "capped").string()));
  INFO(capped.output);
  CHECK(capped.exit_code == 1);
  CHECK(capped.output.find("1 of 1 code objects are not stored") != std::string::npos);
  CHECK(capped.output.find("SAGEJIT_CACHE_MAX_SIZE") != std::string::npos);
  // A full disk (a 64 KiB tmpfs; root only).
  const fs::path small = temp.path / "small";
  fs::create_directories(small);
  if (!running_as_root() || std::system(("mount -t tmpfs -o size=64k,mode=0700 tmpfs " + quote(small.string()) +
                                         " 2>/dev/null").c_str()) != 0) {
    SAGEJIT_SKIP("full-disk part: cannot mount a small tmpfs here");
    return;
  }
  write_text_file(small / "filler", std::string(60 * 1024, 'x'));
  const RunResult full = run(SAGEJIT_TOOL_PRECOMPILE, "--arch gfx1201 --compiler clang --kernels jit_probe,probe --jobs 1 "
                                                      "--cache-dir " + quote((small / "c").string()));
  INFO(full.output);
  (void)std::system(("umount " + quote(small.string())).c_str());
  CHECK(full.exit_code == 1);
  CHECK(full.output.find("not stored") != std::string::npos);
}

TEST_CASE("every tool exits nonzero when its output cannot be written") {
  TempDir temp;
  const std::string env = "SAGEJIT_CACHE_DIR=" + quote((temp.path / "c").string()) + " ";
  for (const std::string& command : {quote(SAGEJIT_TOOL_INFO), quote(SAGEJIT_TOOL_CACHE) + " stat",
                                     quote(SAGEJIT_TOOL_PRECOMPILE) + " --arch gfx1201 --dry-run",
                                     quote(SAGEJIT_TOOL_CACHE) + " --help"}) {
    // (The subshell keeps run_shell's 2>&1 from sending stderr to /dev/full too.)
    const RunResult result = run_shell("(" + env + command + " >/dev/full)");
    INFO(command << "\n" << result.output);
    CHECK(result.exit_code == 1);
    CHECK(result.output.find("cannot write the standard output") != std::string::npos);
    const RunResult closed = run_shell("(" + env + command + " >&-)");
    INFO(closed.output);
    CHECK(closed.exit_code == 1);
  }
}

TEST_CASE("sagejit-cache stat and precompile --dry-run create no directory; a read-only user can still stat") {
  TempDir temp;
  const RunResult stat = run(SAGEJIT_TOOL_CACHE, "--cache-dir " + quote((temp.path / "s" / "c").string()) + " stat");
  INFO(stat.output);
  CHECK(stat.exit_code == 0);
  CHECK(!fs::exists(temp.path / "s"));
  const RunResult dry = run(SAGEJIT_TOOL_PRECOMPILE, "--arch gfx1201 --dry-run --cache-dir " + quote((temp.path / "d").string()));
  INFO(dry.output);
  CHECK(dry.exit_code == 0);
  CHECK(!fs::exists(temp.path / "d"));
  const RunResult cleared = run(SAGEJIT_TOOL_CACHE, "--cache-dir " + quote((temp.path / "x").string()) + " clear");
  INFO(cleared.output);
  CHECK(cleared.exit_code == 0);
  CHECK(!fs::exists(temp.path / "x"));
  const RunResult root_dir = run_shell("SAGEJIT_CACHE_DIR=/ " + quote(SAGEJIT_TOOL_CACHE) + " stat");
  INFO(root_dir.output);
  CHECK(root_dir.output.find("root directory") != std::string::npos);
}

TEST_CASE("compiler output: a runaway log is shortened, a non-ELF object is never stored, a missing clang is named") {
  if (skipped_without_clang()) return;
  TempDir temp;
  const fs::path loud = fake_clang(temp.path, "loud-clang", "head -c 10000000 /dev/zero | tr '\\0' e; echo; exit 1");
  const RunResult noisy = run_shell("SAGEJIT_CLANG=" + quote(loud.string()) + " " + quote(SAGEJIT_TOOL_PRECOMPILE) + " " +
                                    one_kernel + "--cache-dir " + quote((temp.path / "c1").string()));
  CHECK(noisy.exit_code == 1);
  CHECK(noisy.output.size() < 200 * 1024);
  CHECK(noisy.output.find("bytes of compiler output cut") != std::string::npos);

  const fs::path fake = fake_clang(temp.path, "fake-clang",
                                   "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && echo 'not an elf' > \"$2\"; shift; done; exit 0");
  const RunResult bogus = run_shell("SAGEJIT_CLANG=" + quote(fake.string()) + " " + quote(SAGEJIT_TOOL_PRECOMPILE) + " " +
                                    one_kernel + "--cache-dir " + quote((temp.path / "c2").string()));
  INFO(bogus.output);
  CHECK(bogus.exit_code == 1);
  CHECK(bogus.output.find("unusable code object") != std::string::npos);
  CHECK(bogus.output.find("EM_AMDGPU") != std::string::npos);
  CHECK(files_with_extension(temp.path / "c2", ".sjco").empty());

  const RunResult missing = run_shell("SAGEJIT_CLANG=/nonexistent/clang " + quote(SAGEJIT_TOOL_PRECOMPILE) + " " +
                                      one_kernel + "--cache-dir " + quote((temp.path / "c3").string()));
  INFO(missing.output);
  CHECK(missing.exit_code == 4);
  CHECK(missing.output.find("error (runtime or compiler not found)") != std::string::npos);
  CHECK(missing.output.find("GPU runtime not found") == std::string::npos);
}

TEST_CASE("--emit-dir replaces symlinks planted under its predictable names, never writes through them") {
  if (skipped_without_clang()) return;
  TempDir temp;
  const fs::path first = temp.path / "first", emit = temp.path / "emit";
  REQUIRE(run(SAGEJIT_TOOL_PRECOMPILE, one_kernel + "--cache-dir " + quote((temp.path / "c").string()) + " --emit-dir " +
                                           quote(first.string())).exit_code == 0);
  const auto objects = files_with_extension(first, ".co");
  REQUIRE(objects.size() == 1);
  write_text_file(temp.path / "bashrc", "precious\n");
  fs::create_directories(emit);
  fs::permissions(emit, fs::perms::owner_all, fs::perm_options::replace);
  const std::string name = objects[0].filename().string();
  fs::create_symlink(temp.path / "bashrc", emit / name);
  fs::create_symlink(temp.path / "bashrc", emit / (name + ".tmp"));
  const RunResult result = run(SAGEJIT_TOOL_PRECOMPILE, one_kernel + "--cache-dir " + quote((temp.path / "c").string()) +
                                                           " --emit-dir " + quote(emit.string()));
  INFO(result.output);
  CHECK(result.exit_code == 0);
  std::ifstream in(temp.path / "bashrc");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "precious\n");
  CHECK(fs::is_regular_file(fs::symlink_status(emit / name)));
}

TEST_CASE("SAGEJIT_LOG is accepted in any case; a wrong value still warns") {
  TempDir temp;
  const std::string tail = " " + quote(SAGEJIT_TOOL_CACHE) + " --cache-dir " + quote((temp.path / "c").string()) + " stat";
  const RunResult upper = run_shell("SAGEJIT_LOG=INFO" + tail);
  INFO(upper.output);
  CHECK(upper.exit_code == 0);
  CHECK(upper.output.find("is not one of") == std::string::npos);
  const RunResult wrong = run_shell("SAGEJIT_LOG=loud" + tail);
  CHECK(wrong.output.find("SAGEJIT_LOG=loud is not one of") != std::string::npos);
}

#else

TEST_CASE("tool tests") { SAGEJIT_SKIP("the tools are not built (SAGEJIT_BUILD_TOOLS=OFF)"); }

#endif
