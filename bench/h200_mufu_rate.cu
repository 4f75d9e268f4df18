// exp2 throughput of the special-function unit on the GPU machine, per SM and clock, for the three forms a
// softmax could use: ex2.approx.ftz.f32 (what the attention kernels use), ex2.approx.f16x2 and
// ex2.approx.ftz.bf16x2 (two results per instruction). The question it answers (issue 23): would a packed
// exp2 halve the softmax's MUFU time on Hopper, or is the packed form issued as two operations?
//   nvcc -O3 -arch=sm_90a -o /tmp/mufu bench/h200_mufu_rate.cu && /tmp/mufu
// Each thread keeps 8 independent chains of x = exp2(x) * c + d (one MUFU and one FMA-pipe instruction
// per chain step), so the MUFU pipe, not latency, bounds the loop; cycles are read with clock64 per block.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdio>

constexpr int kChains = 8, kSteps = 4096, kThreads = 256;

__device__ float step(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return fmaf(y, -0.5f, 0.25f);
}
__device__ unsigned step_f16x2(unsigned x) {
  unsigned y;
  asm volatile("ex2.approx.f16x2 %0, %1;" : "=r"(y) : "r"(x));
  __half2 h = *reinterpret_cast<__half2*>(&y);
  h = __hfma2(h, __float2half2_rn(-0.5f), __float2half2_rn(0.25f));
  return *reinterpret_cast<unsigned*>(&h);
}
__device__ unsigned step_bf16x2(unsigned x) {
  unsigned y;
  asm volatile("ex2.approx.ftz.bf16x2 %0, %1;" : "=r"(y) : "r"(x));
  __nv_bfloat162 h = *reinterpret_cast<__nv_bfloat162*>(&y);
  h = __hfma2(h, __float2bfloat162_rn(-0.5f), __float2bfloat162_rn(0.25f));
  return *reinterpret_cast<unsigned*>(&h);
}

template <int kForm>
__global__ void __launch_bounds__(kThreads) mufu(float* sink, long long* cycles) {
  float xf[kChains];
  unsigned xh[kChains];
  for (int c = 0; c < kChains; ++c) {
    xf[c] = 0.001f * (threadIdx.x + c);
    const __half2 h = __float2half2_rn(xf[c]);
    xh[c] = *reinterpret_cast<const unsigned*>(&h);
  }
  __syncthreads();
  const long long start = clock64();
  for (int s = 0; s < kSteps; ++s)
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
      if constexpr (kForm == 0) xf[c] = step(xf[c]);
      if constexpr (kForm == 1) xh[c] = step_f16x2(xh[c]);
      if constexpr (kForm == 2) xh[c] = step_bf16x2(xh[c]);
    }
  __syncthreads();
  const long long stop = clock64();
  float acc = 0.0f;
  for (int c = 0; c < kChains; ++c) acc += xf[c] + (float)(xh[c] & 0xffu);
  if (acc == 12345.0f) sink[threadIdx.x] = acc;  // keeps the chains alive
  if (threadIdx.x == 0) cycles[blockIdx.x] = stop - start;
}

template <int kForm>
void run(const char* name, int sms, int blocks_per_sm) {
  const int blocks = sms * blocks_per_sm;
  float* sink;
  long long* cycles;
  cudaMalloc(&sink, kThreads * sizeof(float));
  cudaMalloc(&cycles, blocks * sizeof(long long));
  mufu<kForm><<<blocks, kThreads>>>(sink, cycles);  // warm-up
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a);
  mufu<kForm><<<blocks, kThreads>>>(sink, cycles);
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  long long* host = new long long[blocks];
  cudaMemcpy(host, cycles, blocks * sizeof(long long), cudaMemcpyDeviceToHost);
  long long max_cycles = 0;
  for (int i = 0; i < blocks; ++i) max_cycles = host[i] > max_cycles ? host[i] : max_cycles;
  const double per_block_instr = (double)kThreads * kChains * kSteps;  // MUFU instructions (thread level)
  const double elements = per_block_instr * (kForm == 0 ? 1 : 2);
  // Blocks of one SM run at once (blocks_per_sm x 256 threads fit), so per SM and clock:
  const double instr_per_clk = per_block_instr * blocks_per_sm / (double)max_cycles;
  printf("%-22s %8.3f ms  %6.2f MUFU thread-instructions / SM / clock  %6.2f exp2 results / SM / clock  (%.1f G results/s)\n",
         name, ms, instr_per_clk, instr_per_clk * (kForm == 0 ? 1 : 2), elements * blocks / (ms * 1e6));
  delete[] host;
  cudaFree(sink);
  cudaFree(cycles);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  for (int blocks_per_sm : {2, 4}) {
    printf("-- %d blocks of %d threads per SM\n", blocks_per_sm, kThreads);
    run<0>("ex2.approx.ftz.f32", prop.multiProcessorCount, blocks_per_sm);
    run<1>("ex2.approx.f16x2", prop.multiProcessorCount, blocks_per_sm);
    run<2>("ex2.approx.ftz.bf16x2", prop.multiProcessorCount, blocks_per_sm);
  }
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
