"""Evaluate one sweep point into one flat result row (the function the executors run on workers)."""

from __future__ import annotations

from typing import Any

from gpusim.arch import Arch
from gpusim.errors import DeadlockError, GpusimError, ScheduleRefused
from gpusim.explore.adapter import Costs, predict, prediction_dict
from gpusim.explore.grid import Point

STATUS_OK = "ok"
STATUS_REFUSED = "refused"
STATUS_DEADLOCK = "deadlock"
STATUS_ERROR = "error"

METRIC_COLUMNS: tuple[str, ...] = (
    "time_us",
    "tflops",
    "hbm_gbps",
    "l2_gbps",
    "l2_hit_rate",
    "hbm_read_bytes",
    "hbm_write_bytes",
    "roofline_us",
    "clock_mhz",
    "smem_bytes_per_cta",
    "registers_per_cta",
    "max_regs_per_thread",
    "tmem_cols_per_cta",
    "threads_per_cta",
    "ctas_per_sm",
    "warps_per_sm",
    "units",
    "waves",
    "events",
    "bottleneck",
)
"""Metric columns of a result row, after the point's identity and parameters and before ``util_*``."""

UTIL_UNITS: tuple[str, ...] = (
    "tensor",
    "tma",
    "lsu",
    "fp32",
    "sfu",
    "cvt",
    "int",
    "issue",
    "tmem",
    "hbm",
    "l2",
)
IDENTITY_COLUMNS: tuple[str, ...] = ("point", "schedule", "arch", "costs")
VERDICT_COLUMNS: tuple[str, ...] = ("status", "reason")


def empty_row(point: Point, costs: Costs, status: str, reason: str | None) -> dict[str, Any]:
    """A row with the point's identity and parameters, a status and no metrics."""
    row: dict[str, Any] = {
        "point": point.index,
        "schedule": point.schedule,
        "arch": point.arch,
        "costs": costs,
    }
    row.update(point.params)
    row["status"] = status
    row["reason"] = reason
    for name in METRIC_COLUMNS:
        row[name] = None
    for unit in UTIL_UNITS:
        row[f"util_{unit}"] = None
    return row


def _metrics(doc: dict[str, Any]) -> dict[str, Any]:
    budgets, occupancy, sim = doc.get("budgets") or {}, doc.get("occupancy") or {}, doc.get("sim") or {}
    values = {
        **{k: doc.get(k) for k in METRIC_COLUMNS},
        **{
            k: budgets.get(k)
            for k in (
                "smem_bytes_per_cta",
                "registers_per_cta",
                "max_regs_per_thread",
                "tmem_cols_per_cta",
                "threads_per_cta",
            )
        },
        **{k: occupancy.get(k) for k in ("ctas_per_sm", "warps_per_sm", "units", "waves")},
        "events": sim.get("events"),
        "bottleneck": doc.get("verdict") or doc.get("bottleneck"),
    }
    util = doc.get("utilization") or {}
    values.update({f"util_{u}": util.get(u) for u in UTIL_UNITS})
    return values


def evaluate_point(point: Point, costs: Costs, arch: Arch | None = None) -> dict[str, Any]:
    """Predict one point; a refusal, deadlock or other gpusim error becomes the row's status and reason.

    ``arch`` is the point's arch already resolved with its costs (sweeps resolve it once, so every
    worker uses the same costs). Deterministic: the row holds no wall-clock time or host name.
    """
    try:
        doc = prediction_dict(predict(point.schedule, arch or point.arch, costs, point.overrides))
    except ScheduleRefused as exc:
        return empty_row(point, costs, STATUS_REFUSED, str(exc))
    except DeadlockError as exc:
        return empty_row(point, costs, STATUS_DEADLOCK, str(exc))
    except GpusimError as exc:
        return empty_row(point, costs, STATUS_ERROR, str(exc))
    row = empty_row(point, costs, STATUS_OK, None)
    row.update(_metrics(doc))
    return row
