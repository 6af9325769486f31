"""Roofline data: an arch's roofs and predicted kernels placed by arithmetic intensity.

Arithmetic intensity is FLOPs per byte of HBM traffic *as simulated* (reads and writes after the L2),
so a schedule whose tiles hit in L2 moves right; achieved TFLOPS counts launch overhead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpusim.arch import Arch
from gpusim.result import Prediction


@dataclass(frozen=True)
class Roofs:
    """The arch's roofs: HBM and L2 bandwidth (bytes/s) and dense peaks per dtype (TFLOPS)."""

    arch: str
    hbm_bytes_per_s: float
    l2_bytes_per_s: float
    peaks_tflops: dict[str, float]
    fp32_tflops: float

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class Point:
    """One predicted kernel on the roofline."""

    label: str
    schedule: str
    dtype: str
    intensity_flop_per_byte: float
    tflops: float
    time_us: float
    bound_tflops: float
    """The roof above the point: min(dtype peak, HBM bandwidth x intensity)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return dict(self.__dict__)


def roofs(arch: Arch) -> Roofs:
    """The roofs of ``arch`` from its file (datasheet peaks, not calibrated fractions)."""
    peaks = {d: arch.dense_peak_tflops(d) or 0.0 for d in arch.supported_dtypes()}
    return Roofs(arch.id, arch.memory.hbm_bandwidth_bytes_per_s, arch.memory.l2_bandwidth_bytes_per_s,
                 peaks, arch.fp32_peak_tflops())  # fmt: skip


def point(p: Prediction, arch: Arch, dtype: str, label: str | None = None) -> Point | None:
    """Place a prediction; None when it has no FLOPs or moves no HBM bytes (e.g. ``stream``)."""
    moved = p.hbm_read_bytes + p.hbm_write_bytes
    if p.tflops <= 0 or moved <= 0:
        return None
    ai = p.tflops * 1e12 * (p.time_us / 1e6) / moved
    peak = arch.dense_peak_tflops(dtype) or arch.fp32_peak_tflops()
    bound = min(peak, arch.memory.hbm_bandwidth_bytes_per_s * ai / 1e12)
    return Point(label or p.schedule, p.schedule, dtype, ai, p.tflops, p.time_us, bound)
