// Shared helpers of the gpusim microbenchmarks (kernels/micro/*.cu; gpusim measure --micro).
// Every kernel writes one record of kRecordWords 64-bit words per timed role and CTA:
//   [0] clock64 at start   [1] clock64 at end   [2] %globaltimer (ns) at start   [3] at end
//   [4] work done (instructions, ops or bytes; what each kernel documents)   [5] %smid
//   [6] flags (bit 0: a wait loop hit its deadline); kernels and roles without wait loops store a count
//       there instead, as each documents   [7] a checksum that keeps the work live
// Every spin loop reads %globaltimer against a deadline, so a kernel never hangs a run.
#pragma once
#include <cstdint>

constexpr int kRecordWords = 8;
constexpr unsigned long long kFlagTimeout = 1ull;

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned long long sm_cycles() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned sm_id() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// The start of one role's timed interval (call from one thread).
struct Stamp {
  unsigned long long cycles, ns;
  __device__ __forceinline__ static Stamp now() { return Stamp{sm_cycles(), global_ns()}; }
};

__device__ __forceinline__ void write_record(unsigned long long* out, int slot, Stamp t0, Stamp t1,
                                             unsigned long long work, unsigned long long flags,
                                             unsigned long long checksum) {
  unsigned long long* r = out + static_cast<size_t>(slot) * kRecordWords;
  r[0] = t0.cycles;
  r[1] = t1.cycles;
  r[2] = t0.ns;
  r[3] = t1.ns;
  r[4] = work;
  r[5] = sm_id();
  r[6] = flags;
  r[7] = checksum;
}

// Shared-memory matrix descriptor of a wgmma operand (PTX ISA, "Matrix Descriptor Format"): start address
// >> 4 in bits 0-13, leading byte offset >> 4 in 16-29 (unused for swizzled K-major), stride byte offset
// >> 4 in 32-45 (1024 B between 8-row groups), swizzle mode in 62-63 (1 = 128 B).
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr) {
  return (static_cast<uint64_t>((addr & 0x3FFFF) >> 4)) | (1ull << 16) | (static_cast<uint64_t>(1024 >> 4) << 32) |
         (1ull << 62);
}

// A 16-byte load cached in L2 only (ld.global.cg), kept by the compiler (volatile).
__device__ __forceinline__ uint4 load_cg(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// A barrier over the 128 threads of one warpgroup (named barrier 1 + warpgroup index).
__device__ __forceinline__ void warpgroup_barrier(int wg) {
  asm volatile("bar.sync %0, 128;" ::"r"(wg + 1) : "memory");
}

// Independent dependency chains of MUFU.EX2 and FFMA: enough in flight per warp to be throughput-bound.
constexpr int kChains = 8;

__device__ __forceinline__ void ex2_chains(float (&x)[kChains]) {
#pragma unroll
  for (int c = 0; c < kChains; ++c) {
    float y = -x[c];  // ex2(-x) for x in (0, 1] stays in [0.5, 1): no inf or denormal
    asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(x[c]) : "f"(y));
  }
}

__device__ __forceinline__ void ffma_chains(float (&x)[kChains]) {
#pragma unroll
  for (int c = 0; c < kChains; ++c) asm volatile("fma.rn.f32 %0, %0, 0f3F7FBE77, 0f3A83126F;" : "+f"(x[c]));
}
