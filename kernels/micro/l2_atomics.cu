// L2 reduction throughput (gpusim measure --micro; docs/microbenchmarks.md), sm_80 and later. Settles G10:
// whether the fp32 reductions FA2's backward pass sends to its dQ accumulator (red.global.add.f32, one per
// element of every KV block's dQ partial) are served at L2 write bandwidth, as the engine charges them
// today (a plain store), or by L2 atomic units at a lower rate.
// One CTA of 1024 threads per SM; each pass every thread sends 8 coalesced 4-byte operations (a warp covers
// 128 contiguous bytes per instruction), `passes` times over the CTA's chunk:
//   mode 0: red.global.add.f32 into a chunk of its own per CTA (no two SMs touch the same line)
//   mode 1: red.global.add.f32 with every CTA on the same chunk (FA2's dQ: the KV blocks of one head all
//           add into the same rows)
//   mode 2: st.global.f32 into a chunk of its own per CTA (the same traffic as plain stores)
// Record per CTA (common.cuh): work = bytes sent (4 per operation).
#include "common.cuh"

extern "C" __device__ const unsigned gpusim_micro_smem_bytes = 0;

extern "C" __global__ void __launch_bounds__(1024, 1)
    l2_atomics(unsigned long long* out, float* buf, unsigned long long chunk_bytes, int mode, unsigned passes) {
  const unsigned long long n = chunk_bytes / 4;
  float* base = buf + (mode == 1 ? 0ull : static_cast<unsigned long long>(blockIdx.x) * n);
  const unsigned T = blockDim.x;
  const float v = 1.0f / 1024.0f;
  __syncthreads();
  Stamp t0 = Stamp::now();
  for (unsigned p = 0; p < passes; ++p) {
    for (unsigned long long i = threadIdx.x; i + 7ull * T < n; i += 8ull * T) {
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        float* addr = base + i + static_cast<unsigned long long>(u) * T;
        if (mode == 2)
          asm volatile("st.global.f32 [%0], %1;" ::"l"(addr), "f"(v) : "memory");
        else
          asm volatile("red.global.add.f32 [%0], %1;" ::"l"(addr), "f"(v) : "memory");
      }
    }
  }
  __threadfence();
  __syncthreads();
  Stamp t1 = Stamp::now();
  if (threadIdx.x == 0) {
    const unsigned long long per_pass = (n / (8ull * T)) * 8ull * T;  // whole rounds of 8 per thread
    write_record(out, blockIdx.x, t0, t1, static_cast<unsigned long long>(passes) * per_pass * 4, 0, 0);
  }
}
