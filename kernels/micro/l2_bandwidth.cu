// L2 read bandwidth (gpusim measure --micro; docs/microbenchmarks.md), sm_80 and later. Settles G6: the
// bytes per clock one SM pulls from L2 alone (grid of 1) and what every SM gets when all read at once,
// either the same block (FA3's pattern: every CTA streams the same K/V blocks) or distinct blocks
// (a working set spread over both L2 partitions). One CTA per SM; each pass reads the CTA's chunk with
// 16-byte ld.global.cg (cached in L2, not L1), four loads in flight per thread.
// Record per CTA (common.cuh): work = bytes read.
#include "common.cuh"

extern "C" __device__ const unsigned gpusim_micro_smem_bytes = 0;

extern "C" __global__ void __launch_bounds__(1024, 1)
    l2_read(unsigned long long* out, const uint4* buf, unsigned long long chunk_bytes, int same_chunk, unsigned passes) {
  const unsigned long long n = chunk_bytes / 16;
  const uint4* base = buf + (same_chunk ? 0ull : static_cast<unsigned long long>(blockIdx.x) * n);
  const unsigned T = blockDim.x;
  uint32_t acc = 0;
  __syncthreads();
  Stamp t0 = Stamp::now();
  for (unsigned p = 0; p < passes; ++p) {
    unsigned long long i = threadIdx.x;
    for (; i + 3 * T < n; i += 4 * T) {
      uint4 v0 = load_cg(base + i), v1 = load_cg(base + i + T), v2 = load_cg(base + i + 2 * T),
            v3 = load_cg(base + i + 3 * T);
      acc ^= v0.x ^ v1.y ^ v2.z ^ v3.w;
    }
    for (; i < n; i += T) acc ^= load_cg(base + i).x;
  }
  __syncthreads();
  Stamp t1 = Stamp::now();
  __shared__ uint32_t total;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  atomicXor(&total, acc);
  __syncthreads();
  if (threadIdx.x == 0) write_record(out, blockIdx.x, t0, t1, static_cast<unsigned long long>(passes) * n * 16, 0, total);
}
