// gemm_cp_async: the Ampere multistage GEMM that schedules/gemm_cp_async.yaml describes (CUTLASS 2.x
// MmaMultistage shape): C = A B with A row-major M x K, B column-major K x N (both bf16), fp32
// accumulation, bf16 C. A 128x256x64 CTA tile, 8 warps with 64x64 warp tiles, STAGES shared-memory
// stages filled by cp.async (LDGSTS): the prologue commits STAGES-1 k-tiles; each iteration waits for
// k-tile k (cp.async.wait_group STAGES-2), __syncthreads, issues the copies of k-tile k+STAGES-1 into
// the stage freed in the previous iteration, and runs the tensor cores (wmma -> HMMA.16816) on k-tile k.
// M, N, K must be multiples of the tile. Build: nvcc -arch=sm_80 (or sm_90a).
#include <cuda_bf16.h>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 64
#endif
#ifndef STAGES
#define STAGES 3
#endif
#define WM 64
#define WN 64
#define WARPS ((BM / WM) * (BN / WN))
#define THREADS (WARPS * 32)

#include "wmma_warp_tile.cuh"

using namespace nvcuda;
using bf16 = __nv_bfloat16;

namespace {

constexpr int kChunkElems = 8;  // one 16-byte cp.async
constexpr int kAChunks = BM * BK / kChunkElems / THREADS;
constexpr int kBChunks = BN * BK / kChunkElems / THREADS;
constexpr int kStageElems = (BM + BN) * BK;

__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src) {
  unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem_src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
}

__device__ __forceinline__ void issue_tile(bf16* stage, const bf16* A, const bf16* B, int K, int m0, int n0,
                                           int k0) {
#pragma unroll
  for (int i = 0; i < kAChunks; ++i) {
    int chunk = threadIdx.x + i * THREADS;
    int row = chunk / (BK / kChunkElems), col = chunk % (BK / kChunkElems) * kChunkElems;
    cp_async_16(stage + row * BK + col, A + size_t(m0 + row) * K + k0 + col);
  }
#pragma unroll
  for (int i = 0; i < kBChunks; ++i) {
    int chunk = threadIdx.x + i * THREADS;
    int row = chunk / (BK / kChunkElems), col = chunk % (BK / kChunkElems) * kChunkElems;
    cp_async_16(stage + BM * BK + row * BK + col, B + size_t(n0 + row) * K + k0 + col);
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    gemm_cp_async(const bf16* __restrict__ A, const bf16* __restrict__ B, bf16* __restrict__ C, int M, int N,
                  int K) {
  extern __shared__ __align__(128) bf16 smem[];  // STAGES x [A: BM x BK | B: BN x BK], K contiguous
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int warp = threadIdx.x / 32;
  const int warp_m = warp / (BN / WN), warp_n = warp % (BN / WN);
  const int k_tiles = K / BK;

  gpusim_wmma::Accumulators acc;
  gpusim_wmma::zero(acc);

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) issue_tile(smem + s * kStageElems, A, B, K, m0, n0, s * BK);
    cp_async_commit();
  }

  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    int next = kt + STAGES - 1;
    if (next < k_tiles) issue_tile(smem + (next % STAGES) * kStageElems, A, B, K, m0, n0, next * BK);
    cp_async_commit();
    const bf16* stage = smem + (kt % STAGES) * kStageElems;
    gpusim_wmma::mma_stage<bf16>(acc, stage, warp_m, warp_n);
  }
  cp_async_wait<0>();
  __syncthreads();  // shared memory is reused by the epilogue

  gpusim_wmma::store_c<bf16>(acc, smem, C, N, m0, n0, warp, warp_m, warp_n,
                              [](float v) { return __float2bfloat16(v); });
}

GPUSIM_EXPORT_LAUNCH_GEOMETRY(STAGES * kStageElems * sizeof(bf16))
