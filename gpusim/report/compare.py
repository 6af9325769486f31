"""Text and CSV views of a :class:`~gpusim.comparison.Comparison` (formatting only)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from gpusim.comparison import Comparison
from gpusim.report.summary import UNIT_LABELS, key_values

COMPARE_UNITS = ("tensor", "tma", "hbm", "l2", "lsu", "fp32", "sfu")
TABLE_UNITS = ("tensor", "tma", "hbm")


def compare_table(c: Comparison) -> Table:
    """One row per variant (refused ones say so); the fastest is the 1.00x reference. The verdicts
    and refusal reasons follow in :func:`compare_notes`."""
    table = Table(title=f"gpusim compare: {key_values(c.problem)} ({c.costs} costs)", title_justify="left")
    table.add_column("variant", overflow="fold")
    table.add_column("time (us)", justify="right")
    table.add_column("vs fastest", justify="right")
    table.add_column("TFLOPS", justify="right")
    table.add_column("HBM GB/s", justify="right")
    for k in TABLE_UNITS:
        table.add_column(UNIT_LABELS[k].split(" (")[0], justify="right")
    table.add_column("bottleneck", overflow="fold")
    best = c.fastest_us
    for row in c.rows:
        p = row.prediction
        if p is None:
            table.add_row(row.variant.name, "-", "-", "-", "-", *("-" for _ in TABLE_UNITS), "refused")
            continue
        table.add_row(
            row.variant.name, f"{p.time_us:,.2f}", f"{p.time_us / best:.2f}x" if best else "-",
            f"{p.tflops:,.1f}", f"{p.hbm_gbps:,.0f}",
            *(f"{p.utilization.get(k, 0.0):.0%}" for k in TABLE_UNITS), (p.bottleneck or "-").replace("_", " "),
        )  # fmt: skip
    return table


def compare_notes(c: Comparison) -> list[str]:
    """One line per variant: its verdict, or ``refused: <reason>``."""
    return [f"{row.variant.name}: " + (f"refused: {row.refused}" if row.prediction is None
                                       else row.prediction.verdict or "-") for row in c.rows]  # fmt: skip


def compare_csv_rows(c: Comparison) -> list[dict[str, Any]]:
    """Flat CSV rows: the variant, the problem, headline numbers, or the refusal."""
    rows = []
    for row in c.rows:
        p = row.prediction
        base = {"variant": row.variant.name, "schedule": row.variant.schedule, "arch": p.arch if p else row.variant.arch,
                "problem": ";".join(f"{k}={v}" for k, v in c.problem.items()),
                "overrides": ";".join(f"{k}={v}" for k, v in row.variant.overrides.items()), "costs": c.costs}  # fmt: skip
        if p is None:
            rows.append({**base, "refused": row.refused})
            continue
        rows.append({**base, "refused": "", "time_us": p.time_us, "tflops": p.tflops, "hbm_gbps": p.hbm_gbps,
                     **{f"util_{k}": p.utilization.get(k, 0.0) for k in COMPARE_UNITS},
                     "bottleneck": p.bottleneck, "verdict": p.verdict, "overlay": p.overlay})  # fmt: skip
    return rows
