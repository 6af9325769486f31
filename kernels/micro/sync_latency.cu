// Barrier wake-up latency (gpusim measure --micro; docs/microbenchmarks.md), sm_80 and later. Settles G12:
// what a round of a named barrier (bar.sync, as __syncthreads and CUTLASS's NamedBarrier) costs the warps
// that meet at it, and how long a warp blocked on a barrier takes to issue again once the barrier
// completes, for named barriers and mbarriers (the stage rings of TMA and warp-specialized pipelines).
// One CTA per SM; each mode times `iters` iterations on warp 0's lane 0:
//   mode 0: every warp of the CTA runs `bar.sync 1` in a loop, all arriving together: cycles per round;
//   mode 1: warps 0 and 1 (SMSPs 0 and 1) hand a named barrier back and forth (bar.arrive on one,
//           bar.sync on the other): each iteration is two hand-offs, arrive -> the blocked warp issues;
//   mode 2: lane 0 of warps 0 and 1 hand two mbarriers back and forth (arrive, then wait for the other's
//           arrive in try_wait / test_wait): two hand-offs per iteration.
// Record per CTA (common.cuh): work = iterations; flags bit 0 when an mbarrier wait hit its deadline.
#include "common.cuh"

extern "C" __device__ const unsigned gpusim_micro_smem_bytes = 0;
extern "C" __device__ const unsigned gpusim_micro_max_threads = 1024;

__device__ __forceinline__ void mbar_init(uint32_t addr, unsigned count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(addr), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t addr) {
  asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.shared.b64 state, [%0];\n}" ::"r"(addr) : "memory");
}

__device__ __forceinline__ bool mbar_phase_done(uint32_t addr, uint32_t parity) {
  uint32_t done;
#if __CUDA_ARCH__ >= 900
  asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
               : "=r"(done) : "r"(addr), "r"(parity) : "memory");
#else
  asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
               : "=r"(done) : "r"(addr), "r"(parity) : "memory");
#endif
  return done != 0;
}

// Spin until the mbarrier's phase `parity` completes; false past the deadline (checked every 64 polls so
// that reading the timer does not lengthen the wake-up being measured).
__device__ __forceinline__ bool mbar_wait(uint32_t addr, uint32_t parity, unsigned long long deadline) {
  for (unsigned polls = 1; !mbar_phase_done(addr, parity); ++polls) {
    if ((polls & 63u) == 0 && global_ns() > deadline) return false;
  }
  return true;
}

extern "C" __global__ void __launch_bounds__(1024, 1)
    sync_latency(unsigned long long* out, unsigned iters, int mode, unsigned long long timeout_ns) {
  __shared__ __align__(8) unsigned long long bars[2];
  __shared__ unsigned long long flags;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const unsigned threads = blockDim.x;
  if (threadIdx.x == 0) {
    mbar_init(smem_addr(&bars[0]), 1);
    mbar_init(smem_addr(&bars[1]), 1);
    flags = 0;
  }
  __syncthreads();
  const unsigned long long deadline = global_ns() + timeout_ns;
  Stamp t0 = Stamp::now();
  if (mode == 0) {
    for (unsigned i = 0; i < iters; ++i) asm volatile("bar.sync 1, %0;" ::"r"(threads) : "memory");
  } else if (mode == 1) {
    if (warp == 0) {
      for (unsigned i = 0; i < iters; ++i) {
        asm volatile("bar.arrive 1, 64;" ::: "memory");
        asm volatile("bar.sync 2, 64;" ::: "memory");
      }
    } else if (warp == 1) {
      for (unsigned i = 0; i < iters; ++i) {
        asm volatile("bar.sync 1, 64;" ::: "memory");
        asm volatile("bar.arrive 2, 64;" ::: "memory");
      }
    }
  } else if (lane == 0 && warp < 2) {
    const uint32_t to_other = smem_addr(&bars[warp]), from_other = smem_addr(&bars[1 - warp]);
    bool ok = true;
    for (unsigned i = 0; i < iters && ok; ++i) {
      if (warp == 0) {
        mbar_arrive(to_other);
        ok = mbar_wait(from_other, i & 1u, deadline);
      } else {
        ok = mbar_wait(from_other, i & 1u, deadline);
        if (ok) mbar_arrive(to_other);
      }
    }
    if (!ok) atomicOr(&flags, kFlagTimeout);
  }
  Stamp t1 = Stamp::now();
  __syncthreads();
  if (threadIdx.x == 0) write_record(out, blockIdx.x, t0, t1, iters, flags, 0);
}
