// Host side shared by the CUTLASS GEMM instantiations in kernels/: a C entry point that `gpusim measure-kernels` loads with
// ctypes to time the kernel on a GPU. Every kernel file defines `Gemm` (a GemmUniversalAdapter) first.
#pragma once

#include <cuda_runtime.h>

#include "cutlass/util/packed_stride.hpp"

namespace gpusim_kernels {

// Times `iters` launches of Gemm on an M x N x K problem (A row-major, B column-major, bf16, fp32
// accumulation, D = A B, no source C). Returns 0 on success, a negative CUTLASS status or a positive CUDA error.
template <class Gemm>
int run_gemm(int M, int N, int K, int iters, float* ms_per_iter) {
  using GemmKernel = typename Gemm::GemmKernel;
  using ElementA = typename Gemm::ElementA;
  using ElementB = typename Gemm::ElementB;
  using ElementD = typename Gemm::ElementD;
  using StrideA = typename GemmKernel::StrideA;
  using StrideB = typename GemmKernel::StrideB;
  using StrideC = typename GemmKernel::StrideC;
  using StrideD = typename GemmKernel::StrideD;

  ElementA* a = nullptr;
  ElementB* b = nullptr;
  ElementD* d = nullptr;
  cudaError_t err = cudaMalloc(&a, sizeof(ElementA) * size_t(M) * K);
  if (err == cudaSuccess) err = cudaMalloc(&b, sizeof(ElementB) * size_t(N) * K);
  if (err == cudaSuccess) err = cudaMalloc(&d, sizeof(ElementD) * size_t(M) * N);
  if (err == cudaSuccess) err = cudaMemset(a, 0, sizeof(ElementA) * size_t(M) * K);
  if (err == cudaSuccess) err = cudaMemset(b, 0, sizeof(ElementB) * size_t(N) * K);
  if (err != cudaSuccess) return int(err);

  StrideA stride_a = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(M, K, 1));
  StrideB stride_b = cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(N, K, 1));
  StrideC stride_c = cutlass::make_cute_packed_stride(StrideC{}, cute::make_shape(M, N, 1));
  StrideD stride_d = cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(M, N, 1));
  typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                {M, N, K, 1},
                                {a, stride_a, b, stride_b},
                                {{1.0f, 0.0f}, nullptr, stride_c, d, stride_d}};  // no source C
  Gemm gemm;
  int status = -int(gemm.can_implement(args));
  void* workspace = nullptr;
  size_t workspace_bytes = Gemm::get_workspace_size(args);
  if (status == 0 && workspace_bytes) err = cudaMalloc(&workspace, workspace_bytes);
  if (status == 0 && err == cudaSuccess) status = -int(gemm.initialize(args, workspace));
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  if (status == 0 && err == cudaSuccess) {
    status = -int(gemm.run());  // warm-up
    cudaEventRecord(start);
    for (int i = 0; i < iters && status == 0; ++i) status = -int(gemm.run());
    cudaEventRecord(stop);
    err = cudaEventSynchronize(stop);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, start, stop);
    *ms_per_iter = ms / float(iters > 0 ? iters : 1);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(workspace);
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  return status != 0 ? status : int(err);
}

}  // namespace gpusim_kernels

// Defines the C entry point `gpusim_run_gemm(M, N, K, iters, &ms)` for the file's `Gemm`; its launch in
// run_gemm instantiates the device kernel, so `nvcc -cubin` emits it too.
#define GPUSIM_GEMM_ENTRY(GEMM)                                                           \
  extern "C" int gpusim_run_gemm(int M, int N, int K, int iters, float* ms_per_iter) { \
    return gpusim_kernels::run_gemm<GEMM>(M, N, K, iters, ms_per_iter);                \
  }
