// A trivial kernel every compiler (NVRTC, hipRTC, clang -nogpuinc) can build for every target. It
// exercises the JIT machinery end to end (render, include inlining, defines, cache, load, launch) in
// tests and in bench/bench_jit_cache.cpp without depending on the attention kernels.
//
// Defines (from kernels/jit_probe_desc.cpp): SJ_PROBE_BLOCK (threads per block), SJ_PROBE_SCALE.
#include "common/prelude.h"

#ifndef SJ_PROBE_BLOCK
#error "SJ_PROBE_BLOCK must be defined by the kernel descriptor"
#endif

// y[i] = SJ_PROBE_SCALE * x[i] + y[i] for i < n; one element per thread.
SJ_KERNEL void sagejit_probe_axpy(const float* x, float* y, int n) {
  const long long i = (long long)sj_block_x() * SJ_PROBE_BLOCK + sj_thread_x();
  if (i < n) y[i] = (float)SJ_PROBE_SCALE * x[i] + y[i];
}
