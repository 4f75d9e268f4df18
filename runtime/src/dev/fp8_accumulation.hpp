#pragma once
// The bit-counting probe of the fp8 WMMA's effective accumulator precision (gfx12; run by
// sagejit-selftest through kernel_src/probe_gfx12.hip, sj_probe_gfx12_fp8_accumulation). Like the
// probes that showed Hopper's fp8 tensor cores keep ~14 bits when they sum products, each case is
// one WMMA output element c + sum_k a[k]*b[k] whose exact value needs a known number of significand
// bits; the largest number that survives exactly is the precision. Two sums are probed, because
// either can be narrower than the fp32 the output register holds:
//  - adding the C operand: c = 2^m, one product 1*1: exact iff m + 1 bits are kept (fp32: m <= 23);
//  - summing the products inside one WMMA: c = 0, products 2^16 and 2^-j: exact iff 17 + j bits are
//    kept (fp32: j <= 7);
// and the rounding of the C add: 2^24 + 3 is 2^24 + 4 when rounded to nearest, 2^24 + 2 toward zero.
// Pure host code: the cases are built and the results analysed here; the test feeds it modelled
// accumulators of every width.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace sagejit {

inline constexpr int fp8_probe_key_slots = 32;  // a and b rows of one case, indexed by the kernel's key

enum class Fp8ProbeKind { c_add, product_sum, rounding };

struct Fp8AccumulationCase {
  Fp8ProbeKind kind = Fp8ProbeKind::c_add;
  int bits = 0;          // significand bits the exact result needs (c_add, product_sum)
  float c = 0;           // the C operand of the output element
  std::array<std::uint8_t, fp8_probe_key_slots> a{}, b{};  // E4M3 codes
  double exact = 0;      // c + sum a*b, exactly
};

// The cases, with their products placed at key slots k0 and k1 (two distinct keys that the WMMA's
// output element sums: the caller takes them from the kernel's index functions).
std::vector<Fp8AccumulationCase> fp8_accumulation_cases(int k0, int k1);

// Two distinct key slots that the probe WMMA's output element (channel 0, query 0) sums: keys that
// row 0 of V^T and column 0 of P^T both reach through the kernel's index functions (arch/mma_gfx12.h).
std::pair<int, int> fp8_probe_key_slots_summed();

struct Fp8AccumulationPrecision {
  int c_add_bits = 0;        // significand bits kept when C is added (fp32: 24)
  int product_sum_bits = 0;  // significand bits kept when one WMMA's products are summed (fp32: 24)
  std::string rounding;      // "nearest", "toward zero" or "other (2^24 + 3 -> X)"
  bool full_fp32() const { return c_add_bits >= 24 && product_sum_bits >= 24; }
  std::string text() const;  // "C add 24 bits, product sum 24 bits, rounding nearest"
};

// `results[i]` is what the GPU wrote for cases[i]. A width is the largest one whose case and every
// narrower case came out exact (so one lucky case cannot overstate it).
Fp8AccumulationPrecision analyse_fp8_accumulation(std::span<const Fp8AccumulationCase> cases,
                                                  std::span<const float> results);

}  // namespace sagejit
