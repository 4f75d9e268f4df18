// Exhaustive device check of the packed code forms of kernel_src/common/quant.h (sj_int8_word,
// sj_e4m3x4), whose NVIDIA device code differs from their portable form (round-to-zero adds, the
// hardware e4m3x2 conversion): over every fp32 bit pattern that is not NaN, the device forms must give
// the codes of the portable scalar steps the CPU emulator runs, and the quantizers built on them the
// codes of sj_quantize_int8_by / sj_quantize_e4m3_by for a few block scales.
//   nvcc -arch=sm_90 -std=c++17 -I kernel_src bench/h200_packed_codes_check.cu -o /tmp/codes && /tmp/codes
// Prints the mismatch counts (0 expected) and exits 1 on any mismatch.
#include <cstdio>

#include "common/quant.h"

struct Mismatches {
  unsigned long long count[4];
  unsigned first[4];
};

__device__ void note(Mismatches* m, int kind, unsigned pattern) {
  if (atomicAdd(&m->count[kind], 1ull) == 0ull) m->first[kind] = pattern;
}

// The portable forms, spelled as the host (and the emulator) evaluates them.
__device__ unsigned int8_reference(float r) { return (unsigned)(sj_u8)sj_round_int8(sj_abs(r), r < 0.0f); }
__device__ unsigned e4m3_reference(float r) {
  const float magnitude = sj_abs(r);
  const unsigned sign = (sj_bit_cast<unsigned>(r) >> 24) & 0x80u;
  return sign | sj_e4m3_encode_magnitude(magnitude < SJ_E4M3_MAX ? magnitude : SJ_E4M3_MAX);
}

__global__ void check(unsigned long long first, float scale, Mismatches* m) {
  const unsigned long long index = first + blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (index > 0xffffffffull) return;
  const unsigned pattern = (unsigned)index;
  const float r = sj_bit_cast<float>(pattern);
  if (r != r) return;
  if ((sj_int8_word(r) & 0xffu) != int8_reference(r)) note(m, 0, pattern);
  // Each byte position of the packed word, with the pattern and three neighbours (sign, low bit).
  const unsigned patterns[4] = {pattern, pattern ^ 0x80000000u, pattern ^ 1u, pattern ^ 0x80000001u};
  float four[4];
  bool finite = true;
  for (int i = 0; i < 4; ++i) {
    four[i] = sj_bit_cast<float>(patterns[i]);
    finite = finite && four[i] == four[i];
  }
  if (finite) {
    const unsigned word = sj_e4m3x4(four);
    for (int i = 0; i < 4; ++i)
      if (((word >> (8 * i)) & 0xffu) != e4m3_reference(four[i])) note(m, 1, patterns[i]);
  }
  // The composed quantizers for a finite x and a fast-path scale.
  if (sj_abs(r) <= 3.0e38f && sj_divisor_fast(scale)) {
    const SjDivisor d = sj_divisor(scale);
    const float x = r;
    if (sj_abs(x) <= scale * 127.0f) {  // within the block's amax, as in the kernel
      if ((sj_int8_word(sj_div_rn_by(x, d)) & 0xffu) != (unsigned)(sj_u8)sj_quantize_int8_by(x, d)) note(m, 2, pattern);
    }
    if (sj_abs(x) <= scale * 448.0f) {
      const float magnitude = sj_div_rn_by(sj_abs(x), d);
      const float q[4] = {sj_with_sign_of(magnitude, x), sj_with_sign_of(magnitude, -x), 0.0f, -0.0f};
      const unsigned word = sj_e4m3x4(q);
      if ((word & 0xffu) != sj_quantize_e4m3_by(x, d) || ((word >> 8) & 0xffu) != sj_quantize_e4m3_by(-x, d) ||
          (word >> 16) != 0x8000u)
        note(m, 3, pattern);
    }
  }
}

int main() {
  Mismatches* m = nullptr;
  cudaMallocManaged(&m, sizeof(Mismatches));
  const float scales[] = {1.0f / 127.0f, 0.0123f, 3.7f, 1.5e-20f};
  const char* names[] = {"sj_int8_word", "sj_e4m3x4", "int8 by scale", "e4m3 by scale"};
  unsigned long long total[4] = {0, 0, 0, 0};
  for (float scale : scales) {
    *m = Mismatches{};
    const unsigned threads = 256;
    const unsigned long long per_launch = (1ull << 31);
    for (unsigned long long first = 0; first <= 0xffffffffull; first += per_launch)
      check<<<(unsigned)(per_launch / threads), threads>>>(first, scale, m);
    if (cudaDeviceSynchronize() != cudaSuccess) {
      std::printf("launch failed\n");
      return 2;
    }
    for (int k = 0; k < 4; ++k) {
      std::printf("scale %g: %-14s mismatches %llu%s", scale, names[k], m->count[k], m->count[k] ? "" : "\n");
      if (m->count[k]) std::printf(" (first pattern 0x%08x)\n", m->first[k]);
      total[k] += m->count[k];
    }
  }
  const bool ok = total[0] + total[1] + total[2] + total[3] == 0;
  std::printf("%s\n", ok ? "all codes equal" : "MISMATCH");
  return ok ? 0 : 1;
}
