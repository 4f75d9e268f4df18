// Which HIP runtime, hipRTC and NVRTC the process uses (platform/runtime_discovery): the order of the
// rules (a) loaded > (b) SAGEJIT_*_LIBRARY > (c) handed-over dirs > (d) toolkit roots > (e) sonames,
// one HIP runtime per process, hipRTC from the HIP runtime's ROCm. The libraries are stand-ins
// (tests/runtime_stub.c, built by tests/runtime_discovery.cmake) copied into fake torch/lib,
// _rocm_sdk_core/lib, nvidia/cu13/lib, ROCM_PATH, /opt/rocm-* and /usr/local/cuda-* trees under a
// private temporary directory; the machine's own /opt, /usr/local and ROCM_PATH are never read, and
// rule (e) sees the stand-ins through LD_LIBRARY_PATH (set by ctest) ahead of Debian's HIP 5.2.
//
// Every case but the last releases what it loaded and starts by checking that no stand-in is loaded.
// The last case (doctest runs a file's cases in order) chooses the process's libraries, which stay.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "skip_support.hpp"

#include "compiler/rtc_compiler.hpp"
#include "core/error.hpp"
#include "platform/private_temp_dir.hpp"
#include "platform/runtime_discovery.hpp"
#include "sagejit/sagejit.h"

namespace fs = std::filesystem;
using namespace sagejit;

namespace {

const std::string kStubs = SAGEJIT_DISCOVERY_STUBS;

// The fake installations, built once per process.
struct FakeTrees {
  PrivateTempDir root{"sagejit-discovery-test"};
  std::string torch_lib, sdk_lib, cu13_lib, cuda_nvrtc_lib, rocm_path, opt, usr_local, hip_only_lib, mixed_lib;

  FakeTrees() {
    const std::string base = root.path();
    torch_lib = place("site/torch/lib", {{"hip6", "libamdhip64.so"}, {"hiprtc6", "libhiprtc.so"}});
    // TheRock's wheels: versioned files only, no unversioned link.
    sdk_lib = place("site/_rocm_sdk_core/lib", {{"hip7", "libamdhip64.so.7"}, {"hiprtc7", "libhiprtc.so.7"}});
    cu13_lib = place("site/nvidia/cu13/lib", {{"nvrtc13", "libnvrtc.so.13"}});
    cuda_nvrtc_lib = place("site/nvidia/cuda_nvrtc/lib", {{"nvrtc12", "libnvrtc.so.12"}});
    rocm_path = base + "/rocm-path";
    place("rocm-path/lib", {{"hip6", "libamdhip64.so.6"}, {"hiprtc6", "libhiprtc.so.6"}});
    opt = base + "/opt";
    place("opt/rocm-5.7/lib", {{"hip5", "libamdhip64.so.5"}});  // ROCm 5: hipRTC inside libamdhip64
    place("opt/rocm-6.4.1/lib", {{"hip6", "libamdhip64.so.6"}, {"hiprtc6", "libhiprtc.so.6"}});
    place("opt/rocm-7.0.2/lib", {{"hip7", "libamdhip64.so.7"}, {"hiprtc7", "libhiprtc.so.7"}});
    place("opt/rocm-7.0.10/lib", {{"hip7", "libamdhip64.so.7"}, {"hiprtc7", "libhiprtc.so.7"}});
    fs::create_directory_symlink("rocm-6.4.1", opt + "/rocm");
    fs::create_directories(opt + "/rocm-old/lib");  // not a version: never searched
    usr_local = base + "/usr-local";
    place("usr-local/cuda-12.8/lib64", {{"nvrtc12", "libnvrtc.so.12"}});
    place("usr-local/cuda-13.0/lib64", {{"nvrtc13", "libnvrtc.so.13"}});
    fs::create_directory_symlink("cuda-12.8", usr_local + "/cuda");
    hip_only_lib = place("hip-only/lib", {{"hip7", "libamdhip64.so.7"}});
    // Several versions in one directory: the newest file name wins.
    mixed_lib = place("mixed/lib", {{"hip5", "libamdhip64.so.5"}, {"hip6", "libamdhip64.so.6"}, {"hip7", "libamdhip64.so"}});
  }

  struct Copy {
    std::string stub;  // discovery_stubs/<stub>/
    std::string file;  // its name in the tree
  };

  std::string place(const std::string& relative, const std::vector<Copy>& copies) const {
    const std::string directory = root.path() + "/" + relative;
    fs::create_directories(directory);
    for (const Copy& copy : copies) {
      const fs::path from = fs::path(kStubs) / copy.stub;
      REQUIRE_MESSAGE(fs::is_directory(from), "stand-in " << from << " is not built");
      const fs::path built = *fs::directory_iterator(from);
      fs::copy_file(built, directory + "/" + copy.file);
    }
    return directory;
  }

  DiscoveryInputs rocm_toolkit_only(bool with_rocm_path) const {
    DiscoveryInputs inputs;
    inputs.toolkit = toolkit_library_dirs(kRocmLayout, with_rocm_path ? std::optional(rocm_path) : std::nullopt, opt);
    inputs.search_sonames = false;
    return inputs;
  }
};

const FakeTrees& trees() {
  static const FakeTrees instance;
  return instance;
}

bool is_stand_in(const std::string& path) {
  return path.starts_with(trees().root.path()) || path.starts_with(kStubs);
}

std::vector<std::string> loaded_stand_ins() {
  std::vector<std::string> found;
  for (const std::string& path : loaded_library_paths())
    if (is_stand_in(path)) found.push_back(path);
  return found;
}

// Every case starts with no stand-in loaded, so what (a) sees is only what the case loads.
void require_nothing_loaded() {
  const auto loaded = loaded_stand_ins();
  if (!loaded.empty()) FAIL("a stand-in is still loaded: " << loaded.front());
}

int stub_version(const DiscoveredLibrary& chosen) {
  REQUIRE_MESSAGE(chosen.library, chosen.error);
  const auto version = reinterpret_cast<int (*)()>(chosen.library->symbol("sagejit_stub_version"));
  return version();
}

std::string path_of(const DiscoveredLibrary& chosen) {
  REQUIRE_MESSAGE(chosen.library, chosen.error);
  return chosen.library->path();
}

std::string dir_of(const DiscoveredLibrary& chosen) {
  REQUIRE_MESSAGE(chosen.library, chosen.error);
  return chosen.library->directory();
}

std::string canonical(const std::string& path) { return fs::canonical(path).string(); }

// A library the test loads itself, standing for one a framework loaded before sagejit.
struct Preloaded {
  void* handle;
  explicit Preloaded(const std::string& path) : handle(::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    REQUIRE_MESSAGE(handle != nullptr, ::dlerror());
  }
  ~Preloaded() { ::dlclose(handle); }
  Preloaded(const Preloaded&) = delete;
  Preloaded& operator=(const Preloaded&) = delete;
};

}  // namespace

TEST_CASE("toolkit roots: the variable's root, then <prefix>/rocm-<version> newest first (as numbers), then <prefix>/rocm") {
  const auto& t = trees();
  const auto dirs = toolkit_library_dirs(kRocmLayout, t.rocm_path, t.opt);
  std::vector<std::string> paths, origins;
  for (const auto& dir : dirs) {
    paths.push_back(dir.path);
    origins.push_back(dir.origin);
  }
  // /opt/rocm is the symlink to rocm-6.4.1: searched once, at the versioned place; rocm-old is no version.
  CHECK(paths == std::vector<std::string>{t.rocm_path + "/lib", t.opt + "/rocm-7.0.10/lib", t.opt + "/rocm-7.0.2/lib",
                                          t.opt + "/rocm-6.4.1/lib", t.opt + "/rocm-5.7/lib"});
  CHECK(origins.front() == "ROCM_PATH");
  CHECK(origins[1] == t.opt + "/rocm-7.0.10");

  const auto cuda = toolkit_library_dirs(kCudaLayout, std::nullopt, t.usr_local);
  REQUIRE(cuda.size() == 2);
  CHECK(cuda[0].path == t.usr_local + "/cuda-13.0/lib64");
  CHECK(cuda[1].path == t.usr_local + "/cuda-12.8/lib64");

  // Without versioned installations the unversioned root is still searched.
  const PrivateTempDir bare("sagejit-discovery-bare");
  const auto only = toolkit_library_dirs(kRocmLayout, std::nullopt, bare.path());
  REQUIRE(only.size() == 1);
  CHECK(only[0].path == bare.path() + "/rocm/lib");
}

TEST_CASE("HIP runtime: (b) over (c) over (d) over (e), each naming its rule") {
  const auto& t = trees();
  require_nothing_loaded();
  DiscoveryInputs inputs;
  inputs.explicit_path = t.opt + "/rocm-6.4.1/lib/libamdhip64.so.6";
  inputs.handed_over = {{t.torch_lib, "handed over by the host"}, {t.sdk_lib, "handed over by the host"}};
  inputs.toolkit = toolkit_library_dirs(kRocmLayout, t.rocm_path, t.opt);

  SUBCASE("(b) the named file") {
    const auto chosen = discover_library(RuntimeLibrary::hip_runtime, inputs, nullptr);
    CHECK(chosen.rule == DiscoveryRule::explicit_path);
    CHECK(chosen.rule_text() == "(b) SAGEJIT_HIP_LIBRARY");
    CHECK(dir_of(chosen) == canonical(t.opt + "/rocm-6.4.1/lib"));
  }
  SUBCASE("(c) the first handed-over directory: torch's lib/ with its unversioned file") {
    inputs.explicit_path.reset();
    const auto chosen = discover_library(RuntimeLibrary::hip_runtime, inputs, nullptr);
    CHECK(chosen.rule == DiscoveryRule::handed_over);
    CHECK(chosen.rule_text() == "(c) handed over by the host");
    CHECK(path_of(chosen) == canonical(t.torch_lib + "/libamdhip64.so"));
    CHECK(stub_version(chosen) == 6);
  }
  SUBCASE("(c) TheRock's core lib/: libamdhip64.so.7 without an unversioned link") {
    inputs.explicit_path.reset();
    inputs.handed_over.erase(inputs.handed_over.begin());
    const auto chosen = discover_library(RuntimeLibrary::hip_runtime, inputs, nullptr);
    CHECK(chosen.rule == DiscoveryRule::handed_over);
    CHECK(path_of(chosen) == canonical(t.sdk_lib + "/libamdhip64.so.7"));
    CHECK(stub_version(chosen) == 7);
  }
  SUBCASE("(d) ROCM_PATH first") {
    inputs.explicit_path.reset();
    inputs.handed_over.clear();
    const auto chosen = discover_library(RuntimeLibrary::hip_runtime, inputs, nullptr);
    CHECK(chosen.rule_text() == "(d) ROCM_PATH");
    CHECK(dir_of(chosen) == canonical(t.rocm_path + "/lib"));
  }
  SUBCASE("(d) without ROCM_PATH: the newest /opt/rocm-<version>") {
    const auto chosen = discover_library(RuntimeLibrary::hip_runtime, t.rocm_toolkit_only(false), nullptr);
    CHECK(chosen.rule_text() == "(d) " + t.opt + "/rocm-7.0.10");
    CHECK(dir_of(chosen) == canonical(t.opt + "/rocm-7.0.10/lib"));
    CHECK(stub_version(chosen) == 7);
  }
  SUBCASE("(e) the newest soname the dynamic linker finds") {
    const char* search_path = std::getenv("LD_LIBRARY_PATH");
    if (search_path == nullptr || std::string(search_path).find(kStubs) == std::string::npos) {
      SAGEJIT_SKIP("run through ctest, which puts the stand-ins on LD_LIBRARY_PATH");
      return;
    }
    DiscoveryInputs sonames_only;
    const auto chosen = discover_library(RuntimeLibrary::hip_runtime, sonames_only, nullptr);
    CHECK(chosen.rule_text() == "(e) soname libamdhip64.so.7");
    CHECK(dir_of(chosen) == canonical(kStubs + "/sonames"));
    CHECK(stub_version(chosen) == 7);
  }
  SUBCASE("nothing: every place tried is named") {
    const PrivateTempDir empty_prefix("sagejit-discovery-empty");
    DiscoveryInputs nowhere;
    nowhere.handed_over = {{t.cu13_lib, "SAGEJIT_LIBRARY_DIRS"}};
    nowhere.toolkit = toolkit_library_dirs(kRocmLayout, std::nullopt, empty_prefix.path());
    nowhere.search_sonames = false;
    const auto chosen = discover_library(RuntimeLibrary::hip_runtime, nowhere, nullptr);
    CHECK_FALSE(chosen.library);
    CHECK_FALSE(chosen.refused);
    CHECK(chosen.error.find("the HIP runtime library could not be loaded") != std::string::npos);
    CHECK(chosen.error.find(t.cu13_lib + " (SAGEJIT_LIBRARY_DIRS): none of libamdhip64.so.7") != std::string::npos);
    CHECK(chosen.error.find(empty_prefix.path() + "/rocm/lib: none of") != std::string::npos);
  }
}

TEST_CASE("within one directory the newest file name wins") {
  require_nothing_loaded();
  DiscoveryInputs inputs;
  inputs.handed_over = {{trees().mixed_lib, "SAGEJIT_LIBRARY_DIRS"}};
  inputs.search_sonames = false;
  const auto chosen = discover_library(RuntimeLibrary::hip_runtime, inputs, nullptr);
  CHECK(path_of(chosen) == canonical(trees().mixed_lib + "/libamdhip64.so.6"));
  CHECK(stub_version(chosen) == 6);
}

TEST_CASE("(b) a named file that does not load is the answer, not a reason to look elsewhere") {
  const auto& t = trees();
  require_nothing_loaded();
  DiscoveryInputs inputs;
  inputs.handed_over = {{t.torch_lib, "handed over by the host"}};

  inputs.explicit_path = t.root.path() + "/no-such-libamdhip64.so";
  auto chosen = discover_library(RuntimeLibrary::hip_runtime, inputs, nullptr);
  CHECK_FALSE(chosen.library);
  CHECK(chosen.refused);
  CHECK(chosen.error.find("SAGEJIT_HIP_LIBRARY=" + *inputs.explicit_path) != std::string::npos);

  inputs.explicit_path = t.sdk_lib + "/libhiprtc.so.7";  // loads, but is not a HIP runtime
  chosen = discover_library(RuntimeLibrary::hip_runtime, inputs, nullptr);
  CHECK_FALSE(chosen.library);
  CHECK(chosen.error.find("has no symbol hipInit") != std::string::npos);
  CHECK(loaded_stand_ins().empty());  // the torch copy was never loaded
}

TEST_CASE("hipRTC comes from the HIP runtime's ROCm") {
  const auto& t = trees();
  require_nothing_loaded();
  // hipRTC's own (c) would name torch's, its (d) ROCM_PATH's.
  DiscoveryInputs inputs;
  inputs.handed_over = {{t.torch_lib, "handed over by the host"}};
  inputs.toolkit = toolkit_library_dirs(kRocmLayout, t.rocm_path, t.opt);
  // The HIP runtime of the newest /opt/rocm-<version> (7.0.10), or one the subcase names.
  auto hip_runtime = [&](std::optional<std::string> named) {
    DiscoveryInputs hip_inputs = t.rocm_toolkit_only(false);
    hip_inputs.explicit_path = std::move(named);
    return discover_library(RuntimeLibrary::hip_runtime, hip_inputs, nullptr);
  };

  SUBCASE("taken from the runtime's directory") {
    const auto hip = hip_runtime(std::nullopt);
    REQUIRE(dir_of(hip) == canonical(t.opt + "/rocm-7.0.10/lib"));
    const auto hiprtc = discover_library(RuntimeLibrary::hiprtc, inputs, &hip);
    CHECK(hiprtc.rule == DiscoveryRule::next_to_hip_runtime);
    CHECK(path_of(hiprtc) == canonical(t.opt + "/rocm-7.0.10/lib/libhiprtc.so.7"));
    CHECK(stub_version(hiprtc) == 7);
  }
  SUBCASE("(b) of the same ROCm is taken") {
    const auto hip = hip_runtime(std::nullopt);
    inputs.explicit_path = t.opt + "/rocm-7.0.10/lib/libhiprtc.so.7";
    const auto hiprtc = discover_library(RuntimeLibrary::hiprtc, inputs, &hip);
    CHECK(hiprtc.rule == DiscoveryRule::explicit_path);
    CHECK(path_of(hiprtc) == canonical(*inputs.explicit_path));
  }
  SUBCASE("(b) of another ROCm is refused, naming both") {
    const auto hip = hip_runtime(std::nullopt);
    inputs.explicit_path = t.opt + "/rocm-6.4.1/lib/libhiprtc.so.6";
    const auto hiprtc = discover_library(RuntimeLibrary::hiprtc, inputs, &hip);
    CHECK_FALSE(hiprtc.library);
    CHECK(hiprtc.refused);
    CHECK(hiprtc.error.find(canonical(*inputs.explicit_path)) != std::string::npos);
    CHECK(hiprtc.error.find(path_of(hip)) != std::string::npos);
    CHECK(hiprtc.error.find("is not from the same ROCm as the HIP runtime") != std::string::npos);
  }
  SUBCASE("already loaded from another ROCm: refused, naming both") {
    const auto hip = hip_runtime(std::nullopt);
    const Preloaded other(t.sdk_lib + "/libhiprtc.so.7");
    const auto hiprtc = discover_library(RuntimeLibrary::hiprtc, inputs, &hip);
    CHECK_FALSE(hiprtc.library);
    CHECK(hiprtc.refused);
    CHECK(hiprtc.error.find(canonical(t.sdk_lib + "/libhiprtc.so.7")) != std::string::npos);
    CHECK(hiprtc.error.find("(a) already loaded in this process") != std::string::npos);
    CHECK(hiprtc.error.find(path_of(hip)) != std::string::npos);
  }
  SUBCASE("a runtime directory without hipRTC: refused, nothing loaded from elsewhere") {
    const auto lone = hip_runtime(t.hip_only_lib + "/libamdhip64.so.7");
    REQUIRE(dir_of(lone) == canonical(t.hip_only_lib));
    const auto hiprtc = discover_library(RuntimeLibrary::hiprtc, inputs, &lone);
    CHECK_FALSE(hiprtc.library);
    CHECK(hiprtc.refused);
    CHECK(hiprtc.error.find("not found next to the HIP runtime " + path_of(lone)) != std::string::npos);
    for (const std::string& path : loaded_stand_ins()) CHECK(path.find("hiprtc") == std::string::npos);
  }
  SUBCASE("ROCm 5: hipRTC is the runtime itself") {
    const auto hip5 = hip_runtime(t.opt + "/rocm-5.7/lib/libamdhip64.so.5");
    const auto hiprtc = discover_library(RuntimeLibrary::hiprtc, inputs, &hip5);
    CHECK(hiprtc.rule == DiscoveryRule::next_to_hip_runtime);
    CHECK(path_of(hiprtc) == path_of(hip5));
  }
  SUBCASE("a ROCm 6 runtime that also exports hipRTC's symbols (Debian): hipRTC's own file next to it") {
    const std::string lib = t.place("debian/lib", {{"hip6_with_hiprtc", "libamdhip64.so.6"}, {"hiprtc6", "libhiprtc.so.6"}});
    const auto hip = hip_runtime(lib + "/libamdhip64.so.6");
    const auto hiprtc = discover_library(RuntimeLibrary::hiprtc, inputs, &hip);
    CHECK(hiprtc.rule == DiscoveryRule::next_to_hip_runtime);
    CHECK(path_of(hiprtc) == canonical(lib + "/libhiprtc.so.6"));
  }
  SUBCASE("without a HIP runtime hipRTC follows the rules on its own") {
    const auto hiprtc = discover_library(RuntimeLibrary::hiprtc, inputs, nullptr);
    CHECK(hiprtc.rule == DiscoveryRule::handed_over);
    CHECK(path_of(hiprtc) == canonical(t.torch_lib + "/libhiprtc.so"));
  }
}

TEST_CASE("(a) a library already loaded in the process wins") {
  const auto& t = trees();
  require_nothing_loaded();
  SUBCASE("HIP runtime: over (b), (c), (d); nothing else is loaded") {
    const Preloaded framework(t.opt + "/rocm-6.4.1/lib/libamdhip64.so.6");
    DiscoveryInputs inputs;
    inputs.explicit_path = t.opt + "/rocm-7.0.10/lib/libamdhip64.so.7";
    inputs.handed_over = {{t.sdk_lib, "handed over by the host"}};
    inputs.toolkit = toolkit_library_dirs(kRocmLayout, t.rocm_path, t.opt);
    const auto chosen = discover_library(RuntimeLibrary::hip_runtime, inputs, nullptr);
    CHECK(chosen.rule == DiscoveryRule::already_loaded);
    CHECK(dir_of(chosen) == canonical(t.opt + "/rocm-6.4.1/lib"));
    CHECK(loaded_stand_ins().size() == 1);

    // and hipRTC then comes from that runtime's ROCm, not from the handed-over directory
    DiscoveryInputs hiprtc_inputs;
    hiprtc_inputs.handed_over = inputs.handed_over;
    const auto hiprtc = discover_library(RuntimeLibrary::hiprtc, hiprtc_inputs, &chosen);
    CHECK(path_of(hiprtc) == canonical(t.opt + "/rocm-6.4.1/lib/libhiprtc.so.6"));
  }
  SUBCASE("NVRTC: an older one already loaded beats a newer one handed over") {
    const Preloaded framework(t.usr_local + "/cuda-12.8/lib64/libnvrtc.so.12");
    DiscoveryInputs inputs;
    inputs.handed_over = {{t.cu13_lib, "handed over by the host"}};
    const auto chosen = discover_library(RuntimeLibrary::nvrtc, inputs, nullptr);
    CHECK(chosen.rule == DiscoveryRule::already_loaded);
    CHECK(stub_version(chosen) == 12);
  }
  SUBCASE("a loaded HIP runtime sagejit cannot use is refused, never joined by a second") {
    const PrivateTempDir broken_dir("sagejit-discovery-broken");
    const std::string broken = broken_dir.file("libamdhip64.so.6");
    fs::copy_file(*fs::directory_iterator(fs::path(kStubs) / "hip_without_init"), broken);
    const Preloaded framework(broken);
    DiscoveryInputs inputs;
    inputs.handed_over = {{t.sdk_lib, "handed over by the host"}};
    const auto chosen = discover_library(RuntimeLibrary::hip_runtime, inputs, nullptr);
    CHECK_FALSE(chosen.library);
    CHECK(chosen.refused);
    CHECK(chosen.error.find(broken) != std::string::npos);
    CHECK(chosen.error.find("does not load a second one") != std::string::npos);
    for (const std::string& path : loaded_library_paths()) CHECK(path.find(t.sdk_lib) == std::string::npos);
  }
}

TEST_CASE("NVRTC: pip's cu13 before cuda_nvrtc, then CUDA_HOME, /usr/local/cuda-<version> newest first, sonames") {
  const auto& t = trees();
  require_nothing_loaded();
  DiscoveryInputs inputs;
  inputs.handed_over = {{t.cu13_lib, "handed over by the host"}, {t.cuda_nvrtc_lib, "handed over by the host"}};
  inputs.toolkit = toolkit_library_dirs(kCudaLayout, std::nullopt, t.usr_local);
  auto chosen = discover_library(RuntimeLibrary::nvrtc, inputs, nullptr);
  CHECK(path_of(chosen) == canonical(t.cu13_lib + "/libnvrtc.so.13"));
  chosen = {};

  inputs.handed_over.clear();
  chosen = discover_library(RuntimeLibrary::nvrtc, inputs, nullptr);
  CHECK(chosen.rule_text() == "(d) " + t.usr_local + "/cuda-13.0");
  chosen = {};

  inputs.toolkit = toolkit_library_dirs(kCudaLayout, t.usr_local + "/cuda-12.8", t.usr_local);
  chosen = discover_library(RuntimeLibrary::nvrtc, inputs, nullptr);
  CHECK(chosen.rule_text() == "(d) CUDA_HOME");
  CHECK(stub_version(chosen) == 12);
  chosen = {};

  const char* search_path = std::getenv("LD_LIBRARY_PATH");
  if (search_path != nullptr && std::string(search_path).find(kStubs) != std::string::npos) {
    chosen = discover_library(RuntimeLibrary::nvrtc, DiscoveryInputs{}, nullptr);
    CHECK(chosen.rule_text() == "(e) soname libnvrtc.so.13");
  } else {
    SAGEJIT_SKIP("(e): run through ctest, which puts the stand-ins on LD_LIBRARY_PATH");
  }
}

// The cache's trust rule (platform/trusted_dir) applied to the libraries sagejit loads: a library file
// or directory another user could have written is refused by name and the search goes on; a refused
// HIP runtime takes hipRTC down with it (no hipRTC of another ROCm by soname); nothing relative.
TEST_CASE("(b)-(d) a library or directory others could write is refused by name; a refused HIP runtime refuses hipRTC") {
  const auto& t = trees();
  require_nothing_loaded();
  const std::string open_dir = t.place("untrusted/open-dir", {{"hip7", "libamdhip64.so.7"}});
  fs::permissions(open_dir, fs::perms::all, fs::perm_options::replace);  // 0777, no sticky bit
  const std::string open_file_dir = t.place("untrusted/open-file", {{"hip7", "libamdhip64.so.7"}});
  const std::string open_file = open_file_dir + "/libamdhip64.so.7";
  fs::permissions(open_file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                                 fs::perms::group_write | fs::perms::others_read | fs::perms::others_write,
                  fs::perm_options::replace);  // 0666
  DiscoveryInputs inputs;
  inputs.search_sonames = false;
  inputs.handed_over = {{open_dir, "SAGEJIT_LIBRARY_DIRS"}, {open_file_dir, "SAGEJIT_LIBRARY_DIRS"}};
  const auto none = discover_library(RuntimeLibrary::hip_runtime, inputs, nullptr);
  CHECK_FALSE(none.library);
  CHECK(loaded_stand_ins().empty());  // neither constructor ran
  CHECK(none.error.find("its directory " + open_dir + " is writable by group or others (mode 777)") != std::string::npos);
  CHECK(none.error.find("the file " + open_file + " is writable by group or others (mode 666)") != std::string::npos);
  inputs.handed_over.push_back({t.hip_only_lib, "SAGEJIT_LIBRARY_DIRS"});  // the search goes on to a trusted one
  CHECK(path_of(discover_library(RuntimeLibrary::hip_runtime, inputs, nullptr)) ==
        canonical(t.hip_only_lib + "/libamdhip64.so.7"));

  // (b): the named file is refused, and hipRTC is not then taken by soname from another ROCm.
  DiscoveryInputs named;
  named.explicit_path = open_file;
  const auto hip = discover_library(RuntimeLibrary::hip_runtime, named, nullptr);
  CHECK_FALSE(hip.library);
  CHECK(hip.refused);
  CHECK(hip.error.find("SAGEJIT_HIP_LIBRARY=" + open_file) != std::string::npos);
  CHECK(hip.error.find("mode 666") != std::string::npos);
  DiscoveryInputs sonames;  // (e) would find the stand-in hipRTC 7 on LD_LIBRARY_PATH
  const auto hiprtc = discover_library(RuntimeLibrary::hiprtc, sonames, &hip);
  CHECK_FALSE(hiprtc.library);
  CHECK(hiprtc.refused);
  CHECK(hiprtc.error.find("the HIP runtime was refused") != std::string::npos);
  named.explicit_path = "untrusted/open-file/libamdhip64.so.7";  // relative: it would follow the cwd
  const auto relative = discover_library(RuntimeLibrary::hip_runtime, named, nullptr);
  CHECK_FALSE(relative.library);
  CHECK(relative.error.find("a relative path") != std::string::npos);
  CHECK(loaded_stand_ins().empty());

  // A directory owned by another user, even one only it can write (root only: chown).
  if (::geteuid() == 0) {
    const std::string foreign = t.place("untrusted/foreign", {{"hip7", "libamdhip64.so.7"}});
    REQUIRE(::chown(foreign.c_str(), 65534, 65534) == 0);
    inputs.handed_over = {{foreign, "SAGEJIT_LIBRARY_DIRS"}};
    const auto refused = discover_library(RuntimeLibrary::hip_runtime, inputs, nullptr);
    CHECK_FALSE(refused.library);
    CHECK(refused.error.find("its directory " + foreign + " is owned by uid 65534") != std::string::npos);
  }
}

TEST_CASE("NVRTC from a directory off the linker path (pip's nvidia/cu13/lib) loads its builtins from there") {
  require_nothing_loaded();
  const std::string dir = trees().place("pip-nvrtc/lib", {{"nvrtc13", "libnvrtc.so.13"}, {"nvrtc12", "libnvrtc-builtins.so.13.0"}});
  DiscoveryInputs inputs;
  inputs.handed_over = {{dir, "handed over by the host"}};
  inputs.search_sonames = false;
  const auto chosen = discover_library(RuntimeLibrary::nvrtc, inputs, nullptr);
  CHECK(path_of(chosen) == canonical(dir + "/libnvrtc.so.13"));
  REQUIRE(chosen.companions.size() == 1);
  CHECK(chosen.companions[0].path() == canonical(dir + "/libnvrtc-builtins.so.13.0"));
}

TEST_CASE("relative library directories: refused when handed over, ignored (with a warning) in SAGEJIT_LIBRARY_DIRS") {
  require_nothing_loaded();
  CHECK(sagejit_set_library_search_dirs("_rocm_sdk_core_x/lib") == SAGEJIT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(sagejit_last_error()).find("_rocm_sdk_core_x/lib is not an absolute path") != std::string::npos);
  CHECK(handed_over_library_dirs().empty());
  ::setenv("SAGEJIT_LIBRARY_DIRS", ("relative/lib:" + trees().cu13_lib).c_str(), 1);
  const DiscoveryInputs inputs = process_discovery_inputs(RuntimeLibrary::nvrtc);
  ::setenv("SAGEJIT_LIBRARY_DIRS", "", 1);
  REQUIRE(inputs.handed_over.size() == 1);
  CHECK(inputs.handed_over[0].path == trees().cu13_lib);
}

// hipRTC's own version says nothing (hiprtcVersion answers a fixed 9.0) and the layouts users have
// often carry no version in the file name: compiler/rtc_vendors.cpp reads the ROCm version from the
// file the name links to, then the HIP runtime of the same directory, then a major alone.
TEST_CASE("hipRTC's ROCm version: file name, linked file, the HIP runtime next to it; unknown is not 0.0") {
  require_nothing_loaded();
  const FakeTrees& t = trees();
  std::vector<std::string> attempts;
  const auto open = [&](const std::string& path) {
    auto library = DynamicLibrary::open_first({path}, attempts);
    REQUIRE_MESSAGE(library, path);
    return std::move(*library);
  };
  SUBCASE("torch/lib: unversioned libhiprtc.so next to its libamdhip64.so") {
    const DynamicLibrary hiprtc = open(t.torch_lib + "/libhiprtc.so");
    const DynamicLibrary runtime = open(t.torch_lib + "/libamdhip64.so");
    const RtcVersion version = hiprtc_rocm_version(hiprtc, &runtime);
    CHECK(version.major == 6);
    CHECK(version.minor == 0);
    CHECK(version.text == "6.0.0");
    // Without a HIP runtime, or with one from another directory, nothing says which ROCm it is.
    CHECK(hiprtc_rocm_version(hiprtc, nullptr).major == 0);
    CHECK(hiprtc_rocm_version(hiprtc, nullptr).text == "unknown");
    const DynamicLibrary elsewhere = open(t.sdk_lib + "/libamdhip64.so.7");
    CHECK(hiprtc_rocm_version(hiprtc, &elsewhere).major == 0);
  }
  SUBCASE("TheRock's _rocm_sdk_core/lib: libhiprtc.so.7, the runtime's version when it is there, else major 7") {
    const DynamicLibrary hiprtc = open(t.sdk_lib + "/libhiprtc.so.7");
    const DynamicLibrary runtime = open(t.sdk_lib + "/libamdhip64.so.7");
    CHECK(hiprtc_rocm_version(hiprtc, &runtime).text == "7.0.0");
    const RtcVersion alone = hiprtc_rocm_version(hiprtc, nullptr);
    CHECK(alone.major == 7);
    CHECK(alone.minor == -1);
    CHECK(alone.text == "7");
  }
  SUBCASE("/opt/rocm-X/lib: libhiprtc.so.6 links to libhiprtc.so.6.4.43484, whose name decides") {
    const std::string lib = t.place("opt-linked/rocm-6.4.3/lib", {{"hiprtc6", "libhiprtc.so.6.4.43484"}});
    fs::create_symlink("libhiprtc.so.6.4.43484", lib + "/libhiprtc.so.6");
    const DynamicLibrary hiprtc = open(lib + "/libhiprtc.so.6");
    const RtcVersion version = hiprtc_rocm_version(hiprtc, nullptr);
    CHECK(version.major == 6);
    CHECK(version.minor == 4);
    CHECK(version.text == "6.4.43484");
  }
  SUBCASE("ROCm 5: hipRTC inside libamdhip64 answers hipRuntimeGetVersion itself") {
    const DynamicLibrary hiprtc = open(t.opt + "/rocm-5.7/lib/libamdhip64.so.5");
    CHECK(hiprtc_rocm_version(hiprtc, nullptr).text == "5.0.0");
  }
}

// Last: it makes this process's choice, which stays loaded.
TEST_CASE("process-wide: directories handed over before the first use are searched; afterwards refused") {
  const auto& t = trees();
  require_nothing_loaded();
  CHECK(sagejit_set_library_search_dirs(nullptr) == SAGEJIT_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(sagejit_last_error()).find("directories is NULL") != std::string::npos);

  const std::string handed = t.sdk_lib + "::" + t.cu13_lib;  // an empty entry is skipped
  REQUIRE(sagejit_set_library_search_dirs(handed.c_str()) == SAGEJIT_SUCCESS);
  CHECK(handed_over_library_dirs() == std::vector<std::string>{t.sdk_lib, t.cu13_lib});
  const DiscoveryInputs inputs = process_discovery_inputs(RuntimeLibrary::nvrtc);
  REQUIRE(inputs.handed_over.size() == 2);  // ctest sets SAGEJIT_LIBRARY_DIRS empty
  CHECK(inputs.handed_over[0].origin == "handed over by the host");

  const DiscoveredLibrary& hip = process_runtime_library(RuntimeLibrary::hip_runtime);
  CHECK(hip.rule == DiscoveryRule::handed_over);
  CHECK(path_of(hip) == canonical(t.sdk_lib + "/libamdhip64.so.7"));
  const DiscoveredLibrary& hiprtc = process_runtime_library(RuntimeLibrary::hiprtc);
  CHECK(path_of(hiprtc) == canonical(t.sdk_lib + "/libhiprtc.so.7"));
  CHECK(&process_runtime_library(RuntimeLibrary::hip_runtime) == &hip);  // chosen once
  const OpenedLibrary opened = open_runtime_library(RuntimeLibrary::hip_runtime);
  REQUIRE(opened.library);
  CHECK(opened.library->path() == path_of(hip));

  CHECK(sagejit_set_library_search_dirs(t.torch_lib.c_str()) == SAGEJIT_ERROR_UNSUPPORTED);
  CHECK(std::string(sagejit_last_error()).find("handed over too late") != std::string::npos);
  CHECK(handed_over_library_dirs() == std::vector<std::string>{t.sdk_lib, t.cu13_lib});
}
