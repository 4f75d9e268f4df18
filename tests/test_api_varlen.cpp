// Packed varlen calls (docs/NUMERICS.md "Varlen") through the public API's CPU emulation, which runs
// them as the kernels do: every sequence's rows match the fp64 attention of that sequence alone (GQA,
// causal, empty sequences, zero-padded head dims, the LSE in [Hq, total_q]), rows after the last
// sequence are left alone, the plan is the key-mask one; and every misuse is refused naming the
// argument. Random shapes from the logged seed.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "dev/c_abi_tensor.hpp"
#include "sagejit/sagejit.h"
#include "sagejit/sagejit.hpp"
#include "varlen_support.hpp"

using namespace sagejit;
using namespace sagejit::test;

namespace {

AttentionOptions varlen_options(const VarlenCase& c, const VarlenTensors& t, std::vector<float>* lse) {
  AttentionOptions options;
  options.layout = Layout::NHD;
  options.causal = c.causal;
  options.lse = c.lse ? lse->data() : nullptr;
  options.varlen = t.varlen(t.cu_q.data(), t.cu_k.data());
  return options;
}

}  // namespace

TEST_CASE("varlen emulation: each sequence's rows are the attention of that sequence alone") {
  for (const char* target : {"gfx1201", "sm_90", "sm_89"})
    for (int trial = 0; trial < 3; ++trial) {
      const VarlenCase c = random_varlen_case(random_in(1, 5), 300);
      std::mt19937_64 rng(static_cast<std::uint64_t>(random_in(0, 1 << 30)));
      VarlenTensors t(c, rng);
      std::vector<float> lse(static_cast<std::size_t>(c.heads_q * t.total_q), std::nanf(""));
      const AttentionOptions options = varlen_options(c, t, &lse);
      CAPTURE(target);
      CAPTURE(c.head_dim);
      CAPTURE(c.causal);
      REQUIRE(supports_target(t.q.view(), t.k.view(), t.v.view(), t.out.view(), options, target).ok);
      emulate_attention(t.q.view(), t.k.view(), t.v.view(), t.out.view(), options, target);
      check_varlen_against_fp64(c, t, lse, 0.999, target);
    }
}

TEST_CASE("varlen emulation through the C ABI (options struct V3)") {
  VarlenCase c;
  c.lengths_q = {100, 0, 37};
  c.lengths_k = {90, 20, 130};
  c.causal = true;
  c.lse = true;
  std::mt19937_64 rng(static_cast<std::uint64_t>(random_in(0, 1 << 30)));
  VarlenTensors t(c, rng);
  std::vector<float> lse(static_cast<std::size_t>(c.heads_q * t.total_q), std::nanf(""));
  const sagejit_tensor q = dev::c_abi_tensor(t.q.view()), k = dev::c_abi_tensor(t.k.view()),
                       v = dev::c_abi_tensor(t.v.view()), out = dev::c_abi_tensor(t.out.view());
  sagejit_options options = sagejit_default_options();
  CHECK(options.struct_size >= SAGEJIT_OPTIONS_V3_SIZE);
  CHECK(options.varlen.cu_seqlens_q == nullptr);  // the default: a dense call
  options.layout = SAGEJIT_LAYOUT_NHD;
  options.causal = 1;
  options.lse = lse.data();
  options.varlen = {t.cu_q.data(), t.cu_k.data(), t.batch(), t.max_q, t.max_k};
  REQUIRE_MESSAGE(sagejit_emulate_attention(&q, &k, &v, &out, &options, "gfx1201") == SAGEJIT_SUCCESS,
                  sagejit_last_error());
  check_varlen_against_fp64(c, t, lse, 0.999, "C ABI");
  // A V2 struct (before varlen) is a dense call: its [1, total] q is one long sequence, which is valid.
  options.struct_size = SAGEJIT_OPTIONS_V2_SIZE;
  CHECK(sagejit_emulate_attention(&q, &k, &v, &out, &options, "gfx1201") == SAGEJIT_SUCCESS);
}

TEST_CASE("varlen misuse is refused naming the argument") {
  VarlenCase c;
  c.lengths_q = {10, 20};
  c.lengths_k = {30, 5};
  std::mt19937_64 rng(static_cast<std::uint64_t>(random_in(0, 1 << 30)));
  VarlenTensors t(c, rng);
  const auto refused = [&](AttentionOptions options, const std::string& expected) {
    const Support support = supports_target(t.q.view(), t.k.view(), t.v.view(), t.out.view(), options, "gfx1201");
    CHECK_FALSE(support.ok);
    CHECK_MESSAGE(support.reason.find(expected) != std::string::npos, support.reason);
  };
  AttentionOptions good;
  good.layout = Layout::NHD;
  good.varlen = t.varlen(t.cu_q.data(), t.cu_k.data());
  CHECK(supports_target(t.q.view(), t.k.view(), t.v.view(), t.out.view(), good, "gfx1201").ok);
  AttentionOptions hnd = good;
  hnd.layout = Layout::HND;
  refused(hnd, "layout NHD");
  AttentionOptions no_k = good;
  no_k.varlen.cu_seqlens_k = nullptr;
  refused(no_k, "options.varlen.cu_seqlens_k is null");
  AttentionOptions no_batch = good;
  no_batch.varlen.batch = 0;
  refused(no_batch, "options.varlen.batch 0");
  AttentionOptions long_q = good;
  long_q.varlen.max_seqlen_q = t.total_q + 1;
  refused(long_q, "options.varlen.max_seqlen_q");
  AttentionOptions zero_k = good;
  zero_k.varlen.max_seqlen_k = 0;
  refused(zero_k, "options.varlen.max_seqlen_k 0");
  AttentionOptions masked = good;
  static const unsigned char keep = 1;
  masked.key_mask = {&keep, MaskType::boolean, {1, t.max_k}, {0, 0}, 0};
  refused(masked, "options.key_mask with options.varlen");
  // A batch of two packed tensors is not a varlen call's layout.
  numerics::HostTensor q2({2, c.heads_q, t.total_q, c.head_dim}, c.dtype, Layout::NHD);
  numerics::HostTensor out2({2, c.heads_q, t.total_q, c.head_dim}, c.dtype, Layout::NHD);
  numerics::HostTensor k2({2, c.heads_kv, t.total_k, c.head_dim}, c.dtype, Layout::NHD);
  const Support two = supports_target(q2.view(), k2.view(), k2.view(), out2.view(), good, "gfx1201");
  CHECK_FALSE(two.ok);
  CHECK_MESSAGE(two.reason.find("q.shape[0] (B) is 2") != std::string::npos, two.reason);
}
