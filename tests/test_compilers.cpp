// The three kernel compilers, for real, on the CPU: NVRTC (sm_90), the offline clang (gfx1201,
// WMMA in the disassembly) and Debian's hipRTC 5.2 (gfx1030; it cannot target gfx11/12). Each case
// skips with a message only when that compiler is absent from this machine.
#include <doctest/doctest.h>

#include "skip_support.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <stdlib.h>

#include "compiler/compile_diagnostics.hpp"
#include "compiler/compiler.hpp"
#include "core/error.hpp"
#include "core/target.hpp"
#include "platform/private_temp_dir.hpp"
#include "platform/subprocess.hpp"

using namespace sagejit;

namespace {

void check_identity(const Compiler& compiler, const char* prefix) {
  const std::string identity = compiler.identity();
  CHECK(identity.rfind(prefix, 0) == 0);
  CHECK(identity.find_first_of("0123456789") != std::string::npos);
  CHECK(compiler.identity() == identity);                   // stable within the process
  CHECK(sagejit::compiler(compiler.kind()).identity() == identity);  // and through the registry
  CHECK_FALSE(compiler.location().empty());
}

// Returns the compiler, its identity checked (it starts with `identity_prefix`), or nullptr after a
// MESSAGE saying what was missing.
const Compiler* available(CompilerKind kind, const char* identity_prefix) {
  const Compiler* found = nullptr;
  try {
    found = &compiler(kind);
  } catch (const Error& error) {
    REQUIRE(error.code() == ErrorCode::runtime_not_found);
    SAGEJIT_SKIP(to_string(kind) << " is not available here: " << std::string(error.what()));
    return nullptr;
  }
  check_identity(*found, identity_prefix);
  return found;
}

bool is_elf(const std::vector<std::byte>& code) {
  return code.size() > 4 && std::memcmp(code.data(), "\x7f" "ELF", 4) == 0;
}

CompileResult timed_compile(const Compiler& compiler, const CompileRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  CompileResult result = compiler.compile(request);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE(compiler.identity(), " cold compile of ", request.name, " for ", request.target, ": ", seconds, " s, ",
          result.code.size(), " bytes");
  return result;
}

// The error names line 4 of the rendered source and shows that line; with `foreign_target`, asking
// for options for another vendor's target throws.
void check_compile_error(const Compiler& compiler, const std::string& target, const std::string& source,
                         const char* foreign_target = nullptr) {
  if (foreign_target != nullptr) CHECK_THROWS_AS(compiler.base_options(foreign_target), Error);
  CompileRequest broken{"broken.probe", source, target, {}};
  try {
    compiler.compile(broken);
    FAIL("a broken kernel compiled");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::compile_error);
    const std::string message = error.what();
    CHECK(message.find("line 4") != std::string::npos);
    CHECK(message.find("sj_missing_identifier") != std::string::npos);
    CHECK(message.find("compiler log:") != std::string::npos);
  }
}

const char* kNvrtcKernel = R"(
extern "C" __global__ void add_scaled(const unsigned* x, unsigned* y, unsigned a, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

const char* kNvrtcBroken = R"(
extern "C" __global__ void broken(unsigned* y) {
  const unsigned i = threadIdx.x;
  y[i] = sj_missing_identifier;
}
)";

// -nogpuinc: the source spells out what HIP headers would define (as kernel_src/common/prelude.h).
const char* kWmmaKernel = R"(
#define __global__ __attribute__((global))
typedef int v2i __attribute__((ext_vector_type(2)));
typedef int v8i __attribute__((ext_vector_type(8)));
extern "C" __global__ void wmma_iu8(const v2i* a, const v2i* b, v8i* c) {
  const unsigned lane = __builtin_amdgcn_workitem_id_x();
  c[lane] = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32_gfx12(true, a[lane], true, b[lane], c[lane], false);
}
)";

const char* kHipBroken = R"(
#define __global__ __attribute__((global))
extern "C" __global__ void broken(unsigned* y) {
  y[__builtin_amdgcn_workitem_id_x()] = sj_missing_identifier;
}
)";

// Plain kernel for hipRTC: hipRTC provides __global__ itself, clang -nogpuinc does not.
const char* kHiprtcKernel = R"(
#if !defined(__global__)
#define __global__ __attribute__((global))
#endif
extern "C" __global__ void add_scaled(const unsigned* x, unsigned* y, unsigned a, unsigned n) {
  const unsigned i = __builtin_amdgcn_workgroup_id_x() * 256u + __builtin_amdgcn_workitem_id_x();
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

std::string disassemble(const std::vector<std::byte>& code, const std::string& mcpu) {
  std::string objdump = SAGEJIT_TEST_OBJDUMP;
  if (objdump.empty()) objdump = find_executable("llvm-objdump-22");
  if (objdump.empty()) return {};
  PrivateTempDir directory("sagejit-test-objdump");
  {
    std::ofstream out(directory.file("k.co"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(code.data()), static_cast<std::streamsize>(code.size()));
  }
  const int status = run_process({objdump, "-d", "--mcpu=" + mcpu, directory.file("k.co")}, directory.file("out.txt"));
  std::ifstream in(directory.file("out.txt"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE_MESSAGE(status == 0, text);
  return text;
}

}  // namespace

TEST_CASE("compiler kinds round-trip and unknown names are refused") {
  for (const auto kind : {CompilerKind::nvrtc, CompilerKind::hiprtc, CompilerKind::clang})
    CHECK(parse_compiler_kind(to_string(kind)) == kind);
  try {
    parse_compiler_kind("nvcc");
    FAIL("nvcc accepted");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::invalid_argument);
    CHECK(std::string(error.what()).find("nvrtc, hiprtc, clang") != std::string::npos);
  }
}

TEST_CASE("target names are validated per vendor") {
  struct TargetName {
    const char* name;
    bool nvidia, amd;
  };
  const TargetName names[] = {
      {"sm_90", true, false},  {"sm_90a", true, false},  {"sm_100", true, false},
      {"sm_9", false, false},  {"gfx1201", false, true}, {"sm_90 --use_fast_math", false, false},
      {"gfx90a", false, true}, {"gfx942:sramecc+:xnack-", false, true},
      {"gfx942:", false, false}, {"gfx942:xnack", false, false}, {"gfx1201 -mcumode", false, false},
  };
  for (const TargetName& target : names) {
    CAPTURE(target.name);
    CHECK(is_nvidia_target(target.name) == target.nvidia);
    CHECK(is_amd_target(target.name) == target.amd);
  }
  CHECK(target_arch("gfx942:sramecc+:xnack-") == "gfx942");
}

TEST_CASE("the first error's location is found in NVRTC and clang logs") {
  const std::string source = "line one\nline two\nthe third line\n";
  auto nvrtc = first_error_location("k.cu(3): error: identifier \"x\" is undefined\n", {"k.cu"}, source);
  REQUIRE(nvrtc.has_value());
  CHECK(nvrtc->line == 3);
  CHECK(nvrtc->source_line == "the third line");
  auto clang = first_error_location("k.hip:2:7: warning: unused\nk.hip:3:1: error: bad\n", {"k.hip"}, source);
  REQUIRE(clang.has_value());
  CHECK(clang->line == 3);
  auto warning_only = first_error_location("k.hip:2:7: warning: unused\n", {"k.hip"}, source);
  CHECK_FALSE(warning_only.has_value());
  // ROCm 5's comgr reports the source as ".../input/CompileSource" whatever the program's name.
  auto comgr = first_error_location("/tmp/comgr-1/input/CompileSource:2:3: error: x\n", {"k.hip", "CompileSource"}, source);
  REQUIRE(comgr.has_value());
  CHECK(comgr->source_line == "line two");
  CHECK(source_file_stem("attention/bm128 bn64") == "attention_bm128_bn64");
}

TEST_CASE("NVRTC compiles a kernel for sm_90 to a cubin") {
  const Compiler* nvrtc = available(CompilerKind::nvrtc, "nvrtc ");
  if (nvrtc == nullptr) return;
  const auto options = nvrtc->base_options("sm_90");
  CHECK(std::find(options.begin(), options.end(), "--gpu-architecture=sm_90") != options.end());
  CHECK(std::find(options.begin(), options.end(), "--use_fast_math") == options.end());

  const CompileResult result = timed_compile(*nvrtc, {"add_scaled.test", kNvrtcKernel, "sm_90", {"-DSJ_TEST=1"}});
  CHECK(is_elf(result.code));
  CHECK(result.effective_options.back() == "-DSJ_TEST=1");
  check_compile_error(*nvrtc, "sm_90", kNvrtcBroken, "gfx1201");
}

TEST_CASE("clang compiles a gfx1201 WMMA kernel to a code object") {
  const Compiler* clang = available(CompilerKind::clang, "clang ");
  if (clang == nullptr) return;
  // The compile runs in a private temporary directory under $TMPDIR that is removed afterwards.
  const PrivateTempDir tmpdir("sagejit-test-tmpdir");
  const char* previous_tmpdir = std::getenv("TMPDIR");
  const std::string saved_tmpdir = previous_tmpdir != nullptr ? previous_tmpdir : "";
  ::setenv("TMPDIR", tmpdir.path().c_str(), 1);
  const CompileResult result = timed_compile(*clang, {"wmma_iu8.test", kWmmaKernel, "gfx1201", {}});
  if (previous_tmpdir != nullptr) ::setenv("TMPDIR", saved_tmpdir.c_str(), 1); else ::unsetenv("TMPDIR");
  CHECK(std::filesystem::is_empty(tmpdir.path()));
  REQUIRE(is_elf(result.code));
  const std::string disassembly = disassemble(result.code, "gfx1201");
  if (disassembly.empty()) {
    SAGEJIT_SKIP("the disassembly check: llvm-objdump-22 not found");
  } else {
    CHECK(disassembly.find("v_wmma_i32_16x16x16_iu8") != std::string::npos);
  }
  check_compile_error(*clang, "gfx1201", kHipBroken, "sm_90");
}

TEST_CASE("hipRTC compiles for gfx1030, returns the error log, and refuses gfx12 before ROCm 6.4") {
  const Compiler* hiprtc = available(CompilerKind::hiprtc, "hiprtc ");
  if (hiprtc == nullptr) return;
  const auto env_vars = hiprtc->option_env_vars();
  CHECK(std::find(env_vars.begin(), env_vars.end(), "HIPRTC_COMPILE_OPTIONS_APPEND") != env_vars.end());

  // Parse "hiprtc M.m..." to know whether gfx12 may be asked for at all (Debian's 5.2 would abort).
  const std::string version = hiprtc->identity().substr(7);
  const int major = std::stoi(version);
  const int minor = std::stoi(version.substr(version.find('.') + 1));
  const bool has_gfx12 = major > 6 || (major == 6 && minor >= 4);
  if (!has_gfx12) {
    try {
      hiprtc->compile({"wmma_iu8.test", kWmmaKernel, "gfx1201", {}});
      FAIL("hipRTC before 6.4 accepted gfx1201");
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::unsupported);
      CHECK(std::string(error.what()).find("clang") != std::string::npos);
    }
  }
  if (major >= 6) {
    MESSAGE("hipRTC ", hiprtc->identity(), " is not Debian's 5.2; the gfx1030 case below still applies");
  }
  const CompileResult result = timed_compile(*hiprtc, {"add_scaled.test", kHiprtcKernel, "gfx1030", {}});
  CHECK(is_elf(result.code));
  check_compile_error(*hiprtc, "gfx1030", kHipBroken);
}

// A hipRTC release's default optimisation level is not ours to rely on (hipRTC's -O3 vs hipcc's -O2
// differ already): both AMD compilers state one level, the same, in the options that key the cache.
TEST_CASE("hipRTC and the offline clang pin the same optimisation level (-O3)") {
  const auto levels = [](const std::vector<std::string>& options) {
    std::vector<std::string> found;
    for (const std::string& option : options)
      if (option.rfind("-O", 0) == 0) found.push_back(option);
    return found;
  };
  if (const Compiler* clang = available(CompilerKind::clang, "clang "))
    CHECK(levels(clang->base_options("gfx1201")) == std::vector<std::string>{"-O3"});
  if (const Compiler* hiprtc = available(CompilerKind::hiprtc, "hiprtc "))
    CHECK(levels(hiprtc->base_options("gfx1030")) == std::vector<std::string>{"-O3"});
}
