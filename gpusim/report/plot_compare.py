"""The comparison chart: TFLOPS per variant, utilization per unit (grouped bars) and where the time goes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from gpusim.comparison import Comparison
from gpusim.report.attribution import CAUSE_LABELS, CAUSES
from gpusim.report.compare import COMPARE_UNITS
from gpusim.report.legend import legend
from gpusim.report.plot_style import SERIES_COLORS, new_figure, save
from gpusim.report.summary import UNIT_LABELS

_CAUSE_COLORS = {
    "tensor_core": "#009E73", "memory": "#0072B2", "cuda_cores": "#E69F00", "sfu": "#CC79A7",
    "shared_memory": "#D55E00", "barrier_wait": "#BBBBBB", "launch": "#000000", "tail_wave": "#F0E442",
}  # fmt: skip
_UNIT_COLORS = {"tensor": "#009E73", "tma": "#0072B2", "hbm": "#56B4E9", "l2": "#999999", "lsu": "#D55E00",
                "fp32": "#E69F00", "sfu": "#CC79A7"}  # fmt: skip


def plot_compare(c: Comparison, path: str | Path, title: str = "") -> Path:
    """Write the comparison PNG (refused variants are left out; the title names the costs)."""
    kept = [r for r in c.rows if r.prediction is not None]
    preds = [r.prediction for r in kept if r.prediction is not None]
    n = len(preds)
    labels = ["\n".join(textwrap.wrap(r.variant.name, 22)) for r in kept]
    fig = new_figure(14, 11)
    grid = fig.add_gridspec(3, 1, height_ratios=[1.0, 1.2, 1.0], hspace=0.75, left=0.08, right=0.8,
                            top=0.92, bottom=0.08)  # fmt: skip
    x = np.arange(n)
    ax = fig.add_subplot(grid[0])
    tflops = [p.tflops for p in preds]
    bars = ax.bar(x, tflops, color="#009E73", width=0.6)
    for bar, p in zip(bars, preds, strict=True):
        ax.annotate(f"{p.tflops:,.0f} TFLOPS\n{p.time_us:,.1f} µs", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=8, xytext=(0, 2), textcoords="offset points")  # fmt: skip
    ax.set_ylabel("TFLOPS")
    ax.set_ylim(0, max([*tflops, 1e-9]) * 1.35)
    ax.set_title("achieved throughput (label: TFLOPS and kernel time)", fontsize=10, loc="left")
    ax.set_xticks(x, labels, fontsize=8)
    ax2 = fig.add_subplot(grid[1])
    width = 0.8 / len(COMPARE_UNITS)
    for i, unit in enumerate(COMPARE_UNITS):
        vals = [p.utilization.get(unit, 0.0) * 100 for p in preds]
        ax2.bar(x - 0.4 + width * (i + 0.5), vals, width, color=_UNIT_COLORS.get(unit, SERIES_COLORS[i % len(SERIES_COLORS)]),
                label=UNIT_LABELS[unit])  # fmt: skip
    ax2.set_ylabel("% busy (all SMs)")
    ax2.set_ylim(0, 105)
    ax2.set_xticks(x, labels, fontsize=8)
    ax2.set_title("utilization per unit", fontsize=10, loc="left")
    legend(ax2, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax3 = fig.add_subplot(grid[2])
    bottom = np.zeros(n)
    for cause in CAUSES:
        vals = np.array([(p.attribution or {}).get(cause, 0.0) * 100 for p in preds])
        if not vals.any():
            continue
        ax3.bar(x, vals, 0.6, bottom=bottom, color=_CAUSE_COLORS[cause], label=CAUSE_LABELS[cause])
        bottom += vals
    ax3.set_ylabel("% of kernel time")
    ax3.set_ylim(0, 100)
    ax3.set_xticks(x, labels, fontsize=8)
    ax3.set_title("where the time goes (bottleneck attribution)", fontsize=10, loc="left")
    legend(ax3, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    for a in (ax, ax2, ax3):
        a.grid(axis="y", color="#E0E0E0", linewidth=0.6)
        a.set_axisbelow(True)
    fig.suptitle(f"{title or 'gpusim compare'} ({c.costs} costs)", fontsize=13, x=0.02, ha="left")
    return save(fig, path)
