// The shared quantization headers (common/e4m3.h, common/quant.h) must compile for the AMD device
// with clang HIP and keep fp32 division correctly rounded there (the prepare workspaces are compared
// bit for bit with the emulator). Needs clang (found at configure time); skips without it.
#include <doctest/doctest.h>

#include "skip_support.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("quant.h compiles for gfx1201 with correctly rounded fp32 division") {
  const std::string clang = SAGEJIT_TEST_CLANG;
  if (clang.empty() || clang.find("NOTFOUND") != std::string::npos) {
    SAGEJIT_SKIP("no clang++ found at configure time");
    return;
  }
  const auto dir = std::filesystem::temp_directory_path() /
                   ("sagejit_numerics_headers_" + std::to_string(static_cast<long long>(std::rand())));
  std::filesystem::create_directories(dir);
  const auto source = dir / "probe.hip", assembly = dir / "probe.s", log = dir / "log.txt";
  std::ofstream(source) << "#include \"common/quant.h\"\n"
                           "SJ_KERNEL void probe(const float* in, signed char* q8, unsigned char* v8) {\n"
                           "  const unsigned i = sj_thread_x();\n"
                           "  const float x = sj_q_prescale(in[i], in[1024]);\n"
                           "  q8[i] = sj_quantize_int8(x, sj_int8_scale(in[i + 1]));\n"
                           "  v8[i] = sj_quantize_e4m3(in[i + 2], sj_v_scale(in[i + 3]));\n"
                           "}\n";
  const std::string command = "\"" + clang + "\" -x hip --offload-arch=gfx1201 -nogpulib -nogpuinc " +
                              "--offload-device-only --no-gpu-bundle-output -O3 -std=c++17 -I \"" +
                              SAGEJIT_SOURCE_DIR + "/kernel_src\" -S -o \"" + assembly.string() + "\" \"" +
                              source.string() + "\" > \"" + log.string() + "\" 2>&1";
  const int status = std::system(command.c_str());
  INFO("compiler output: " << read_all(log));
  REQUIRE(status == 0);
  const std::string isa = read_all(assembly);
  // Four fp32 divisions (two scales, two quotients), each the correctly rounded expansion that ends
  // in v_div_fixup_f32 (an approximate v_rcp_f32-only division would have none).
  std::size_t fixups = 0;
  for (std::size_t at = isa.find("v_div_fixup_f32"); at != std::string::npos; at = isa.find("v_div_fixup_f32", at + 1))
    ++fixups;
  CHECK(fixups == 4);
  std::filesystem::remove_all(dir);
}
