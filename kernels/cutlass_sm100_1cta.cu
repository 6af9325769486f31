// CUTLASS sm100 tcgen05 GEMM, 1-CTA MMA (KernelTmaWarpSpecialized1SmSm100, TMEM accumulators): the
// build `gpusim check gemm_tcgen05 --set PAIR=0` compares with. Defaults follow
// schedules/gemm_tcgen05.yaml with PAIR=0: a 128x256x64 MMA tile per CTA, no cluster, automatic stages.
#ifndef TILE_M
#define TILE_M 128
#endif
#ifndef TILE_N
#define TILE_N 256
#endif
#ifndef TILE_K
#define TILE_K 64
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 1
#endif
#ifndef CLUSTER_N
#define CLUSTER_N 1
#endif
#define GPUSIM_ARCH cutlass::arch::Sm100
#define GPUSIM_MAINLOOP_SCHEDULE cutlass::gemm::KernelTmaWarpSpecialized1SmSm100
#define GPUSIM_EPILOGUE_SCHEDULE cutlass::epilogue::TmaWarpSpecialized1Sm

#include "cutlass_gemm.cuh"
