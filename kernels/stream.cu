// stream: the bandwidth kernel that schedules/stream.yaml describes. op 0 copies (c = a), op 1 is the
// STREAM triad (c = a + s * b); 16-byte vector loads and stores, grid-stride over n4 float4 elements.
// Build: nvcc -arch=sm_80 / sm_90a / sm_100a.
#ifndef THREADS
#define THREADS 256
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
    stream_copy(const float4* __restrict__ a, float4* __restrict__ c, long long n4) {
  for (long long i = blockIdx.x * (long long)THREADS + threadIdx.x; i < n4; i += (long long)gridDim.x * THREADS)
    c[i] = a[i];
}

extern "C" __global__ void __launch_bounds__(THREADS)
    stream_triad(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ c, float s,
                 long long n4) {
  for (long long i = blockIdx.x * (long long)THREADS + threadIdx.x; i < n4; i += (long long)gridDim.x * THREADS) {
    float4 x = a[i], y = b[i];
    c[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
}

extern "C" __device__ const unsigned gpusim_threads_per_cta = THREADS;
