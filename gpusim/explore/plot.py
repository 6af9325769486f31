"""Sweep plots: a heatmap of the best time over two parameters, or the Pareto front of time against
shared memory or registers. Formatting only: they read result rows, never run predictions."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpusim.errors import InputError
from gpusim.explore.table import rank_rows
from gpusim.report.legend import legend

PLOT_KINDS = ("heatmap", "pareto-smem", "pareto-regs")
_PARETO_X = {
    "pareto-smem": ("smem_bytes_per_cta", "shared memory per CTA (KiB)", 1 / 1024),
    "pareto-regs": ("registers_per_cta", "registers per CTA", 1.0),
}


def _label(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def plot_heatmap(
    rows: Sequence[dict[str, Any]], x_key: str, y_key: str, path: str | Path, title: str
) -> Path:
    """Best predicted TFLOPS per (x, y) cell over every other swept parameter; refused cells are blank."""
    import numpy as np

    from gpusim.report.plot_style import new_figure, save

    for key in (x_key, y_key):
        if not any(key in r for r in rows):
            raise InputError(f"--plot heatmap: no parameter {key} in the sweep")
    xs = list(dict.fromkeys(r[x_key] for r in rows if x_key in r))
    ys = list(dict.fromkeys(r[y_key] for r in rows if y_key in r))
    grid = np.full((len(ys), len(xs)), np.nan)
    for row in rank_rows(rows):
        i, j = ys.index(row[y_key]), xs.index(row[x_key])
        if np.isnan(grid[i, j]) or row["tflops"] > grid[i, j]:
            grid[i, j] = row["tflops"]
    fig = new_figure(max(6, 0.9 * len(xs) + 3), max(4, 0.6 * len(ys) + 2))
    ax = fig.add_subplot(1, 1, 1)
    image = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(xs)), [_label(x) for x in xs])
    ax.set_yticks(range(len(ys)), [_label(y) for y in ys])
    ax.set_xlabel(x_key)
    ax.set_ylabel(y_key)
    for i in range(len(ys)):
        for j in range(len(xs)):
            text = "refused" if np.isnan(grid[i, j]) else f"{grid[i, j]:.0f}"
            ax.text(
                j,
                i,
                text,
                ha="center",
                va="center",
                fontsize=8,
                color="white" if text != "refused" else "grey",
            )
    fig.colorbar(image, ax=ax, label="best predicted TFLOPS")
    ax.set_title(title)
    return save(fig, path)


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both coordinates (both smaller is better)."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front: list[int] = []
    best_y = float("inf")
    for i in order:
        if points[i][1] < best_y:
            front.append(i)
            best_y = points[i][1]
    return front


def plot_pareto(rows: Sequence[dict[str, Any]], kind: str, path: str | Path, title: str) -> Path:
    """Predicted time against a resource (shared memory or registers per CTA), the front highlighted."""
    from gpusim.report.plot_style import new_figure, save

    column, xlabel, scale = _PARETO_X[kind]
    ok = [r for r in rank_rows(rows) if r.get(column) is not None]
    if not ok:
        raise InputError("--plot: no predicted point to draw (every point was refused)")
    pts = [(r[column] * scale, r["time_us"]) for r in ok]
    front = pareto_front(pts)
    fig = new_figure(8, 5)
    ax = fig.add_subplot(1, 1, 1)
    ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=14, color="#999999", label="points")
    fx, fy = [pts[i][0] for i in front], [pts[i][1] for i in front]
    ax.plot(fx, fy, "o-", color="#D55E00", label="Pareto front")
    for i in front:
        params = ", ".join(f"{k}={_label(v)}" for k, v in ok[i].items() if k in _swept_keys(rows))
        ax.annotate(params, pts[i], fontsize=7, xytext=(4, 4), textcoords="offset points")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("predicted time (us)")
    ax.set_title(title)
    legend(ax)
    return save(fig, path)


def _swept_keys(rows: Sequence[dict[str, Any]]) -> list[str]:
    from gpusim.explore.sweep import NON_PARAM_COLUMNS

    keys = [k for k in rows[0] if k not in NON_PARAM_COLUMNS] if rows else []
    return [k for k in keys if len({repr(r.get(k)) for r in rows}) > 1]


def plot_sweep(rows: Sequence[dict[str, Any]], swept: Sequence[str], kind: str | None, path: str | Path,
               title: str) -> Path:  # fmt: skip
    """The sweep's plot: a heatmap over the first two swept parameters, else a Pareto front."""
    kind = kind or ("heatmap" if len(swept) >= 2 else "pareto-smem")
    if kind not in PLOT_KINDS:
        raise InputError(f"--plot-kind {kind}: expected one of {', '.join(PLOT_KINDS)}")
    if kind == "heatmap":
        if len(swept) < 2:
            raise InputError("--plot-kind heatmap needs two --grid parameters")
        return plot_heatmap(rows, swept[0], swept[1], path, title)
    return plot_pareto(rows, kind, path, title)
