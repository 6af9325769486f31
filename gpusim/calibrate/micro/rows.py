"""Microbenchmark quantities as rows of the measurement format (data/measurements/*.csv columns).

``schedule`` is ``micro:<experiment>``; ``metric``/``unit`` name the measured quantity
(``tensor_flops_per_clk_per_sm`` FLOP/clk/SM, ``sm_clock_mhz`` MHz, ...); ``params`` carries the variant,
what it varies, the provenance (GPU, driver, clocks, date, command) and ``unmapped=...``, so that
``gpusim validate`` reports the rows as skipped (they are not kernels to predict) while
``gpusim calibrate`` reads them (gpusim.calibrate.micro.constants).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from gpusim.calibrate.measurements import COLUMNS
from gpusim.calibrate.micro.catalog import Variant
from gpusim.calibrate.micro.derive import Quantity

SCHEDULE_PREFIX = "micro:"
UNMAPPED = "microbenchmark (gpusim measure --micro): read by gpusim calibrate; not a kernel to predict"


def _clean(value: Any) -> str:
    return " ".join(str(value).replace(";", " ").replace("=", ":").replace(",", " ").split())


def params_text(items: dict[str, Any]) -> str:
    """``key=value;...`` with separators removed from the values."""
    return ";".join(f"{k}={_clean(v)}" for k, v in items.items() if v is not None and str(v) != "")


def quantity_row(v: Variant, q: Quantity, arch: str, env: dict[str, Any], kernel_ms: float) -> dict[str, Any]:
    """One measurement row for quantity ``q`` of variant ``v`` measured on ``arch`` (gpusim id)."""
    row: dict[str, Any] = {c: "" for c in COLUMNS}
    dtype = "" if v.experiment == "l2_bandwidth" else ("fp16" if "_f16_" in v.kernel else "bf16")
    if "N" in v.args and v.args.get("mma_wgs", 1):
        row["N"] = v.args["N"]
    params = {"variant": v.name, "role": q.role, "settles": v.settles, **v.labels, **q.extra,
              "kernel_us": round(kernel_ms * 1000.0, 2), **env, "unmapped": UNMAPPED}  # fmt: skip
    row.update(source=f"gpusim measure --micro on {env.get('gpu', arch)} ({env.get('date', '')})", arch=arch,
               schedule=SCHEDULE_PREFIX + v.experiment, dtype=dtype, metric=q.metric,
               value=f"{q.value:.6g}", unit=q.unit, notes=f"{v.name} ({v.source}:{v.kernel}), {q.role}",
               params=params_text(params))  # fmt: skip
    return row


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` (with the header) to ``path``."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(COLUMNS), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
