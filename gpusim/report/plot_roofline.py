"""The roofline plot: HBM and L2 bandwidth roofs, tensor peaks per dtype, and predicted kernels."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpusim.report.legend import legend
from gpusim.report.plot_style import SERIES_COLORS, new_figure, save
from gpusim.report.roofline import Point, Roofs

_MARKERS = ["o", "s", "D", "^", "v", "P", "X", "*", "h", "<"]


def plot_roofline(r: Roofs, points: list[Point], path: str | Path, costs: str = "calibrated") -> Path:
    """Write a log-log roofline PNG (the title says which costs placed the points)."""
    fig = new_figure(14, 8.5)
    ax = fig.add_axes((0.07, 0.1, 0.56, 0.8))
    top = max([*r.peaks_tflops.values(), r.fp32_tflops])
    lo_ai = min([0.5, *(p.intensity_flop_per_byte / 3 for p in points)])
    hi_ai = max([top * 1e12 / r.hbm_bytes_per_s * 30, *(p.intensity_flop_per_byte * 3 for p in points)])
    ai = np.logspace(np.log10(lo_ai), np.log10(hi_ai), 400)
    ax.plot(ai, r.hbm_bytes_per_s * ai / 1e12, color="#0072B2", linewidth=2,
            label=f"HBM {r.hbm_bytes_per_s / 1e12:.2f} TB/s")  # fmt: skip
    ax.plot(ai, r.l2_bytes_per_s * ai / 1e12, color="#56B4E9", linewidth=1.5, linestyle="--",
            label=f"L2 {r.l2_bytes_per_s / 1e12:.1f} TB/s")  # fmt: skip
    merged: dict[float, list[str]] = {}
    for dtype, peak in r.peaks_tflops.items():
        merged.setdefault(round(peak, 1), []).append(dtype)
    peaks = sorted(
        ((" / ".join(names[:2] + (["…"] if len(names) > 2 else [])), peak) for peak, names in merged.items()),
        key=lambda kv: -kv[1],
    )
    shown: list[float] = []
    for i, (dtype, peak) in enumerate(peaks):
        ridge = peak * 1e12 / r.hbm_bytes_per_s
        ax.hlines(peak, ridge, hi_ai, color="#444444", linewidth=1.2 if i else 2.0,
                  linestyle="-" if i == 0 else ":")  # fmt: skip
        if all(abs(np.log10(peak / s)) > 0.06 for s in shown):  # no two labels on top of each other
            ax.text(hi_ai / 1.05, peak * 1.04, f"{dtype} {peak:,.0f}", ha="right", va="bottom", fontsize=8)
            shown.append(peak)
    ax.hlines(r.fp32_tflops, r.fp32_tflops * 1e12 / r.hbm_bytes_per_s, hi_ai, color="#E69F00",
              linewidth=1.2, linestyle="-.", label=f"fp32 CUDA cores {r.fp32_tflops:,.1f}")  # fmt: skip
    for i, p in enumerate(points):
        ax.scatter([p.intensity_flop_per_byte], [p.tflops], s=80, marker=_MARKERS[i % len(_MARKERS)],
                   color=SERIES_COLORS[i % len(SERIES_COLORS)], edgecolors="black", zorder=5,
                   label=f"{p.label} ({p.dtype}): {p.tflops:,.0f} TFLOPS, {p.intensity_flop_per_byte:,.0f} FLOP/B, "
                         f"{p.tflops / p.bound_tflops:.0%} of roof")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo_ai, hi_ai)
    ax.set_ylim(min([0.05 * top / 100, *(p.tflops / 3 for p in points)]), top * 2.5)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of HBM traffic, as simulated)")
    ax.set_ylabel("TFLOPS")
    ax.grid(which="both", color="#E6E6E6", linewidth=0.6)
    ax.set_title(f"roofline of {r.arch} (dense tensor peaks per dtype; dotted: lower-precision roofs; "
                 f"points: {costs} costs)",
                 fontsize=11, loc="left")  # fmt: skip
    legend(ax, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    return save(fig, path)
