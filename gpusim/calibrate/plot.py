"""Predicted against measured time, log-log, one colour per schedule family (matplotlib, Agg)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpusim.report.legend import legend

COLOURS = {"gemm": "tab:blue", "attention": "tab:orange", "mla": "tab:green", "stream": "tab:purple",
           "other": "tab:gray"}  # fmt: skip


def plot_predicted_vs_measured(results: list[Any], path: str | Path, title: str = "") -> int:
    """Write the scatter plot; returns the number of points drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 6.0), dpi=120)
    points = [r for r in results if r.predicted_time_us is not None and r.measured_time_us]
    lo, hi = 1e300, 0.0
    for fam in sorted({r.family for r in points}):
        xs = [r.measured_time_us for r in points if r.family == fam]
        ys = [r.predicted_time_us for r in points if r.family == fam]
        ax.scatter(xs, ys, s=14, alpha=0.75, color=COLOURS.get(fam, "black"), label=f"{fam} ({len(xs)})")
        lo, hi = min(lo, *xs, *ys), max(hi, *xs, *ys)
    if points:
        ax.plot(
            [lo / 1.5, hi * 1.5], [lo / 1.5, hi * 1.5], color="black", lw=0.8, label="predicted = measured"
        )
        for f in (0.8, 1.25):
            ax.plot([lo / 1.5, hi * 1.5], [lo / 1.5 * f, hi * 1.5 * f], color="gray", lw=0.6, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured time (us)")
    ax.set_ylabel("predicted time (us)")
    ax.set_title(title or "gpusim: predicted vs measured (dashed: ±20-25%)")
    legend(ax, loc="upper left", fontsize=8)
    ax.grid(True, which="both", alpha=0.25)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return len(points)
