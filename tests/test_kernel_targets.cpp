// Which targets the kernels build for, as data: the gfx12 kernels by AMD family (a processor of the
// family needs no descriptor edit, one of another family is refused), and the NVIDIA mma.sync kernel's
// open-ended min_sm held to the per-arch limits of kernels/nvidia_sm_limits.cpp (an arch's shared
// memory decides, an arch without listed limits is refused with the listed ones named).
#include <doctest/doctest.h>

#include <string>

#include "jit/kernel_config.hpp"
#include "kernels/nvidia_sm_limits.hpp"
#include "kernels/registry.hpp"

using namespace sagejit;

namespace {

TileConfig sm80_config(int stages, int block_n, int pv_fp16) {
  return {{"warps", 4}, {"rows_per_warp", 16}, {"block_n", block_n}, {"stages", stages}, {"pv_fp16", pv_fp16},
          {"min_blocks", 1}};
}

Specialization d128() {
  Specialization spec;
  spec.head_dim = 128;
  return spec;
}

}  // namespace

TEST_CASE("the gfx12 kernels build for the gfx12 family, not for a list and not for other families") {
  for (const char* name : {"attention_gfx12", "probe_gfx12"}) {
    const KernelDesc& desc = kernel_by_name(name);
    CAPTURE(name);
    CHECK(kernel_supports(desc, "gfx1200"));
    CHECK(kernel_supports(desc, "gfx1201:xnack-"));
    CHECK(kernel_supports(desc, "gfx1202"));  // a later part of the family: no edit of the descriptor
    CHECK_FALSE(kernel_supports(desc, "gfx1151"));  // RDNA3.5
    CHECK_FALSE(kernel_supports(desc, "gfx1250"));  // shares the prefix, not the WMMA instructions
    CHECK_FALSE(kernel_supports(desc, "gfx942"));
    CHECK_FALSE(kernel_supports(desc, "sm_90"));
  }
  const std::string reason =
      check_kernel_config(kernel_by_name("attention_gfx12"), TileConfig{}, d128(), "gfx1151");
  CHECK(reason.find("gfx1151") != std::string::npos);
  CHECK(reason.find("gfx12 family") != std::string::npos);
  CHECK(&find_kernel("attention", "gfx1201") == &kernel_by_name("attention_gfx12"));
}

TEST_CASE("attention_sm80 holds each arch to its own shared memory, and refuses an arch without listed limits") {
  const KernelDesc& sm80 = kernel_by_name("attention_sm80");
  const TileConfig big = sm80_config(3, 128, 1);    // 144 KiB of shared memory at D = 128
  const TileConfig small = sm80_config(2, 128, 1);  // 96 KiB
  for (const char* fits : {"sm_80", "sm_87", "sm_90", "sm_100", "sm_103"}) {
    CAPTURE(fits);
    CHECK(check_kernel_config(sm80, big, d128(), fits).empty());
  }
  for (const char* too_small : {"sm_86", "sm_89", "sm_120"}) {
    CAPTURE(too_small);
    const std::string reason = check_kernel_config(sm80, big, d128(), too_small);
    CHECK(reason.find("shared memory 144 KiB > 99 KiB") != std::string::npos);
    CHECK(reason.find(too_small) != std::string::npos);
    CHECK(check_kernel_config(sm80, small, d128(), too_small).empty());
  }
  // min_sm 80 is open-ended: an arch whose limits are not listed is refused, not given sm_90's.
  for (const char* unlisted : {"sm_110", "sm_121", "sm_95"}) {
    CAPTURE(unlisted);
    CHECK(kernel_supports(sm80, unlisted));
    const std::string reason = check_kernel_config(sm80, small, d128(), unlisted);
    CHECK(reason.find(std::string("listed for ") + unlisted) != std::string::npos);
    CHECK(reason.find("sm_90") != std::string::npos);
    CHECK(reason.find("sm_120") != std::string::npos);
  }
}

TEST_CASE("the per-arch limits table: one row per listed arch, the arch-specific variants share it") {
  REQUIRE(find_sm_limits(parse_target("sm_90")) != nullptr);
  CHECK(find_sm_limits(parse_target("sm_90a")) == find_sm_limits(parse_target("sm_90")));
  CHECK(find_sm_limits(parse_target("sm_100f")) == find_sm_limits(parse_target("sm_100")));
  CHECK(find_sm_limits(parse_target("sm_90"))->shared_per_block == 227u * 1024u);
  CHECK(find_sm_limits(parse_target("sm_120"))->warps_per_sm == 48);
  CHECK(find_sm_limits(parse_target("gfx1201")) == nullptr);
  CHECK(find_sm_limits(parse_target("sm_110")) == nullptr);
  CHECK(missing_sm_limits(parse_target("sm_110")).find("sm_80, sm_86") != std::string::npos);
}
