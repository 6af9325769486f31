// Clock under tensor load (gpusim measure --micro; docs/microbenchmarks.md). Settles G4: the SM clock
// a full tensor load sustains under the board power limit, with zero and with random operands (the
// host fills `src` with zeros or random bf16). Every SM runs one CTA for about two seconds; warp 0 of
// each CTA samples (%clock64, %globaltimer) every `sample_every` iterations into `samples`
// (kSamples pairs per CTA), so the host gets the clock in MHz = cycles / ns x 1000 over time.
//   tensor_clock_wgmma (sm_90a): 2 warpgroups x 4 wgmma m64n256k16 SS per iteration (the widest
//     instruction, both warpgroups sharing B as CUTLASS's cooperative GEMM does);
//   tensor_clock_mma_sync (sm_80 and later): 16 warps x 8 independent mma.sync m16n8k16 per iteration.
// Record per CTA (common.cuh): work = tensor instructions of the whole CTA, word 6 = samples taken.
#include "common.cuh"

constexpr int kSamples = 64;
extern "C" __device__ const unsigned gpusim_micro_samples = kSamples;

__device__ __forceinline__ void sample(unsigned long long* samples, unsigned it, unsigned every, int& n) {
  if (threadIdx.x == 0 && every > 0 && it % every == 0 && n < kSamples) {
    unsigned long long* s = samples + (static_cast<size_t>(blockIdx.x) * kSamples + n) * 2;
    s[0] = sm_cycles();
    s[1] = global_ns();
    ++n;
  }
  __syncwarp();
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "wgmma_ops.cuh"
extern "C" __device__ const unsigned gpusim_micro_smem_bytes = 1024 + 2 * 8192 + 32768;

extern "C" __global__ void __launch_bounds__(256, 1)
    tensor_clock_wgmma(unsigned long long* out, unsigned long long* samples, const uint4* src,
                       unsigned long long src_bytes, unsigned iters, unsigned sample_every) {
  using Ops = WgmmaOps<256>;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  const int tid = threadIdx.x, wg = tid / 128;
  const uint32_t src_words = static_cast<uint32_t>(src_bytes / 16);
  for (uint32_t i = tid; i < (2 * 8192 + 32768) / 16; i += blockDim.x) reinterpret_cast<uint4*>(smem)[i] = src[i % src_words];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  float d[Ops::kRegs];
#pragma unroll
  for (int i = 0; i < Ops::kRegs; ++i) d[i] = 0.f;
  const uint64_t desc_a = sw128_desc(smem_addr(smem + wg * 8192));
  const uint64_t desc_b = sw128_desc(smem_addr(smem + 2 * 8192));
  int n = 0;
  Stamp t0 = Stamp::now();
  for (unsigned it = 0; it < iters; ++it) {
    if (wg == 0) sample(samples, it, sample_every, n);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int k = 0; k < 4; ++k) Ops::ss(d, desc_a + 2 * k, desc_b + 2 * k);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
  for (int i = 0; i < Ops::kRegs; ++i) asm volatile("" : "+f"(d[i])::"memory");
  __syncthreads();
  Stamp t1 = Stamp::now();
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < Ops::kRegs; ++i) sum += d[i];
  if (tid == 0) write_record(out, blockIdx.x, t0, t1, static_cast<unsigned long long>(iters) * 4 * 2, n,
                             __float_as_uint(sum));
}
#else
extern "C" __device__ const unsigned gpusim_micro_smem_bytes = 1024;
#endif

extern "C" __global__ void __launch_bounds__(512, 1)
    tensor_clock_mma_sync(unsigned long long* out, unsigned long long* samples, const uint4* src,
                          unsigned long long src_bytes, unsigned iters, unsigned sample_every) {
  const int tid = threadIdx.x;
  const uint32_t* words = reinterpret_cast<const uint32_t*>(src);
  const uint32_t nwords = static_cast<uint32_t>(src_bytes / 4);
  uint32_t a[4], b[2];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = words[(tid * 6 + i) % nwords];
  b[0] = words[(tid * 6 + 4) % nwords];
  b[1] = words[(tid * 6 + 5) % nwords];
  float d[8][4];
#pragma unroll
  for (int c = 0; c < 8; ++c)
#pragma unroll
    for (int i = 0; i < 4; ++i) d[c][i] = 0.f;
  int n = 0;
  __syncthreads();
  Stamp t0 = Stamp::now();
  for (unsigned it = 0; it < iters; ++it) {
    if (tid < 32) sample(samples, it, sample_every, n);
#pragma unroll
    for (int c = 0; c < 8; ++c)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
          "{%0, %1, %2, %3};"
          : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  __syncthreads();
  Stamp t1 = Stamp::now();
  float sum = 0.f;
#pragma unroll
  for (int c = 0; c < 8; ++c) sum += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  if (tid == 0) write_record(out, blockIdx.x, t0, t1, static_cast<unsigned long long>(iters) * 8 * (blockDim.x / 32), n,
                             __float_as_uint(sum));
}
