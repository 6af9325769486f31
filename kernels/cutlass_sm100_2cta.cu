// CUTLASS sm100 tcgen05 GEMM, 2-CTA MMA (KernelTmaWarpSpecialized2SmSm100, cta_group::2): the build
// `gpusim check gemm_tcgen05` (PAIR=1) compares with. Defaults follow schedules/gemm_tcgen05.yaml: a
// 256x256x64 MMA tile over a CTA pair (128 rows per CTA), a 2x1 cluster, automatic stages.
#ifndef TILE_M
#define TILE_M 256
#endif
#ifndef TILE_N
#define TILE_N 256
#endif
#ifndef TILE_K
#define TILE_K 64
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 2
#endif
#ifndef CLUSTER_N
#define CLUSTER_N 1
#endif
#define GPUSIM_ARCH cutlass::arch::Sm100
#define GPUSIM_MAINLOOP_SCHEDULE cutlass::gemm::KernelTmaWarpSpecialized2SmSm100
#define GPUSIM_EPILOGUE_SCHEDULE cutlass::epilogue::TmaWarpSpecialized2Sm

#include "cutlass_gemm.cuh"
