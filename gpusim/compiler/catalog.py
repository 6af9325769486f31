"""The project's reference kernels (kernels/): which schedule each one builds, for which arch, with
which overrides. Tests, ``gpusim check`` examples, docs/compiler.md and the launcher use this list."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpusim.resources import builtin_dir


@dataclass(frozen=True)
class ReferenceKernel:
    """One reference kernel source and the schedule it is compared with."""

    file: str
    """File name under kernels/."""
    arch: str
    """The SM target it is built for (its first supported target)."""
    schedule: str | None
    sets: dict[str, str] = field(default_factory=dict)
    """Schedule overrides that make the schedule describe this build (``--set``)."""
    cutlass: bool = False
    """Built from CUTLASS headers: minutes to compile on 2 cores (tests mark these slow)."""

    @property
    def path(self) -> Path:
        """The source file."""
        return kernels_dir() / self.file


def kernels_dir() -> Path:
    """Where the reference kernels live (inside the wheel, or the source tree's kernels/)."""
    return builtin_dir("kernels")


REFERENCE_KERNELS: tuple[ReferenceKernel, ...] = (
    # wmma fragments loaded from plain K-contiguous tiles (no swizzle): bank conflicts (parts/gemm_mma_sync.yaml)
    ReferenceKernel("gemm_sync.cu", "sm_80", "gemm_sync", {"dtype": "fp16", "SMEM_LAYOUT": "plain"}),
    ReferenceKernel("gemm_cp_async.cu", "sm_80", "gemm_cp_async", {"SMEM_LAYOUT": "plain"}),
    ReferenceKernel("stream.cu", "sm_90a", "stream"),
    ReferenceKernel("softmax.cu", "sm_90a", None),
    ReferenceKernel("cutlass_sm90_pingpong.cu", "sm_90a", "gemm_ws_pingpong", cutlass=True),
    ReferenceKernel("cutlass_sm90_cooperative.cu", "sm_90a", "gemm_ws_cooperative", cutlass=True),
    ReferenceKernel("cutlass_sm100_1cta.cu", "sm_100a", "gemm_tcgen05", {"PAIR": "0"}, cutlass=True),
    ReferenceKernel("cutlass_sm100_2cta.cu", "sm_100a", "gemm_tcgen05", {"PAIR": "1"}, cutlass=True),
)
