// Issue 18, outside the cache: files named by the user or with predictable names are never written
// through a planted symlink, a FIFO or a device never hangs or floods a reader, a hung compiler is
// killed after its timeout, stale private temp dirs are cleaned without following links, code objects
// are ELF of the target's machine, and a runaway compiler log is shortened.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "cache_test_support.hpp"
#include "compiler/code_object_check.hpp"
#include "compiler/compile_diagnostics.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/target.hpp"
#include "jit/compile_dump.hpp"
#include "platform/private_temp_dir.hpp"
#include "platform/safe_file.hpp"
#include "platform/subprocess.hpp"
#include "tuning/miss_record.hpp"
#include "tuning/tuning_table.hpp"

#include "hardening_test_support.hpp"

using namespace sagejit;
namespace fs = std::filesystem;

namespace {

using test::ScopedEnv;
using test::error_of;

std::string text_of(const fs::path& path) {
  const auto bytes = test::read_bytes(path);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void write_text(const fs::path& path, const std::string& text) {
  test::write_bytes(path, std::vector<std::byte>(reinterpret_cast<const std::byte*>(text.data()),
                                                 reinterpret_cast<const std::byte*>(text.data()) + text.size()));
}

void age(const fs::path& path, int seconds) {
  const timeval then{static_cast<time_t>(::time(nullptr) - seconds), 0};
  const timeval times[2] = {then, then};
  REQUIRE(::lutimes(path.c_str(), times) == 0);
}

}  // namespace

TEST_CASE("an atomic write replaces a symlink planted under the final name, never its target") {
  test::TempDir root;
  write_text(root / "victim", "precious");
  fs::create_symlink(root / "victim", root / "out.bin");
  const std::string text = "new contents";
  write_file_atomically(root / "out.bin", std::span(reinterpret_cast<const std::byte*>(text.data()), text.size()), 0600,
                        ErrorCode::internal);
  CHECK(text_of(root / "victim") == "precious");
  CHECK(fs::is_regular_file(fs::symlink_status(root / "out.bin")));
  CHECK(text_of(root / "out.bin") == text);
  CHECK(std::distance(fs::directory_iterator(root.path()), fs::directory_iterator()) == 2);  // no temp left
}

TEST_CASE("reading refuses a FIFO, a device and an oversized file, naming the file") {
  test::TempDir root;
  REQUIRE(::mkfifo((root / "fifo.json").c_str(), 0600) == 0);
  CHECK(error_of([&] { read_table_path_item((root / "fifo.json").string()); }).find("fifo.json: cannot read it: a FIFO") !=
        std::string::npos);
  const std::string zero = error_of([] { read_table_path_item("/dev/zero"); });
  CHECK(zero.find("/dev/zero") != std::string::npos);
  CHECK(zero.find("not a regular file") != std::string::npos);
  const fs::path big = root / "big.json";
  test::write_bytes(big, {});
  fs::resize_file(big, max_table_file_bytes + 1);
  const std::string too_big = error_of([&] { read_table_path_item(big.string()); });
  CHECK(too_big.find(big.string()) != std::string::npos);
  CHECK(too_big.find("size limit of a tuning table") != std::string::npos);
  // A directory item holding a FIFO named *.json is refused too.
  fs::create_directories(root / "tables");
  REQUIRE(::mkfifo((root / "tables/a.json").c_str(), 0600) == 0);
  CHECK(error_of([&] { read_table_path_item((root / "tables").string()); }).find("a.json: cannot read it: a FIFO") !=
        std::string::npos);
}

TEST_CASE("SAGEJIT_RECORD_MISSES never appends through a symlink or into another link of a file") {
  const test::QuietLog quiet;
  test::TempDir root;
  write_text(root / "victim", "precious\n");
  ProblemKey key;
  key.kernel = "attention";
  key.arch = "gfx1201";
  key.seq_q = key.seq_kv = 1024;
  fs::create_symlink(root / "victim", root / "misses.jsonl");
  MissRecorder((root / "misses.jsonl").string()).record(key);
  fs::create_hard_link(root / "victim", root / "hard.jsonl");
  MissRecorder((root / "hard.jsonl").string()).record(key);
  CHECK(text_of(root / "victim") == "precious\n");
  MissRecorder((root / "fresh.jsonl").string()).record(key);
  CHECK(read_recorded_misses((root / "fresh.jsonl").string()).size() == 1);
}

TEST_CASE("SAGEJIT_DUMP_DIR: planted symlinks under the predictable names are replaced, never followed") {
  const test::QuietLog quiet;
  test::TempDir root;
  const fs::path dump_dir = test::make_dir(root / "dump", 0700);
  write_text(root / "bashrc", "precious\n");
  CompileRequest request{"probe.kernel", "source text", "gfx1201", {}};
  const std::vector<std::byte> code = test::code_object_bytes(100);
  CompileDump dump{&request, test::random_key(), "fake 1.0", CompilerKind::clang, {"-O3"}, &code, "log text"};
  const std::string stem = "probe.kernel." + dump.key.hex();
  for (const char* extension : {".src", ".options.txt", ".co", ".log"})
    fs::create_symlink(root / "bashrc", dump_dir / (stem + extension));
  {
    ScopedEnv env("SAGEJIT_DUMP_DIR", dump_dir.string());
    dump_compile_if_requested(dump);
  }
  CHECK(text_of(root / "bashrc") == "precious\n");
  CHECK(text_of(dump_dir / (stem + ".src")) == "source text");
  CHECK(fs::is_regular_file(fs::symlink_status(dump_dir / (stem + ".co"))));
  // A dump dir others may write is refused (nothing written).
  const fs::path open_dir = test::make_dir(root / "open", 0777);
  {
    ScopedEnv env("SAGEJIT_DUMP_DIR", open_dir.string());
    dump_compile_if_requested(dump);
  }
  CHECK(fs::is_empty(open_dir));
}

TEST_CASE("a process that outlives its timeout is killed with its process group") {
  test::TempDir root;
  // The child starts a grandchild that would outlive it; both must be gone after the timeout.
  const std::string script = "sleep 30 & echo $! > '" + (root / "pid").string() + "'; wait";
  CHECK_THROWS_AS(run_process({"/bin/sh", "-c", script}, (root / "out.txt").string(), {}, std::chrono::milliseconds(500)),
                  ProcessTimeout);
  std::ifstream pid_file(root / "pid");
  long grandchild = 0;
  pid_file >> grandchild;
  REQUIRE(grandchild > 0);
  // Killed (maybe not reaped yet by init): signal 0 fails, or /proc shows a zombie.
  bool gone = ::kill(static_cast<pid_t>(grandchild), 0) != 0;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::ifstream stat_file(fmt::format("/proc/{}/stat", grandchild));
    std::string pid, name, state;
    stat_file >> pid >> name >> state;
    gone = !stat_file || state == "Z";
    if (!gone) ::usleep(10000);
  }
  CHECK(gone);
  CHECK(run_process({"/bin/sh", "-c", "exit 3"}, (root / "out.txt").string(), {}, std::chrono::seconds(30)) == 3);
}

TEST_CASE("SAGEJIT_COMPILE_TIMEOUT-style values: whole seconds from 1 to a week, else a named error") {
  for (const char* bad : {"0", "-5", "1.5", "10s", "abc", "604801"}) {
    ScopedEnv env("SAGEJIT_COMPILE_TIMEOUT", std::string(bad));
    const std::string message = error_of([] { (void)env::seconds("SAGEJIT_COMPILE_TIMEOUT", std::chrono::seconds(1)); });
    CHECK(message.find(std::string("SAGEJIT_COMPILE_TIMEOUT=\"") + bad + "\"") != std::string::npos);
  }
  ScopedEnv env("SAGEJIT_COMPILE_TIMEOUT", std::string("42"));
  CHECK(env::seconds("SAGEJIT_COMPILE_TIMEOUT", std::chrono::seconds(1)) == std::chrono::seconds(42));
}

TEST_CASE("stale private temp dirs of this user are removed; links, fresh dirs and other names are not") {
  test::TempDir root;
  ScopedEnv tmpdir("TMPDIR", root.path().string());
  const std::string prefix = "sagejit-test-sweep-" + test::random_text(8);
  fs::create_directories(root / (prefix + "-stale/sub"));
  write_text(root / (prefix + "-stale/sub/file"), "x");
  age(root / (prefix + "-stale"), 3 * 24 * 3600);
  fs::create_directories(root / (prefix + "-fresh"));
  fs::create_directories(root / "elsewhere");
  write_text(root / "elsewhere/keep", "x");
  fs::create_symlink(root / "elsewhere", root / (prefix + "-link"));
  age(root / (prefix + "-link"), 3 * 24 * 3600);
  fs::create_directories(root / "other-stale");
  age(root / "other-stale", 3 * 24 * 3600);
  {
    const PrivateTempDir fresh(prefix);
    CHECK(fs::is_directory(fresh.path()));
  }
  CHECK_FALSE(fs::exists(root / (prefix + "-stale")));
  CHECK(fs::exists(root / (prefix + "-fresh")));
  CHECK(fs::exists(root / "elsewhere/keep"));
  CHECK(fs::is_symlink(root / (prefix + "-link")));
  CHECK(fs::exists(root / "other-stale"));
}

TEST_CASE("a code object must be a 64-bit little-endian ELF of the target's machine") {
  const Target amd = parse_target("gfx1201"), nvidia = parse_target("sm_90");
  auto elf = [](int machine) {
    std::vector<std::byte> bytes = test::random_bytes(256);
    const unsigned char header[20] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0,
                                      static_cast<unsigned char>(machine & 0xff), static_cast<unsigned char>(machine >> 8)};
    for (std::size_t i = 0; i < sizeof header; ++i) bytes[i] = static_cast<std::byte>(header[i]);
    return bytes;
  };
  CHECK(code_object_problem(elf(elf_machine_amdgpu), amd).empty());
  CHECK(code_object_problem(elf(elf_machine_cuda), nvidia).empty());
  CHECK(code_object_problem(elf(elf_machine_cuda), amd).find("EM_AMDGPU") != std::string::npos);
  CHECK(code_object_problem(elf(elf_machine_amdgpu), nvidia).find("EM_CUDA") != std::string::npos);
  CHECK(code_object_problem(test::random_bytes(8), amd).find("too short") != std::string::npos);
  const std::string ptx = "//\n// Generated by NVIDIA NVVM Compiler\n.version 8.0\n.target sm_90\n" + std::string(100, ' ');
  CHECK(code_object_problem(std::span(reinterpret_cast<const std::byte*>(ptx.data()), ptx.size()), nvidia)
            .find("not an ELF") != std::string::npos);
  auto elf32 = elf(elf_machine_amdgpu);
  elf32[4] = std::byte{1};
  CHECK(code_object_problem(elf32, amd).find("64-bit") != std::string::npos);
}

TEST_CASE("a runaway compiler log keeps its head and tail and says how much was cut") {
  const std::string log = "HEAD" + std::string(10'000'000, 'e') + "TAIL";
  const std::string short_log = shorten_compiler_log(log);
  CHECK(short_log.size() < 70 * 1024);
  CHECK(short_log.starts_with("HEAD"));
  CHECK(short_log.ends_with("TAIL"));
  CHECK(short_log.find(fmt::format("[... {} bytes of compiler output cut ...]", log.size() - 64 * 1024)) !=
        std::string::npos);
  CHECK(shorten_compiler_log("small") == "small");
  const std::string message = error_of([&] { throw_compile_error("clang 22", "k", "gfx1201", {"k.hip"}, "src", log); });
  CHECK(message.size() < 70 * 1024);
  CHECK(message.find("bytes of compiler output cut") != std::string::npos);
}
