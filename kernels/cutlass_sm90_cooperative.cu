// CUTLASS sm90 cooperative GEMM (KernelTmaWarpSpecializedCooperative): the build `gpusim check
// gemm_ws_cooperative` compares with. Defaults follow schedules/gemm_ws_cooperative.yaml: a 256x128x64
// tile shared by two consumer warpgroups, a 2x1 cluster, CUTLASS's automatic stage count.
#ifndef TILE_M
#define TILE_M 256
#endif
#ifndef TILE_N
#define TILE_N 128
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
#define GPUSIM_ARCH cutlass::arch::Sm90
#define GPUSIM_MAINLOOP_SCHEDULE cutlass::gemm::KernelTmaWarpSpecializedCooperative
#define GPUSIM_EPILOGUE_SCHEDULE cutlass::epilogue::TmaWarpSpecializedCooperative

#include "cutlass_gemm.cuh"
