// L2 bandwidth against the SM clock (gpusim measure --micro; docs/microbenchmarks.md), sm_90a. Settles
// G6's clock question, the `l2_clock` mechanism: does the L2 deliver a fixed number of bytes per SM clock
// (its bandwidth falls when the power limit pulls the SM clock down) or a fixed number per second? One
// CTA per SM for `duration_ns`: warpgroups 2-3 read the CTA's own L2-resident chunk with 16-byte
// ld.global.cg (four loads in flight per thread, a named barrier per pass), while warpgroups 0-1 keep the
// tensor core busy with wgmma m64n128k16 SS (two warpgroups keep it full) on the host's operands: zero data (low power, the clock near its
// maximum), random data (the board at its power limit, the clock pulled down), or no wgmma at all
// (`mma_on` = 0). The same instruction stream at two clocks: the ratio of the readers' bytes per ns over
// the ratio of the clocks says how the L2 scales.
// Two records per CTA (common.cuh): slot 2 x CTA the readers' interval, work = bytes read, word 6 = samples
// taken; slot 2 x CTA + 1 the wgmma warpgroups' (warpgroup 0's thread 0; zero when mma_on = 0), work =
// wgmma instructions of both warpgroups. Samples:
// kSamples triples per CTA of (%clock64, %globaltimer, passes done), one every duration_ns / kSamples.
#include "common.cuh"

constexpr int kSamples = 64;
extern "C" __device__ const unsigned gpusim_micro_samples = kSamples;
extern "C" __device__ const unsigned gpusim_micro_max_threads = 512;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "wgmma_ops.cuh"
extern "C" __device__ const unsigned gpusim_micro_smem_bytes = 1024 + 2 * 8192 + 32768;

extern "C" __global__ void __launch_bounds__(512, 1)
    l2_read_beside_wgmma(unsigned long long* out, unsigned long long* samples, const uint4* src,
                         unsigned long long src_bytes, const uint4* buf, unsigned long long chunk_bytes, int mma_on,
                         unsigned long long duration_ns) {
  using Ops = WgmmaOps<128>;  // 64 accumulators: 512 threads leave 128 registers each
  extern __shared__ uint8_t smem_raw[];
  __shared__ volatile int stop, readers_done;
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  const int tid = threadIdx.x, wg = tid / 128;
  const uint32_t src_words = static_cast<uint32_t>(src_bytes / 16);
  for (uint32_t i = tid; i < (2 * 8192 + 32768) / 16; i += blockDim.x) reinterpret_cast<uint4*>(smem)[i] = src[i % src_words];
  if (tid == 0) stop = readers_done = 0;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const unsigned long long start_ns = global_ns();
  if (wg < 2) {
    if (!mma_on) return;
    float d[Ops::kRegs];
#pragma unroll
    for (int i = 0; i < Ops::kRegs; ++i) d[i] = 0.f;
    const uint64_t desc_a = sw128_desc(smem_addr(smem + wg * 8192));
    const uint64_t desc_b = sw128_desc(smem_addr(smem + 2 * 8192));
    const unsigned long long deadline = start_ns + duration_ns + 1000000000ull;
    unsigned long long issued = 0;
    Stamp m0 = Stamp::now();
    while (!stop && global_ns() < deadline) {
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int k = 0; k < 4; ++k) Ops::ss(d, desc_a + 2 * k, desc_b + 2 * k);
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
      issued += 4;
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    Stamp m1 = Stamp::now();
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < Ops::kRegs; ++i) sum += d[i];
    if (tid == 0) write_record(out, 2 * blockIdx.x + 1, m0, m1, 2 * issued, 0, __float_as_uint(sum));
    return;
  }
  const int r = tid - 256;  // reader thread 0..255
  const unsigned T = 256;
  const unsigned long long n = chunk_bytes / 16;
  const uint4* base = buf + static_cast<unsigned long long>(blockIdx.x) * n;
  const unsigned long long every_ns = duration_ns / kSamples;
  unsigned long long next_sample = start_ns + every_ns, passes = 0;
  uint32_t acc = 0;
  int taken = 0;
  Stamp t0 = Stamp::now();
  for (;;) {
    unsigned long long i = r;
    for (; i + 3 * T < n; i += 4 * T) {
      uint4 v0 = load_cg(base + i), v1 = load_cg(base + i + T), v2 = load_cg(base + i + 2 * T),
            v3 = load_cg(base + i + 3 * T);
      acc ^= v0.x ^ v1.y ^ v2.z ^ v3.w;
    }
    for (; i < n; i += T) acc ^= load_cg(base + i).x;
    ++passes;
    if (r == 0) {  // one thread decides for the 256 (the barrier below publishes it): no reader is left behind
      const unsigned long long now = global_ns();
      if (now >= next_sample && taken < kSamples) {
        unsigned long long* s = samples + (static_cast<size_t>(blockIdx.x) * kSamples + taken) * 3;
        s[0] = sm_cycles();
        s[1] = now;
        s[2] = passes;
        ++taken;
        next_sample += every_ns;
      }
      if (now - start_ns >= duration_ns) readers_done = 1;
    }
    asm volatile("bar.sync 3, 256;" ::: "memory");
    if (readers_done) break;
  }
  Stamp t1 = Stamp::now();
  if (r == 0) stop = 1;
  if (r == 0) write_record(out, 2 * blockIdx.x, t0, t1, passes * n * 16, taken, acc);
}
#else
extern "C" __device__ const unsigned gpusim_micro_smem_bytes = 1024;
#endif
