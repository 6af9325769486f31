// wgmma microbenchmark (gpusim measure --micro; docs/microbenchmarks.md), sm_90a only.
// Settles G7 (wgmma rate by N, SS vs RS), G1 (wgmma beside MUFU.EX2 / FFMA work on the same SM: other
// warps of the same SMSPs, or the MMA warps themselves between issue and wait) and G3 (wgmma SS while
// other warps stream lds / sts, or while the TMA engine fills shared memory with cp.async.bulk).
//
// One CTA per SM (the host asks for more than half of the SM's shared memory). Warpgroups 0 ..
// mma_wgs-1 loop `mma_iters` times over {4 wgmma m64nNk16 (K = 64 in four k16 slices of a 128B-swizzled
// K-major tile, as CUTLASS's mainloop does), commit, optional inline work, wait_group 1}. The warpgroups
// after them (the "side" warps, 0..2 warpgroups) run side_op until every MMA warpgroup is done (or
// side_iters iterations when there is none). Records per CTA (common.cuh): slot w < mma_wgs is MMA
// warpgroup w (work = wgmma instructions, word 6 = its inline MUFU/FFMA results), slot mma_wgs the
// side warps together (work = MUFU or FFMA results, or shared-memory bytes). Kernels: wgmma_{ss,rs}_n{64,128,176,256},
// and with 16 wgmma per group wgmma_{ss,rs}_n64_k16, wgmma_ss_n128_k16.
#include "common.cuh"
#include "wgmma_ops.cuh"

enum SideOp { kSideNone = 0, kSideEx2 = 1, kSideFfma = 2, kSideLds = 3, kSideSts = 4, kSideBulk = 5 };
enum InlineOp { kInlineNone = 0, kInlineEx2 = 1, kInlineFfma = 2 };

constexpr int kMaxWarpgroups = 3;
constexpr int kKSteps = 4;                    // wgmma per commit group: BK = 64 bf16 = one 128 B row
constexpr uint32_t kCtrlBytes = 1024;         // counters and mbarriers
constexpr uint32_t kATileBytes = 64 * 128;    // 64 rows x 128 B per MMA warpgroup
constexpr uint32_t kBTileMaxBytes = 256 * 128;
constexpr uint32_t kSideBytes = 64 * 1024;    // lds / sts / bulk-copy region
constexpr uint32_t kBulkChunkBytes = 16 * 1024;
constexpr int kBulkBuffers = 4;
constexpr uint32_t kSmemBytes = 1024 + kCtrlBytes + 2 * kATileBytes + kBTileMaxBytes + kSideBytes;
extern "C" __device__ const unsigned gpusim_micro_smem_bytes = kSmemBytes;
extern "C" __device__ const unsigned gpusim_micro_max_threads = 128 * kMaxWarpgroups;

__device__ __forceinline__ void bulk_issue(uint32_t dst, const void* src, uint32_t bytes, uint32_t mbar) {
  asm volatile(
      "{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(mbar), "r"(bytes)
      : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(mbar)
               : "memory");
}

// Wait for the phase with this parity to complete; false at the deadline.
__device__ __forceinline__ bool mbar_wait(uint32_t mbar, uint32_t parity, unsigned long long deadline) {
  for (;;) {
    uint32_t ok;
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(ok)
        : "r"(mbar), "r"(parity)
        : "memory");
    if (ok) return true;
    if (global_ns() > deadline) return false;
  }
}

template <int N, bool kRS, int kSteps = kKSteps>
__device__ __forceinline__ void wgmma_bench(unsigned long long* out, const uint4* src, unsigned long long src_bytes,
                                            unsigned mma_iters, unsigned side_iters, int mma_wgs, int side_op,
                                            int inline_op, int inline_count, unsigned long long timeout_ns) {
  using Ops = WgmmaOps<N>;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  int* done_count = reinterpret_cast<int*>(smem);
  unsigned long long* side_work = reinterpret_cast<unsigned long long*>(smem + 8);
  const uint32_t mbar0 = smem_addr(smem + 64);
  uint8_t* a_tiles = smem + kCtrlBytes;
  uint8_t* b_tile = a_tiles + 2 * kATileBytes;
  uint8_t* side = b_tile + kBTileMaxBytes;
  const int tid = threadIdx.x;
  const int wg = tid / 128;
  const int nwg = blockDim.x / 128;

  // Operands from the source buffer (zeros or random bf16, the host's choice), side region zeroed.
  const uint32_t tile_words = (2 * kATileBytes + kBTileMaxBytes) / 16;
  const uint32_t src_words = static_cast<uint32_t>(src_bytes / 16);
  for (uint32_t i = tid; i < tile_words; i += blockDim.x)
    reinterpret_cast<uint4*>(a_tiles)[i] = src[i % src_words];
  for (uint32_t i = tid; i < kSideBytes / 16; i += blockDim.x) reinterpret_cast<uint4*>(side)[i] = make_uint4(0, 0, 0, 0);
  if (tid == 0) {
    *done_count = 0;
    *side_work = 0;
    for (int b = 0; b < kBulkBuffers; ++b)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(mbar0 + 8 * b) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic-proxy writes -> wgmma / TMA reads
  __syncthreads();
  const int slots = kMaxWarpgroups;

  if (wg < mma_wgs) {  // ---- MMA warpgroup
    float d[Ops::kRegs];
#pragma unroll
    for (int i = 0; i < Ops::kRegs; ++i) d[i] = 0.f;
    uint32_t a[4];
    const uint32_t* a_words = reinterpret_cast<const uint32_t*>(a_tiles + wg * kATileBytes);
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = a_words[(tid % 128) * 4 + i];
    float x[kChains];
#pragma unroll
    for (int c = 0; c < kChains; ++c) x[c] = 0.5f + 0.01f * c;
    const uint64_t desc_a = sw128_desc(smem_addr(a_tiles + wg * kATileBytes));
    const uint64_t desc_b = sw128_desc(smem_addr(b_tile));
    Stamp t0 = Stamp::now();
    for (unsigned it = 0; it < mma_iters; ++it) {
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");  // as CUTLASS's warpgroup_arrive per k-tile
#pragma unroll
      for (int k = 0; k < kSteps; ++k) {  // the next k16 slice is 32 B further: +2 in the address field
        if constexpr (kRS)
          Ops::rs(d, a, desc_b + 2 * (k % kKSteps));
        else
          Ops::ss(d, desc_a + 2 * (k % kKSteps), desc_b + 2 * (k % kKSteps));
      }
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      if (inline_op == kInlineEx2) {
        for (int r = 0; r < inline_count; ++r) ex2_chains(x);
      } else if (inline_op == kInlineFfma) {
        for (int r = 0; r < inline_count; ++r) ffma_chains(x);
      }
      asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
    for (int i = 0; i < Ops::kRegs; ++i) asm volatile("" : "+f"(d[i])::"memory");
    warpgroup_barrier(wg);
    Stamp t1 = Stamp::now();
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < Ops::kRegs; ++i) sum += d[i];
#pragma unroll
    for (int c = 0; c < kChains; ++c) sum += x[c];
    if (tid % 128 == 0) {
      atomicAdd(done_count, 1);
      unsigned long long inline_ops = static_cast<unsigned long long>(inline_op != kInlineNone) * mma_iters *
                                      inline_count * kChains * 128ull;
      write_record(out, blockIdx.x * slots + wg, t0, t1, static_cast<unsigned long long>(mma_iters) * kSteps,
                   inline_ops, __float_as_uint(sum));
    }
    return;
  }

  // ---- side warps (every warpgroup after the MMA ones)
  const int s = tid - mma_wgs * 128;
  const int nside = (nwg - mma_wgs) * 128;
  volatile int* done = done_count;
  Stamp t0 = Stamp::now();
  const unsigned long long deadline = t0.ns + timeout_ns;
  unsigned long long work = 0, flags = 0;
  uint32_t acc = 0;
  float x[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) x[c] = 0.5f + 0.01f * c + 1e-6f * s;
  auto stop = [&](unsigned it) -> bool {
    if ((it & 15) == 0 && global_ns() > deadline) {
      flags |= kFlagTimeout;
      return true;
    }
    return mma_wgs > 0 ? *done >= mma_wgs : it >= side_iters;
  };
  if (side_op == kSideEx2 || side_op == kSideFfma) {
    for (unsigned it = 0; !stop(it); ++it) {
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        if (side_op == kSideEx2)
          ex2_chains(x);
        else
          ffma_chains(x);
      }
      work += 8 * kChains;
    }
  } else if (side_op == kSideLds || side_op == kSideSts) {
    const uint32_t base = smem_addr(side);
    const uint32_t step = static_cast<uint32_t>(nside) * 16;
    uint32_t off = static_cast<uint32_t>(s) * 16;
    for (unsigned it = 0; !stop(it); ++it) {
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const uint32_t addr = base + ((off + u * step) & (kSideBytes - 1));
        if (side_op == kSideLds) {
          uint32_t v0, v1, v2, v3;
          asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3) : "r"(addr));
          acc ^= v0 ^ v1 ^ v2 ^ v3;
        } else {
          asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};" ::"r"(addr), "r"(acc + u) : "memory");
        }
      }
      off = (off + 8 * step) & (kSideBytes - 1);
      work += 8 * 16;
    }
  } else if (side_op == kSideBulk) {
    if (s == 0) {  // one thread drives the TMA engine: kBulkBuffers chunks in flight
      const uint32_t dst = smem_addr(side);
      const unsigned long long chunks = src_bytes / kBulkChunkBytes;
      const uint8_t* gsrc = reinterpret_cast<const uint8_t*>(src);
      unsigned long long next = blockIdx.x;
      uint32_t parity = 0;  // bit b: the phase parity buffer b waits for next
      for (int b = 0; b < kBulkBuffers; ++b, ++next)
        bulk_issue(dst + b * kBulkChunkBytes, gsrc + (next % chunks) * kBulkChunkBytes, kBulkChunkBytes, mbar0 + 8 * b);
      int inflight = kBulkBuffers;
      bool stopping = false;
      for (unsigned it = 0; inflight > 0; ++it) {
        const int b = it % kBulkBuffers;
        if (!mbar_wait(mbar0 + 8 * b, (parity >> b) & 1u, deadline)) {
          flags |= kFlagTimeout;
          break;
        }
        parity ^= 1u << b;
        work += kBulkChunkBytes;
        --inflight;
        stopping = stopping || stop(it);
        if (!stopping) {
          bulk_issue(dst + b * kBulkChunkBytes, gsrc + (next++ % chunks) * kBulkChunkBytes, kBulkChunkBytes,
                     mbar0 + 8 * b);
          ++inflight;
        }
      }
    }
  }
  atomicAdd(side_work, work);
  asm volatile("bar.sync 4, %0;" ::"r"(nside) : "memory");
  Stamp t1 = Stamp::now();
  float sum = 0.f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) sum += x[c];
  if (s == 0) write_record(out, blockIdx.x * slots + mma_wgs, t0, t1, *side_work, flags, __float_as_uint(sum) ^ acc);
}

#define GPUSIM_WGMMA_KERNEL(NAME, N, RS)                                                                           \
  extern "C" __global__ void __launch_bounds__(128 * kMaxWarpgroups, 1)                                           \
      NAME(unsigned long long* out, const uint4* src, unsigned long long src_bytes, unsigned mma_iters,           \
           unsigned side_iters, int mma_wgs, int side_op, int inline_op, int inline_count,                        \
           unsigned long long timeout_ns) {                                                                        \
    wgmma_bench<N, RS>(out, src, src_bytes, mma_iters, side_iters, mma_wgs, side_op, inline_op, inline_count,     \
                       timeout_ns);                                                                                \
  }

GPUSIM_WGMMA_KERNEL(wgmma_ss_n64, 64, false)
GPUSIM_WGMMA_KERNEL(wgmma_ss_n128, 128, false)
GPUSIM_WGMMA_KERNEL(wgmma_ss_n176, 176, false)
GPUSIM_WGMMA_KERNEL(wgmma_ss_n256, 256, false)
GPUSIM_WGMMA_KERNEL(wgmma_rs_n64, 64, true)
GPUSIM_WGMMA_KERNEL(wgmma_rs_n128, 128, true)
GPUSIM_WGMMA_KERNEL(wgmma_rs_n176, 176, true)
GPUSIM_WGMMA_KERNEL(wgmma_rs_n256, 256, true)

// 16 wgmma per commit group (the 4 k16 slices of the tile, 4 times: a 256-deep K block as FA3's P V or a
// CUTLASS k-tile of 256 issues): separates a per-group cost (fence, commit, wait_group 1) from the latency of
// one dependent accumulate, which the 4-instruction groups above cannot tell apart at N = 64.
#define GPUSIM_WGMMA_KERNEL_STEPS(NAME, N, RS, STEPS)                                                              \
  extern "C" __global__ void __launch_bounds__(128 * kMaxWarpgroups, 1)                                           \
      NAME(unsigned long long* out, const uint4* src, unsigned long long src_bytes, unsigned mma_iters,           \
           unsigned side_iters, int mma_wgs, int side_op, int inline_op, int inline_count,                        \
           unsigned long long timeout_ns) {                                                                        \
    wgmma_bench<N, RS, STEPS>(out, src, src_bytes, mma_iters, side_iters, mma_wgs, side_op, inline_op,            \
                              inline_count, timeout_ns);                                                           \
  }

GPUSIM_WGMMA_KERNEL_STEPS(wgmma_ss_n64_k16, 64, false, 16)
GPUSIM_WGMMA_KERNEL_STEPS(wgmma_rs_n64_k16, 64, true, 16)
GPUSIM_WGMMA_KERNEL_STEPS(wgmma_ss_n128_k16, 128, false, 16)
