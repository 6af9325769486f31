// CUDA-core pipe sharing (gpusim measure --micro; docs/microbenchmarks.md), sm_80 and later. Settles G9:
// whether the fp32 -> 16-bit and -> FP8 conversions that attention kernels run on every score (F2FP, packing
// P for the PV GEMM) issue on the MUFU pipe that exp2 uses, or on a pipe of their own. If they share it,
// an FP8 attention kernel's softmax costs 1.5 MUFU slots per score instead of 1.
// One CTA of 16 warps (4 per SMSP) per SM; every thread runs 8 independent chains, 8 unrolled rounds per
// loop trip, of one op or of two ops interleaved 1:1 (mode):
//   0 ex2.approx.f32   1 cvt.rn.bf16x2.f32   2 cvt.rn.satfinite.e4m3x2.f32 (sm_89 and later; bf16x2 before)
//   3 ex2 + bf16x2     4 ex2 + e4m3x2        5 max.f32 (FMNMX, the row max)   6 ex2 + max
// Record per CTA (common.cuh): work = results of all ops together (lanes x instructions).
#include "common.cuh"

extern "C" __device__ const unsigned gpusim_micro_smem_bytes = 0;

__device__ __forceinline__ float ex2(float v) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(-v));
  return y;
}

// The packed pair read back as one fp32 is the input's bf16 rounding (its upper 16 bits), so the chain
// needs no other instruction and stays in (0.5, 1].
__device__ __forceinline__ float pack_bf16(float v) {
  float y;
  asm volatile("{\n .reg .b32 p;\n cvt.rn.bf16x2.f32 p, %1, %1;\n mov.b32 %0, p;\n}" : "=f"(y) : "f"(v));
  return y;
}

// The FP8 pair, duplicated into 32 bits, is a tiny fp32 (the chain reaches zero and stays there: the
// conversion's rate does not depend on the value).
__device__ __forceinline__ float pack_e4m3(float v) {
#if __CUDA_ARCH__ >= 890
  float y;
  asm volatile("{\n .reg .b16 p;\n cvt.rn.satfinite.e4m3x2.f32 p, %1, %1;\n mov.b32 %0, {p, p};\n}"
               : "=f"(y) : "f"(v));
  return y;
#else
  return pack_bf16(v);
#endif
}

__device__ __forceinline__ float fmax_op(float v) {
  float y;
  asm volatile("max.f32 %0, %1, 0f3F000000;" : "=f"(y) : "f"(v));
  return y;
}

template <int kMode>
__device__ __forceinline__ void round_of(float (&x)[kChains]) {
#pragma unroll
  for (int c = 0; c < kChains; ++c) {
    if constexpr (kMode == 0) x[c] = ex2(x[c]);
    if constexpr (kMode == 1) x[c] = pack_bf16(x[c]);
    if constexpr (kMode == 2) x[c] = pack_e4m3(x[c]);
    if constexpr (kMode == 3) x[c] = (c & 1) ? pack_bf16(x[c]) : ex2(x[c]);
    if constexpr (kMode == 4) x[c] = (c & 1) ? pack_e4m3(x[c]) : ex2(x[c]);
    if constexpr (kMode == 5) x[c] = fmax_op(x[c]);
    if constexpr (kMode == 6) x[c] = (c & 1) ? fmax_op(x[c]) : ex2(x[c]);
  }
}

template <int kMode>
__device__ void pipes_loop(unsigned long long* out, unsigned iters) {
  float x[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) x[c] = 0.5f + 0.01f * c + 1e-6f * threadIdx.x;
  __syncthreads();
  Stamp t0 = Stamp::now();
  for (unsigned it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < 8; ++u) round_of<kMode>(x);
  }
  __syncthreads();
  Stamp t1 = Stamp::now();
  float sum = 0.f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) sum += x[c];
  if (threadIdx.x == 0)
    write_record(out, blockIdx.x, t0, t1, static_cast<unsigned long long>(iters) * 8 * kChains * blockDim.x, 0,
                 __float_as_uint(sum));
}

extern "C" __global__ void __launch_bounds__(1024, 1) pipes(unsigned long long* out, unsigned iters, int mode) {
  switch (mode) {
    case 0: pipes_loop<0>(out, iters); break;
    case 1: pipes_loop<1>(out, iters); break;
    case 2: pipes_loop<2>(out, iters); break;
    case 3: pipes_loop<3>(out, iters); break;
    case 4: pipes_loop<4>(out, iters); break;
    case 5: pipes_loop<5>(out, iters); break;
    default: pipes_loop<6>(out, iters); break;
  }
}
