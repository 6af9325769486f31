// The project's CUTLASS 3.x GEMM instantiation (bf16 A row-major and B column-major, fp32 accumulation,
// bf16 D = A B with no source C: ElementC void, as the schedules model beta = 0), built from CUTLASS's
// collective builders. The including .cu file picks:
//   GPUSIM_ARCH                 cutlass::arch::Sm90 or cutlass::arch::Sm100
//   GPUSIM_MAINLOOP_SCHEDULE    e.g. cutlass::gemm::KernelTmaWarpSpecializedPingpong
//   GPUSIM_EPILOGUE_SCHEDULE    e.g. cutlass::epilogue::TmaWarpSpecialized
// and defaults for the tile and cluster, which -D flags override (so `gpusim check --set` can build the
// variant a schedule describes): -DTILE_M -DTILE_N -DTILE_K (the MMA tile: on sm100 2-CTA kernels it
// spans both CTAs of the pair) -DCLUSTER_M -DCLUSTER_N -DSTAGES (0: CUTLASS's StageCountAutoCarveout,
// as many stages as fit next to the epilogue's shared memory).
#pragma once

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

#include "cutlass_gemm_runner.cuh"

#ifndef STAGES
#define STAGES 0
#endif

namespace gpusim_cutlass {

using namespace cute;

using ElementA = cutlass::bfloat16_t;
using ElementB = cutlass::bfloat16_t;
using ElementC = void;  // no source operand: the epilogue neither loads C nor keeps shared memory for it
using ElementD = cutlass::bfloat16_t;
using ElementAccumulator = float;
using LayoutA = cutlass::layout::RowMajor;     // K-major A
using LayoutB = cutlass::layout::ColumnMajor;  // K-major B
using LayoutD = cutlass::layout::RowMajor;
constexpr int kAlignment = 16 / sizeof(ElementA);  // 16-byte TMA rows

using TileShape = Shape<Int<TILE_M>, Int<TILE_N>, Int<TILE_K>>;
using ClusterShape = Shape<Int<CLUSTER_M>, Int<CLUSTER_N>, _1>;

using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    GPUSIM_ARCH, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementAccumulator, ElementC,
    LayoutD, kAlignment, ElementD, LayoutD, kAlignment, GPUSIM_EPILOGUE_SCHEDULE>::CollectiveOp;

using StageCount = cute::conditional_t<
    STAGES == 0,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
    cutlass::gemm::collective::StageCount<(STAGES > 0 ? STAGES : 1)>>;

using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    GPUSIM_ARCH, cutlass::arch::OpClassTensorOp, ElementA, LayoutA, kAlignment, ElementB, LayoutB, kAlignment,
    ElementAccumulator, TileShape, ClusterShape, StageCount, GPUSIM_MAINLOOP_SCHEDULE>::CollectiveOp;

using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

}  // namespace gpusim_cutlass

// The dynamic shared memory the host asks for at launch (a build fact a cubin does not otherwise carry);
// `gpusim resources` reads this symbol from the cubin.
extern "C" __device__ const unsigned gpusim_dynamic_smem_bytes = gpusim_cutlass::Kernel::SharedStorageSize;

GPUSIM_GEMM_ENTRY(gpusim_cutlass::Gemm)
