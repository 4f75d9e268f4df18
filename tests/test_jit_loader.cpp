// The JIT loader with a fake device and a fake compiler: first calls from 16 threads compile and load
// once, later calls are map hits, handles come back for each entry, the compile is dumped when
// SAGEJIT_DUMP_DIR is set, a cached code object the runtime rejects is rebuilt, and the compiler
// choice follows the vendor and SAGEJIT_COMPILER.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "cache/code_cache.hpp"
#include "cache_test_support.hpp"
#include "fake_gpu_support.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "jit/compiler_choice.hpp"
#include "jit/jit.hpp"
#include "kernels/registry.hpp"

using namespace sagejit;
using sagejit::test::FakeModule;
using sagejit::test::fake_code_object;
namespace fs = std::filesystem;

namespace {

class FakeCompiler : public Compiler {
 public:
  CompilerKind kind() const override { return CompilerKind::clang; }
  std::string identity() const override { return "fake-clang " + version_; }
  std::string location() const override { return "(test)"; }
  std::vector<std::string> base_options(const std::string& target) const override {
    return {"-O3", "--offload-arch=" + target};
  }
  CompileResult compile(const CompileRequest& request) const override {
    ++compiles;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (request.source.find("sagejit_probe_axpy") == std::string::npos)
      fail(ErrorCode::compile_error, "{}: no probe entry in the source", request.name);
    CompileResult result;
    // The "code object" carries the source, so the fake device can check what it was given.
    result.code = fake_code_object(request.source);
    result.log = "fake: ok";
    result.effective_options = base_options(request.target);
    return result;
  }
  mutable std::atomic<int> compiles{0};
  std::string version_ = std::to_string(test::rng()());  // fresh identity: no stale keys across runs
};

class FakeDevice final : public test::FakeDeviceBase {
 public:
  FakeDevice() : FakeDeviceBase(Vendor::amd, "gfx1201:xnack-", 2) {}
  std::unique_ptr<LoadedModule> load_module(int ordinal, std::span<const std::byte> code) override {
    ++loads;
    if (reject_next.exchange(false)) fail(ErrorCode::device_error, "hipModuleLoadData: invalid image (test)");
    return FakeDeviceBase::load_module(ordinal, code);
  }

  std::atomic<int> loads{0};
  std::atomic<bool> reject_next{false};
};

TileConfig random_probe_config() { return {{"block", 128}, {"scale", 100 + static_cast<int>(test::rng()() % 100000)}}; }

}  // namespace

TEST_CASE("16 threads loading one kernel compile and load it once") {
  test::TempDir root;
  CodeCache cache(test::settings_for(root / "cache"));
  FakeCompiler compiler;
  FakeDevice device;
  const TileConfig config = random_probe_config();
  std::vector<LoadedKernel*> loaded(16);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < 16) std::this_thread::yield();
      loaded[t] = &load_kernel(device, 0, jit_probe_kernel, config, {}, compiler, cache);
    });
  for (auto& thread : threads) thread.join();
  CHECK(compiler.compiles.load() == 1);
  CHECK(device.loads.load() == 1);
  for (auto* kernel : loaded) CHECK(kernel == loaded[0]);
  const LoadedKernel& kernel = *loaded[0];
  CHECK(kernel.hit == CacheHit::compiled);
  CHECK(kernel.entries == std::vector<std::string>{"sagejit_probe_axpy"});
  REQUIRE(kernel.functions.size() == 1);
  CHECK(kernel.function("sagejit_probe_axpy") == kernel.functions[0]);
  CHECK_THROWS_AS(kernel.function("missing"), Error);
  CHECK(kernel.config == config_id(config));

  // Another ordinal loads its own module from the memory cache; nothing is compiled again.
  LoadedKernel& second = load_kernel(device, 1, jit_probe_kernel, config, {}, compiler, cache);
  CHECK(&second != &kernel);
  CHECK(second.hit == CacheHit::memory);
  CHECK(compiler.compiles.load() == 1);
  CHECK(device.loads.load() == 2);
  // The entry on disk is keyed for the full target.
  const auto files = test::entry_files(root / "cache");
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().find("gfx1201_xnack_") != std::string::npos);
}

TEST_CASE("a disk hit in a fresh cache, and a cached object the runtime rejects is rebuilt") {
  log::set_level(log::Level::off);
  test::TempDir root;
  FakeCompiler compiler;
  FakeDevice device;
  const TileConfig config = random_probe_config();
  {
    CodeCache cache(test::settings_for(root / "cache"));
    CHECK(load_kernel(device, 0, jit_probe_kernel, config, {}, compiler, cache).hit == CacheHit::compiled);
  }
  CodeCache fresh(test::settings_for(root / "cache"));
  device.reject_next = true;  // e.g. a driver older than the compiler that built the cached object
  LoadedKernel& kernel = load_kernel(device, 1, jit_probe_kernel, config, {}, compiler, fresh);
  CHECK(kernel.hit == CacheHit::compiled);
  CHECK(compiler.compiles.load() == 2);
  CHECK(kernel.functions.size() == 1);
  log::set_level(log::Level::warn);
}

TEST_CASE("SAGEJIT_DUMP_DIR receives source, options, code object and log of each compile") {
  test::TempDir root;
  ::setenv("SAGEJIT_DUMP_DIR", (root / "dump").c_str(), 1);
  FakeCompiler compiler;
  FakeDevice device;
  CodeCache cache(test::settings_for(root / "cache"));
  const TileConfig config = random_probe_config();
  const LoadedKernel& kernel = load_kernel(device, 0, jit_probe_kernel, config, {}, compiler, cache);
  ::unsetenv("SAGEJIT_DUMP_DIR");
  const std::string stem = "jit_probe.block_128_scale_" + std::to_string(config.at("scale")) + ".gfx1201." +
                           kernel.key.hex();
  const fs::path dump = root / "dump";
  for (const char* extension : {".src", ".options.txt", ".co", ".log"}) {
    INFO("file " << stem + extension);
    CHECK(fs::exists(dump / (stem + extension)));
  }
  const auto source = test::read_bytes(dump / (stem + ".src"));
  const std::string source_text(reinterpret_cast<const char*>(source.data()), source.size());
  CHECK(test::read_bytes(dump / (stem + ".co")) == fake_code_object(source_text));  // the fake compiler's "code object"
  const auto options = test::read_bytes(dump / (stem + ".options.txt"));
  const std::string options_text(reinterpret_cast<const char*>(options.data()), options.size());
  CHECK(options_text.find("--offload-arch=gfx1201:xnack-") != std::string::npos);
}

TEST_CASE("one compiler policy: the vendor, --compiler, SAGEJIT_COMPILER, then what can build the target") {
  ::unsetenv("SAGEJIT_COMPILER");
  const Target gfx1201 = parse_target("gfx1201:xnack-"), sm90 = parse_target("sm_90");
  const auto message = [](auto&& call) {
    try {
      call();
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  CHECK(message([&] { choose_compiler(sm90, CompilerKind::clang); }).find("--compiler clang") != std::string::npos);
  CHECK(message([&] { choose_compiler(gfx1201, CompilerKind::nvrtc); }).find("--compiler nvrtc") != std::string::npos);
  ::setenv("SAGEJIT_COMPILER", "gcc", 1);
  CHECK(message([&] { choose_compiler(gfx1201); }).find("SAGEJIT_COMPILER=gcc") != std::string::npos);
  ::setenv("SAGEJIT_COMPILER", "nvrtc", 1);
  CHECK(message([&] { choose_compiler(gfx1201); }).find("SAGEJIT_COMPILER nvrtc cannot build amd") != std::string::npos);
  ::setenv("SAGEJIT_COMPILER", "clang", 1);
  CHECK(message([&] { choose_compiler(sm90); }).find("SAGEJIT_COMPILER clang cannot build nvidia") != std::string::npos);
  ::unsetenv("SAGEJIT_COMPILER");
  // Debian's hipRTC (ROCm 5.2) builds gfx1030 but not gfx12: the policy then takes the offline clang,
  // so a default run on gfx1201 works on such a machine (and finds what precompile built with it).
  bool hiprtc_loads = true, clang_found = true;
  try { (void)hiprtc_compiler(); } catch (const Error&) { hiprtc_loads = false; }
  try { (void)clang_compiler(); } catch (const Error&) { clang_found = false; }
  if (hiprtc_loads) CHECK(choose_compiler(parse_target("gfx1030")).compiler->kind() == CompilerKind::hiprtc);
  if (clang_found && (!hiprtc_loads || hiprtc_compiler().identity().rfind("hiprtc 5.", 0) == 0))
    CHECK(choose_compiler(gfx1201).compiler->kind() == CompilerKind::clang);
  if (!hiprtc_loads || !clang_found) MESSAGE("hipRTC or clang missing: part of the automatic choice not checked");
}

namespace {

// What sagejit-precompile does with the offline clang: the probe's entry keyed with that clang's
// identity in `system`, and the manifest naming it. Returns the keying stand-in compiler.
std::unique_ptr<Compiler> publish_prebuilt_probe(const fs::path& system, const TileConfig& config, const std::string& text) {
  std::unique_ptr<Compiler> builder = prebuilt_compiler(CompilerKind::clang, "clang 99.9.9");
  CodeCache publisher(test::settings_for(system));
  const KernelBuild build = plan_build(jit_probe_kernel, config, {}, "gfx1201:xnack-", *builder);
  publisher.get_or_compile(build.key, build.label, [&] { return fake_code_object(text); });
  record_prebuilt_compiler(system, {"clang", "clang 99.9.9"});
  return builder;
}

}  // namespace

TEST_CASE("a run accepts the system cache's prebuilt code objects of another compiler (its manifest)") {
  test::TempDir root;
  const fs::path system = root / "system";
  const TileConfig config = random_probe_config();
  const std::unique_ptr<Compiler> builder = publish_prebuilt_probe(system, config, "prebuilt object of sagejit_probe_axpy");
  CHECK(read_prebuilt_manifest(system) == std::vector<PrebuiltCompiler>{{"clang", "clang 99.9.9"}});
  CHECK_THROWS_AS(builder->compile(CompileRequest{"k", "", "gfx1201", {}}), Error);  // it only keys

  CodeCacheSettings settings = test::settings_for(root / "user");
  settings.system_dir = system;
  CodeCache cache(settings);
  FakeCompiler compiler;  // the run's own compiler (as hipRTC would be on a ROCm machine)
  FakeDevice device;
  const CompilerChoice choice = choose_compiler(parse_target("gfx1201:xnack-"), CompilerKind::clang, &cache);
  REQUIRE(choice.prebuilt.size() == (choice.compiler->identity() == "clang 99.9.9" ? 0u : 1u));
  const LoadedKernel& kernel = load_kernel(device, 0, jit_probe_kernel, config, {}, compiler, cache, choice.prebuilt);
  CHECK(compiler.compiles.load() == 0);
  CHECK(kernel.hit == CacheHit::system);
  CHECK(kernel.compiler == "clang 99.9.9");

  // Without the manifest's stand-in the same call compiles with its own compiler.
  FakeDevice other_device;
  const LoadedKernel& compiled = load_kernel(other_device, 0, jit_probe_kernel, config, {}, compiler, cache);
  CHECK(compiler.compiles.load() == 1);
  CHECK(compiled.hit == CacheHit::compiled);
}

// Decided in docs/ARCHITECTURE.md ("Which code objects a run accepts"): when the system cache holds
// another compiler's object (the wheel's, clang) and the user cache the run's own compiler's (hipRTC),
// the prebuilt one is loaded: it is the object CI checked and priced, the same on every machine.
TEST_CASE("with both a prebuilt object and one of the run's own compiler cached, the prebuilt one is loaded") {
  test::TempDir root;
  const fs::path system = root / "system";
  const TileConfig config = random_probe_config();
  publish_prebuilt_probe(system, config, "prebuilt by clang: sagejit_probe_axpy");
  CodeCacheSettings settings = test::settings_for(root / "user");
  settings.system_dir = system;
  FakeCompiler compiler;  // the run's own compiler, as hipRTC on a ROCm machine
  // The run's own object, from an earlier run. The JIT knows devices and caches by address (they are
  // process-wide objects), so this run's must not reuse the addresses of those: all stay alive.
  CodeCache user_only(test::settings_for(root / "user"));
  FakeDevice earlier_device;
  CHECK(load_kernel(earlier_device, 0, jit_probe_kernel, config, {}, compiler, user_only).hit == CacheHit::compiled);
  REQUIRE(compiler.compiles.load() == 1);
  CodeCache cache(settings);
  const CompilerChoice choice = choose_compiler(parse_target("gfx1201:xnack-"), CompilerKind::clang, &cache);
  REQUIRE(choice.prebuilt.size() == (choice.compiler->identity() == "clang 99.9.9" ? 0u : 1u));
  FakeDevice device;
  const LoadedKernel& kernel = load_kernel(device, 0, jit_probe_kernel, config, {}, compiler, cache, choice.prebuilt);
  CHECK(compiler.compiles.load() == 1);  // nothing compiled again
  CHECK(kernel.hit == CacheHit::system);
  CHECK(kernel.compiler == "clang 99.9.9");
}

TEST_CASE("the runtime and the tools key a kernel identically") {
  FakeCompiler compiler;
  const TileConfig config = random_probe_config();
  const KernelBuild build = plan_build(jit_probe_kernel, config, {}, "gfx1201:xnack-", compiler);
  CHECK(build.key == rendered_cache_key(build.rendered, compiler));
  CHECK(build.label.kernel == "jit_probe");
  CHECK(build.label.config == config_id(config));
  CHECK(build.label.target == "gfx1201:xnack-");
  // A different target, specialization or compiler version is a different key.
  CHECK(plan_build(jit_probe_kernel, config, {}, "gfx1200", compiler).key != build.key);
  FakeCompiler other;
  CHECK(plan_build(jit_probe_kernel, config, {}, "gfx1201:xnack-", other).key != build.key);
}

TEST_CASE("a compile output or a cached entry that is no ELF of the target is never loaded (issue 18)") {
  log::set_level(log::Level::off);
  test::TempDir root;
  const TileConfig config = random_probe_config();
  class RawCompiler : public FakeCompiler {
   public:
    CompileResult compile(const CompileRequest& request) const override {
      CompileResult result = FakeCompiler::compile(request);
      result.code.erase(result.code.begin(), result.code.begin() + 64);  // the bare source: no ELF header
      return result;
    }
  } raw;
  {
    CodeCache cache(test::settings_for(root / "raw"));
    FakeDevice device;
    try {
      (void)load_kernel(device, 0, jit_probe_kernel, config, {}, raw, cache);
      FAIL("no error");
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::compile_error);
      CHECK(std::string(error.what()).find("unusable code object") != std::string::npos);
    }
    CHECK(device.loads.load() == 0);
    CHECK(test::entry_files(root / "raw").empty());
  }
  // An entry with sound checksums whose payload is no code object: evicted and compiled afresh.
  FakeCompiler compiler;
  CodeCache cache(test::settings_for(root / "cache"));
  const KernelBuild build = plan_build(jit_probe_kernel, config, {}, "gfx1201:xnack-", compiler);
  (void)cache.get_or_compile(build.key, build.label, [] { return test::random_bytes(200); });
  CodeCache fresh(test::settings_for(root / "cache"));
  FakeDevice device;
  const LoadedKernel& kernel = load_kernel(device, 0, jit_probe_kernel, config, {}, compiler, fresh);
  CHECK(kernel.hit == CacheHit::compiled);
  CHECK(compiler.compiles.load() == 1);
  CHECK(device.loads.load() == 1);
  log::set_level(log::Level::warn);
}
