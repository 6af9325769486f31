// CUTLASS sm90 ping-pong GEMM (KernelTmaWarpSpecializedPingpong): the build `gpusim check
// gemm_ws_pingpong` compares with. Defaults follow schedules/gemm_ws_pingpong.yaml: a 128x128x64 tile
// per consumer warpgroup, a 1x2 cluster, CUTLASS's automatic stage count.
// Build: nvcc -arch=sm_90a -std=c++17 -DNDEBUG --expt-relaxed-constexpr -I<cutlass include dirs> ...
#ifndef TILE_M
#define TILE_M 128
#endif
#ifndef TILE_N
#define TILE_N 128
#endif
#ifndef TILE_K
#define TILE_K 64
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 1
#endif
#ifndef CLUSTER_N
#define CLUSTER_N 2
#endif
#define GPUSIM_ARCH cutlass::arch::Sm90
#define GPUSIM_MAINLOOP_SCHEDULE cutlass::gemm::KernelTmaWarpSpecializedPingpong
#define GPUSIM_EPILOGUE_SCHEDULE cutlass::epilogue::TmaWarpSpecialized

#include "cutlass_gemm.cuh"
