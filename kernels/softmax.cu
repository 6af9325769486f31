// softmax: a row softmax (y = exp(x - max) / sum, fp32), one warp per row, ROWS_PER_CTA rows per CTA.
// Each lane keeps COLS / 32 values in registers: one pass for the row max (FMNMX + shuffles), one for
// exp2 (FFMA by log2(e), MUFU.EX2) and the sum, one to scale (MUFU.RCP once, FMUL). The instruction mix
// per score is what an attention schedule's softmax mix states. Build: nvcc -arch=sm_80 / sm_90a.
#ifndef COLS
#define COLS 1024
#endif
#ifndef ROWS_PER_CTA
#define ROWS_PER_CTA 4
#endif
#define PER_LANE (COLS / 32)

// No __launch_bounds__: they would override nvcc -maxrregcount (the CTA size is in gpusim_threads_per_cta).
extern "C" __global__ void row_softmax(const float* __restrict__ x, float* __restrict__ y, int rows) {
  const int row = blockIdx.x * ROWS_PER_CTA + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + size_t(row) * COLS;
  float v[PER_LANE];
  float row_max = -INFINITY;
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) {
    v[i] = in[i * 32 + lane];
    row_max = fmaxf(row_max, v[i]);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) row_max = fmaxf(row_max, __shfl_xor_sync(0xffffffffu, row_max, offset));
  const float log2e = 1.4426950408889634f;
  const float scaled_max = row_max * log2e;
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) {
    v[i] = exp2f(fmaf(v[i], log2e, -scaled_max));
    sum += v[i];
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  const float inv = __frcp_rn(sum);
  float* out = y + size_t(row) * COLS;
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) out[i * 32 + lane] = v[i] * inv;
}

extern "C" __device__ const unsigned gpusim_threads_per_cta = ROWS_PER_CTA * 32;
extern "C" __device__ const unsigned gpusim_cols = COLS;
