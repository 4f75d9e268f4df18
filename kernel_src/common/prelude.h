// Vendor prelude: lets one kernel source compile under NVRTC (and nvcc), hipRTC, upstream clang
// with -nogpuinc (no HIP headers), and the host C++ compiler (for host tests of index math).
// Kernels use only the SJ_* macros and sj_* functions below for anything vendor-specific that is
// not an MMA atom (those live in the arch headers: mma_sm80.h, mma_gfx12.h).
#pragma once

#include "common/params.h"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define SJ_NVIDIA 1
#elif defined(__HIP__) || defined(__HIPCC_RTC__)
#define SJ_AMD 1
#else
#define SJ_HOST 1
#endif

#if defined(SJ_AMD) && !defined(__global__)
// clang -x hip -nogpuinc: no HIP headers, so spell out what they would define.
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#endif

#if defined(SJ_HOST)
#define SJ_DEVICE inline
#define SJ_HOST_DEVICE inline
#else
#define SJ_DEVICE __device__ inline __attribute__((always_inline))
#define SJ_HOST_DEVICE __host__ __device__ inline __attribute__((always_inline))
#define SJ_KERNEL extern "C" __global__
#define SJ_SHARED __shared__
#endif

typedef signed char sj_i8;
typedef unsigned char sj_u8;
typedef unsigned short sj_u16;
typedef int sj_i32;
typedef unsigned int sj_u32;
typedef long long sj_i64;
typedef unsigned long long sj_u64;

// ---- Thread indexing and barriers -----------------------------------------------------------
#if defined(SJ_NVIDIA)
SJ_DEVICE unsigned sj_thread_x() { return threadIdx.x; }
SJ_DEVICE unsigned sj_block_x() { return blockIdx.x; }
SJ_DEVICE unsigned sj_block_y() { return blockIdx.y; }
SJ_DEVICE unsigned sj_block_z() { return blockIdx.z; }
SJ_DEVICE unsigned sj_grid_x() { return gridDim.x; }
SJ_DEVICE void sj_barrier() { __syncthreads(); }
#elif defined(SJ_AMD)
SJ_DEVICE unsigned sj_thread_x() { return __builtin_amdgcn_workitem_id_x(); }
SJ_DEVICE unsigned sj_block_x() { return __builtin_amdgcn_workgroup_id_x(); }
SJ_DEVICE unsigned sj_block_y() { return __builtin_amdgcn_workgroup_id_y(); }
SJ_DEVICE unsigned sj_block_z() { return __builtin_amdgcn_workgroup_id_z(); }
SJ_DEVICE unsigned sj_grid_x() {
  // grid size in workgroups = global size / workgroup size, both from the dispatch packet
  const unsigned short* packet = (const unsigned short*)__builtin_amdgcn_dispatch_ptr();
  const unsigned* packet32 = (const unsigned*)__builtin_amdgcn_dispatch_ptr();
  return packet32[3] / packet[2];
}
SJ_DEVICE void sj_barrier() {
  // What HIP's __syncthreads does: make LDS writes visible, wait for the workgroup, then acquire.
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
#endif

// ---- Bit casts and 16-bit float conversions (exact / round-to-nearest-even) -------------------
template <typename To, typename From>
SJ_HOST_DEVICE To sj_bit_cast(From from) {
  static_assert(sizeof(To) == sizeof(From), "sj_bit_cast needs equal sizes");
  return __builtin_bit_cast(To, from);
}

SJ_HOST_DEVICE float sj_bf16_to_f32(sj_u16 bits) { return sj_bit_cast<float>((sj_u32)bits << 16); }

SJ_HOST_DEVICE sj_u16 sj_f32_to_bf16(float value) {
  sj_u32 bits = sj_bit_cast<sj_u32>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (sj_u16)((bits >> 16) | 0x40u);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
  return (sj_u16)(bits >> 16);
}

// IEEE binary16 <-> fp32 in integer arithmetic: identical on every compiler and on the host.
SJ_HOST_DEVICE float sj_f16_to_f32(sj_u16 h) {
  const sj_u32 sign = (sj_u32)(h & 0x8000u) << 16;
  const sj_u32 exponent = (h >> 10) & 0x1fu;
  sj_u32 mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return sj_bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return sj_bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return sj_bit_cast<float>(sign);
  // subnormal: value = mantissa * 2^-24, exact in fp32
  const float magnitude = (float)mantissa * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

SJ_HOST_DEVICE sj_u16 sj_f32_to_f16(float value) {
  const sj_u32 bits = sj_bit_cast<sj_u32>(value);
  const sj_u32 sign = (bits >> 16) & 0x8000u;
  const sj_u32 abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) return (sj_u16)(sign | 0x7e00u);        // NaN
  if (abs_bits >= 0x477ff000u) return (sj_u16)(sign | 0x7c00u);       // rounds to >= 65536: inf
  if (abs_bits >= 0x38800000u) {                                      // normal half
    sj_u32 rounded = abs_bits + 0xfffu + ((abs_bits >> 13) & 1u);
    return (sj_u16)(sign | ((rounded - 0x38000000u) >> 13));
  }
  // subnormal half (or zero): scale to units of 2^-24 and round to nearest even
  const float magnitude = sj_bit_cast<float>(abs_bits);
  const float units = magnitude * 16777216.0f;  // exact (power of two)
  sj_u32 integer = (sj_u32)units;
  const float remainder = units - (float)integer;
  if (remainder > 0.5f || (remainder == 0.5f && (integer & 1u))) ++integer;
  return (sj_u16)(sign | integer);
}

// ---- The input dtypes (SJ_DTYPE: the DType value, core/kernel_inputs.hpp) ------------------------
// One place for every kernel and the CPU emulator: the inputs' 16-bit storage to fp32 (exact) and the
// output back to it, round-to-nearest-even.
SJ_HOST_DEVICE sj_u16 sj_to_dtype(float value, int dtype) {
  return dtype == 0 ? sj_f32_to_bf16(value) : sj_f32_to_f16(value);
}
// Two outputs as one 32-bit word, lo in the low half: sj_to_dtype's bits for every value but a NaN,
// which stays a NaN (its payload may differ). NVIDIA sm_80 and later: the hardware's packed
// round-to-nearest-even convert (no .ftz: subnormals kept), one instruction for both values where
// sj_to_dtype's integer form takes about five per value (the attention epilogues' main cost).
SJ_HOST_DEVICE sj_u32 sj_to_dtype_pair(float lo, float hi, int dtype) {
#if defined(SJ_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  sj_u32 word;
  if (dtype == 0)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(word) : "f"(hi), "f"(lo));  // a -> high half, b -> low
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(word) : "f"(hi), "f"(lo));
  return word;
#else
  return (sj_u32)sj_to_dtype(lo, dtype) | ((sj_u32)sj_to_dtype(hi, dtype) << 16);
#endif
}
SJ_HOST_DEVICE float sj_from_dtype(sj_u16 bits, int dtype) {
  return dtype == 0 ? sj_bf16_to_f32(bits) : sj_f16_to_f32(bits);
}
