"""The timeline plot: a Gantt chart of one SM group over a window, a whole-kernel overview, and HBM/L2
bandwidth over time below. Needs a recorded simulation (``simulate(..., record=True)``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
from matplotlib.patches import Patch

from gpusim.report.legend import legend
from gpusim.report.plot_style import KIND_COLORS, KIND_LABELS, new_figure, save
from gpusim.report.timeline import (
    Lane,
    agent_lanes,
    binned_average,
    busiest_sm,
    busy_fractions,
    check_sm,
    default_window,
    is_wait,
    role_kind,
    role_lanes,
)
from gpusim.sim.engine import SimRun

_LANE_H = 0.7


def _span_kind(lane: Lane, label: str) -> str:
    """The colour kind of one span: an agent lane has one colour, a role lane colours by activity."""
    return lane.color_kind if lane.kind == "agent" else role_kind(label)


def _label_lane_axes(ax, lanes: list[Lane], lo: float, hi: float) -> None:
    """Lane labels top to bottom, the µs window and the vertical grid."""
    n = len(lanes)
    ax.set_yticks(range(n))
    ax.set_yticklabels([lane.label for lane in reversed(lanes)], fontsize=9)
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlim(lo / 1000, hi / 1000)
    ax.grid(axis="x", color="#E0E0E0", linewidth=0.6)
    ax.set_axisbelow(True)


def _draw_lanes(ax, lanes: list[Lane], lo: float, hi: float) -> set[str]:
    """Draw lanes top to bottom (ns in, µs on the axis); returns the colour kinds used."""
    used: set[str] = set()
    n = len(lanes)
    for row, lane in enumerate(lanes):
        y = n - 1 - row
        groups: dict[str, list[tuple[float, float]]] = {}
        for a, b, label in lane.spans:
            if b < lo or a > hi:
                continue
            kind = _span_kind(lane, label)
            groups.setdefault(kind, []).append((a / 1000, max(b - a, 0.0) / 1000))
        for kind, bars in groups.items():
            used.add(kind)
            wait = kind.startswith("wait")
            ax.broken_barh(
                bars,
                (y - _LANE_H / 2, _LANE_H),
                facecolors=KIND_COLORS[kind],
                edgecolors="#7F7F7F" if wait else "none",
                linewidth=0.3 if wait else 0,
                hatch="////" if wait else None,
            )
    _label_lane_axes(ax, lanes, lo, hi)
    return used


def _draw_lanes_aggregated(ax, lanes: list[Lane], lo: float, hi: float) -> set[str]:
    """Draw lanes as busy fraction per pixel column (stacked per colour kind), so spans shorter than a
    pixel still show how busy a unit was; returns the colour kinds used."""
    ax.figure.canvas.draw_idle()
    bins = max(50, int(ax.get_window_extent().width))
    width_us = (hi - lo) / bins / 1000
    starts_us = lo / 1000 + width_us * np.arange(bins)
    used: set[str] = set()
    n = len(lanes)
    for row, lane in enumerate(lanes):
        y = n - 1 - row
        by_kind: dict[str, list[tuple[float, float]]] = {}
        for a, b, label in lane.spans:
            kind = _span_kind(lane, label)
            by_kind.setdefault(kind, []).append((a, b))
        bottom = np.full(bins, y - _LANE_H / 2)
        for kind, spans in by_kind.items():
            frac = busy_fractions(spans, lo, hi, bins)
            if not frac.any():
                continue
            used.add(kind)
            ax.bar(starts_us, frac * _LANE_H, width=width_us, bottom=bottom, align="edge", linewidth=0,
                   color=KIND_COLORS[kind])  # fmt: skip
            bottom = bottom + frac * _LANE_H
    _label_lane_axes(ax, lanes, lo, hi)
    return used


def _bandwidth(ax, run: SimRun, lo: float, hi: float, bins: int = 300) -> None:
    for samples, name, color in ((run.net.hbm_rate_samples, "HBM", "#0072B2"),
                                 (run.net.l2_rate_samples, "L2", "#E69F00")):  # fmt: skip
        starts, avg = binned_average(samples, lo, hi, bins)
        xs = [x / 1000 for x in starts] + [hi / 1000]
        ax.step(xs, [*avg, avg[-1]], where="post", color=color, linewidth=1.2,
                label=f"{name} GB/s (all SMs, {(hi - lo) / bins:,.0f} ns bins)")  # fmt: skip
    peak = run.arch.memory.hbm_bandwidth_bytes_per_s / 1e9
    ax.axhline(peak, color="#0072B2", linestyle="--", linewidth=0.9, label=f"HBM peak {peak:,.0f} GB/s")
    ax.set_ylabel("GB/s")
    ax.set_xlim(lo / 1000, hi / 1000)
    ax.set_ylim(bottom=0)
    ax.grid(color="#E0E0E0", linewidth=0.6)
    legend(ax, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)


def plot_timeline(run: SimRun, path: str | Path, sm_index: int | None = None,
                  window_ns: tuple[float, float] | None = None, verdict: str | None = None,
                  costs: str | None = None) -> Path:  # fmt: skip
    """Write the timeline PNG of SM group ``sm_index`` (default: the busiest) over ``window_ns``
    (default: about three tile periods in the middle of its work)."""
    sm_index = busiest_sm(run) if sm_index is None else check_sm(run, sm_index)
    lo, hi = window_ns if window_ns is not None else default_window(run, sm_index)
    agents = agent_lanes(run, sm_index)
    roles = role_lanes(run, sm_index)
    lanes = agents + roles
    overview = agents or roles
    height = 2.4 + 0.32 * len(overview) + 0.42 * len(lanes) + 2.2
    fig = new_figure(14, max(8.0, height))
    ratios = [0.6 + 0.32 * len(overview), 0.5 + 0.42 * len(lanes), 2.0]
    grid = fig.add_gridspec(
        3, 1, height_ratios=ratios, hspace=0.55, left=0.2, right=0.78, top=0.87, bottom=0.06
    )
    ax_over = fig.add_subplot(grid[0])
    used = _draw_lanes_aggregated(ax_over, overview, 0.0, run.kernel_ns)
    ax_over.axvspan(lo / 1000, hi / 1000, color="#FFD54F", alpha=0.35, zorder=0)
    ax_over.set_title("whole kernel (bar height: busy fraction per pixel column; the shaded band is the "
                      "window below)", fontsize=10, loc="left")  # fmt: skip
    ax_over.set_xlabel("time (µs)", fontsize=9)
    ax_win = fig.add_subplot(grid[1])
    used |= _draw_lanes(ax_win, lanes, lo, hi)
    ax_win.set_title(f"window {lo / 1000:,.2f}–{hi / 1000:,.2f} µs: one lane per agent and per role",
                     fontsize=10, loc="left")  # fmt: skip
    if roles:
        ax_win.axhline(len(roles) - 0.5, color="#7F7F7F", linewidth=0.8)
    ax_bw = fig.add_subplot(grid[2], sharex=ax_win)
    _bandwidth(ax_bw, run, lo, hi)
    ax_bw.set_xlabel("time (µs)")
    ax_bw.set_title("memory bandwidth, whole chip", fontsize=10, loc="left")
    order = [k for k in KIND_COLORS if k in used]
    handles = [
        Patch(facecolor=KIND_COLORS[k], edgecolor="#7F7F7F" if k.startswith("wait") else "none",
              hatch="////" if k.startswith("wait") else None, label=KIND_LABELS[k])
        for k in order
    ]  # fmt: skip
    legend(ax_win, handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    sched, arch, sm = run.sched, run.arch, run.sms[sm_index]
    total_ns = run.kernel_ns + arch.calibration.launch_overhead_ns
    tflops = sched.flops / total_ns / 1e3 if total_ns else 0.0
    title = (f"{sched.name} on {arch.id}: {total_ns / 1000:,.2f} µs, {tflops:,.1f} TFLOPS — "
             f"SM group {sm_index} of {len(run.sms)} (stands for {sm.weight} SMs); "
             f"{costs or arch.calibration.origin} costs")  # fmt: skip
    fig.suptitle(title, fontsize=13, x=0.02, ha="left", y=0.985)
    if verdict:
        fig.text(0.02, 0.945, "\n".join(textwrap.wrap(verdict, 150)), fontsize=10, ha="left", va="top",
                 color="#333333")  # fmt: skip
    return save(fig, path)


__all__ = ["is_wait", "plot_timeline"]
