// The warp-tile pieces shared by gemm_sync.cu and gemm_cp_async.cu: each warp owns a WM x WN tile of C
// as (WM/16) x (WN/16) wmma 16x16x16 fp32 accumulators; a shared-memory stage holds [A: BM x BK | B: BN x
// BK] with K contiguous. The including kernel defines BM, BN, BK, WM, WN, THREADS before including.
#pragma once
#include <mma.h>

namespace gpusim_wmma {

using namespace nvcuda;

using Accumulators = wmma::fragment<wmma::accumulator, 16, 16, 16, float>[WM / 16][WN / 16];

__device__ __forceinline__ void zero(Accumulators& acc) {
#pragma unroll
  for (int i = 0; i < WM / 16; ++i)
#pragma unroll
    for (int j = 0; j < WN / 16; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
}

// One k-tile of tensor-core work for this warp from one shared-memory stage.
template <typename Elem>
__device__ __forceinline__ void mma_stage(Accumulators& acc, const Elem* stage, int warp_m, int warp_n) {
#pragma unroll
  for (int kk = 0; kk < BK; kk += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, Elem, wmma::row_major> a_frag[WM / 16];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, Elem, wmma::col_major> b_frag;
#pragma unroll
    for (int i = 0; i < WM / 16; ++i)
      wmma::load_matrix_sync(a_frag[i], stage + (warp_m * WM + i * 16) * BK + kk, BK);
#pragma unroll
    for (int j = 0; j < WN / 16; ++j) {  // one B fragment live at a time: fewer registers
      wmma::load_matrix_sync(b_frag, stage + BM * BK + (warp_n * WN + j * 16) * BK + kk, BK);
#pragma unroll
      for (int i = 0; i < WM / 16; ++i) wmma::mma_sync(acc[i][j], a_frag[i], b_frag, acc[i][j]);
    }
  }
}

// Epilogue: stage each warp's accumulators through shared memory (16x16 fp32 per warp), convert, store
// C (row-major M x N). The caller has finished with shared memory (it is reused here).
template <typename Elem, typename Convert>
__device__ __forceinline__ void store_c(const Accumulators& acc, void* smem, Elem* C, int N, int m0,
                                        int n0, int warp, int warp_m, int warp_n, Convert convert) {
  float* staging = reinterpret_cast<float*>(smem) + warp * 16 * 16;
#pragma unroll
  for (int i = 0; i < WM / 16; ++i)
#pragma unroll
    for (int j = 0; j < WN / 16; ++j) {
      wmma::store_matrix_sync(staging, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = threadIdx.x % 32; e < 16 * 16; e += 32) {
        int row = m0 + warp_m * WM + i * 16 + e / 16, col = n0 + warp_n * WN + j * 16 + e % 16;
        C[size_t(row) * N + col] = convert(staging[e]);
      }
      __syncwarp();
    }
}

}  // namespace gpusim_wmma

// Launch geometry for the launcher: grid (N / BN, M / BM), THREADS threads, this much dynamic smem.
#define GPUSIM_EXPORT_LAUNCH_GEOMETRY(dynamic_smem_bytes)                                  \
  extern "C" __device__ const unsigned gpusim_dynamic_smem_bytes = (dynamic_smem_bytes); \
  extern "C" __device__ const unsigned gpusim_threads_per_cta = THREADS;                 \
  extern "C" __device__ const unsigned gpusim_tile_m = BM;                               \
  extern "C" __device__ const unsigned gpusim_tile_n = BN;
