// mma.sync microbenchmark (gpusim measure --micro; docs/microbenchmarks.md), sm_80 and later. Settles G5:
// the mma.sync m16n8k16 rate per SM with 1, 2, 4, 8 warps per SMSP (warps = 4 x warps per SMSP; warp w
// runs on SMSP w % 4), with and without ldmatrix.x4 interleaved (ldm_per_iter per 8 MMAs, as a
// GEMM or FA2 warp reloads its fragments; mma_sync_bf16_c8_ldm_db software-pipelines them as those kernels
// do), and the dependent-chain latency (mma_sync_*_c1: one chain).
// One CTA per SM (the host asks for more than half of the SM's shared memory). Record per CTA (common.cuh):
// work = mma.sync instructions of the whole CTA. Kernels: mma_sync_{bf16,f16}_c{1,8}, mma_sync_bf16_c8_ldm_db.
#include "common.cuh"

constexpr int kLdmBytes = 16 * 1024;
extern "C" __device__ const unsigned gpusim_micro_smem_bytes = kLdmBytes;
extern "C" __device__ const unsigned gpusim_micro_max_threads = 1024;

template <bool kBf16>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (kBf16)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// The kLdmBytes the ldmatrix variants read, filled from the host's operand buffer (repeated as needed).
__device__ __forceinline__ void fill_ldm_region(uint4* smem, const uint4* src, unsigned long long src_bytes) {
  const uint32_t src_words = static_cast<uint32_t>(src_bytes / 16);
  for (int i = threadIdx.x; i < kLdmBytes / 16; i += blockDim.x) smem[i] = src[i % src_words];
}

template <bool kBf16, int kChainsN>
__device__ __forceinline__ void mma_sync_bench(unsigned long long* out, const uint4* src, unsigned long long src_bytes,
                                               unsigned iters, int ldm_per_iter) {
  extern __shared__ uint4 smem[];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  fill_ldm_region(smem, src, src_bytes);
  __shared__ unsigned long long total;
  if (tid == 0) total = 0;
  __syncthreads();
  const uint32_t* words = reinterpret_cast<const uint32_t*>(smem);
  uint32_t a[4], a_next[4], b[2];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = words[(lane * 4 + i) % (kLdmBytes / 4)];
  b[0] = words[lane * 2];
  b[1] = words[lane * 2 + 1];
  float d[kChainsN][4];
#pragma unroll
  for (int c = 0; c < kChainsN; ++c)
#pragma unroll
    for (int i = 0; i < 4; ++i) d[c][i] = 0.f;
  // each lane names one 16 B row of the four 8x8 matrices; warps read different 2 KB slices
  const uint32_t ldm_base = smem_addr(smem);
  const uint32_t ldm_lane = static_cast<uint32_t>(warp * 512 + lane * 16);
  Stamp t0 = Stamp::now();
  for (unsigned it = 0; it < iters; ++it) {
    for (int l = 0; l < ldm_per_iter; ++l) ldmatrix_x4(a_next, ldm_base + ((ldm_lane + l * 2048) & (kLdmBytes - 1)));
#pragma unroll
    for (int c = 0; c < kChainsN; ++c) mma_16816<kBf16>(d[c], a, b);
    if (ldm_per_iter > 0) {  // the fragments loaded in this step feed the next one (double-buffered)
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = a_next[i];
    }
  }
  __syncthreads();
  Stamp t1 = Stamp::now();
  float sum = 0.f;
#pragma unroll
  for (int c = 0; c < kChainsN; ++c) sum += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  if (lane == 0) atomicAdd(&total, static_cast<unsigned long long>(iters) * kChainsN);
  __syncthreads();
  if (tid == 0)
    write_record(out, blockIdx.x, t0, t1, total, 0, __float_as_uint(sum));
}

#define GPUSIM_MMA_SYNC_KERNEL(NAME, BF16, CHAINS)                                                                  \
  extern "C" __global__ void __launch_bounds__(1024, 1)                                                           \
      NAME(unsigned long long* out, const uint4* src, unsigned long long src_bytes, unsigned iters,               \
           int ldm_per_iter) {                                                                                     \
    mma_sync_bench<BF16, CHAINS>(out, src, src_bytes, iters, ldm_per_iter);                                       \
  }

GPUSIM_MMA_SYNC_KERNEL(mma_sync_bf16_c8, true, 8)
GPUSIM_MMA_SYNC_KERNEL(mma_sync_f16_c8, false, 8)

// The same rate with fragments software-pipelined as FA2 and CUTLASS sm80 mainloops load them: fully
// unrolled steps, each issuing two ldmatrix.x4 (an A fragment and a pair of B fragments) into the register
// set the next step reads, while its eight m16n8k16 read the other set (A x B0 on chains 0-3, A x B1 on
// 4-7). No register is written twice before it is read and no copy sits on the loop's critical path (the
// loop above reloads one A fragment through a runtime-count loop and copies it, so every step waits for
// its ldmatrix). Two steps per iteration; `iters` counts steps. Kernel: mma_sync_bf16_c8_ldm_db.
__device__ __forceinline__ void mma_sync_pipelined(unsigned long long* out, const uint4* src,
                                                   unsigned long long src_bytes, unsigned iters) {
  extern __shared__ uint4 smem[];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  fill_ldm_region(smem, src, src_bytes);
  __shared__ unsigned long long total;
  if (tid == 0) total = 0;
  __syncthreads();
  const uint32_t ldm_base = smem_addr(smem);
  const uint32_t ldm_lane = static_cast<uint32_t>(warp * 512 + lane * 16);
  uint32_t a[2][4], b[2][4];
  ldmatrix_x4(a[0], ldm_base + (ldm_lane & (kLdmBytes - 1)));
  ldmatrix_x4(b[0], ldm_base + ((ldm_lane + 2048) & (kLdmBytes - 1)));
  float d[8][4];
#pragma unroll
  for (int c = 0; c < 8; ++c)
#pragma unroll
    for (int i = 0; i < 4; ++i) d[c][i] = 0.f;
  Stamp t0 = Stamp::now();
  for (unsigned it = 0; it + 1 < iters; it += 2) {
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const uint32_t offset = (it + s) * 4096u;
      ldmatrix_x4(a[1 - s], ldm_base + ((ldm_lane + offset + 4096) & (kLdmBytes - 1)));
      ldmatrix_x4(b[1 - s], ldm_base + ((ldm_lane + offset + 6144) & (kLdmBytes - 1)));
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        const uint32_t bc[2] = {b[s][(c / 4) * 2], b[s][(c / 4) * 2 + 1]};
        mma_16816<true>(d[c], a[s], bc);
      }
    }
  }
  __syncthreads();
  Stamp t1 = Stamp::now();
  float sum = 0.f;
#pragma unroll
  for (int c = 0; c < 8; ++c) sum += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  if (lane == 0) atomicAdd(&total, static_cast<unsigned long long>(iters / 2 * 2) * 8);
  __syncthreads();
  if (tid == 0) write_record(out, blockIdx.x, t0, t1, total, 0, __float_as_uint(sum));
}

extern "C" __global__ void __launch_bounds__(1024, 1)
    mma_sync_bf16_c8_ldm_db(unsigned long long* out, const uint4* src, unsigned long long src_bytes, unsigned iters,
                            int ldm_per_iter) {
  (void)ldm_per_iter;  // always two per step (the argument list is the other mma.sync kernels')
  mma_sync_pipelined(out, src, src_bytes, iters);
}

// The dependent-chain latency: one accumulator, 16 m16n8k16 per loop trip fully unrolled, operands that never
// change, so nothing but the accumulator dependence sits between two MMAs (the chain loop above, with its
// fragment copy and its runtime ldmatrix loop, measured 79 cycles on an H200 where 24 are published).
// `iters` counts MMAs (a multiple of 16). Kernel: mma_sync_bf16_c1.
constexpr int kChainUnroll = 16;

extern "C" __global__ void __launch_bounds__(1024, 1)
    mma_sync_bf16_c1(unsigned long long* out, const uint4* src, unsigned long long src_bytes, unsigned iters,
                     int ldm_per_iter) {
  (void)ldm_per_iter;
  const int lane = threadIdx.x % 32;
  const uint32_t* words = reinterpret_cast<const uint32_t*>(src);
  const uint32_t words_n = static_cast<uint32_t>(src_bytes / 4);
  uint32_t a[4], b[2];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = words[(lane * 4 + i) % words_n];
  b[0] = words[(lane * 2) % words_n];
  b[1] = words[(lane * 2 + 1) % words_n];
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  __syncthreads();
  Stamp t0 = Stamp::now();
  for (unsigned it = 0; it < iters / kChainUnroll; ++it) {
#pragma unroll
    for (int u = 0; u < kChainUnroll; ++u) mma_16816<true>(d, a, b);
  }
  __syncthreads();
  Stamp t1 = Stamp::now();
  if (threadIdx.x == 0)
    write_record(out, blockIdx.x, t0, t1, static_cast<unsigned long long>(iters / kChainUnroll) * kChainUnroll *
                                              (blockDim.x / 32), 0, __float_as_uint(d[0] + d[1] + d[2] + d[3]));
}
