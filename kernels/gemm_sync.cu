// gemm_sync: the Volta-style synchronous GEMM that schedules/gemm_sync.yaml describes (CUTLASS 2.x
// MmaPipelined shape): C = A B with A row-major M x K, B column-major K x N (both fp16), fp32
// accumulation, fp16 C. A 128x256x32 CTA tile, 8 warps with 64x64 warp tiles, two shared-memory stages:
// the next k-tile is prefetched from global memory into registers while the tensor cores work on the
// current one, stored to the other stage, and published with one __syncthreads per k-tile. Tensor-core
// math through wmma (mma.sync). M, N, K must be multiples of the tile (the launcher ensures it).
// Build: nvcc -arch=sm_80 (CUDA 13 no longer targets sm_70; the SASS is HMMA.16816 from sm_80 on).
#include <cuda_fp16.h>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 32
#endif
#define WM 64
#define WN 64
#define WARPS ((BM / WM) * (BN / WN))
#define THREADS (WARPS * 32)

#include "wmma_warp_tile.cuh"

namespace {

constexpr int kChunkHalves = 8;                                    // one 16-byte vector
constexpr int kAChunks = BM * BK / kChunkHalves / THREADS;         // 16-byte chunks per thread per k-tile
constexpr int kBChunks = BN * BK / kChunkHalves / THREADS;
constexpr int kStageHalves = (BM + BN) * BK;

__device__ __forceinline__ void load_tile(const half* A, const half* B, int K, int m0, int n0, int k0,
                                          uint4 (&a_regs)[kAChunks], uint4 (&b_regs)[kBChunks]) {
#pragma unroll
  for (int i = 0; i < kAChunks; ++i) {
    int chunk = threadIdx.x + i * THREADS;
    int row = chunk / (BK / kChunkHalves), col = chunk % (BK / kChunkHalves) * kChunkHalves;
    a_regs[i] = *reinterpret_cast<const uint4*>(A + size_t(m0 + row) * K + k0 + col);
  }
#pragma unroll
  for (int i = 0; i < kBChunks; ++i) {
    int chunk = threadIdx.x + i * THREADS;
    int row = chunk / (BK / kChunkHalves), col = chunk % (BK / kChunkHalves) * kChunkHalves;
    b_regs[i] = *reinterpret_cast<const uint4*>(B + size_t(n0 + row) * K + k0 + col);
  }
}

__device__ __forceinline__ void store_tile(half* stage, const uint4 (&a_regs)[kAChunks],
                                           const uint4 (&b_regs)[kBChunks]) {
#pragma unroll
  for (int i = 0; i < kAChunks; ++i)
    reinterpret_cast<uint4*>(stage)[threadIdx.x + i * THREADS] = a_regs[i];
#pragma unroll
  for (int i = 0; i < kBChunks; ++i)
    reinterpret_cast<uint4*>(stage + BM * BK)[threadIdx.x + i * THREADS] = b_regs[i];
}

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    gemm_sync(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(128) half smem[];  // 2 stages of [A: BM x BK | B: BN x BK], K contiguous
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int warp = threadIdx.x / 32;
  const int warp_m = warp / (BN / WN), warp_n = warp % (BN / WN);

  gpusim_wmma::Accumulators acc;
  gpusim_wmma::zero(acc);

  uint4 a_regs[kAChunks], b_regs[kBChunks];
  load_tile(A, B, K, m0, n0, 0, a_regs, b_regs);
  store_tile(smem, a_regs, b_regs);
  __syncthreads();

  const int k_tiles = K / BK;
  for (int kt = 0; kt < k_tiles; ++kt) {
    half* stage = smem + (kt % 2) * kStageHalves;
    if (kt + 1 < k_tiles) load_tile(A, B, K, m0, n0, (kt + 1) * BK, a_regs, b_regs);
    gpusim_wmma::mma_stage<half>(acc, stage, warp_m, warp_n);
    if (kt + 1 < k_tiles) store_tile(smem + ((kt + 1) % 2) * kStageHalves, a_regs, b_regs);
    __syncthreads();
  }

  gpusim_wmma::store_c<half>(acc, smem, C, N, m0, n0, warp, warp_m, warp_n,
                              [](float v) { return __float2half(v); });
}

GPUSIM_EXPORT_LAUNCH_GEOMETRY(2 * kStageHalves * sizeof(half))
