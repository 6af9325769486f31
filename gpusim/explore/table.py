"""Result tables: column order, ranks, and the Parquet / CSV files a sweep writes."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpusim.errors import InputError, quote
from gpusim.explore.point import (
    IDENTITY_COLUMNS,
    METRIC_COLUMNS,
    STATUS_OK,
    UTIL_UNITS,
    VERDICT_COLUMNS,
)

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


def output_format(path: str | Path) -> str:
    """``parquet`` or ``csv`` from the file name; anything else is bad input."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise InputError(f"--out {path}: expected a .parquet or .csv file name")
    return FORMATS[suffix]


def rank_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The predicted points, fastest first (ties broken by point index, so the order is stable)."""
    ok = [r for r in rows if r.get("status") == STATUS_OK and r.get("time_us") is not None]
    return sorted(ok, key=lambda r: (r["time_us"], r["point"]))


def with_ranks(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows sorted by point, each with ``rank`` (1 = fastest predicted; empty when not predicted)."""
    ranks = {r["point"]: i for i, r in enumerate(rank_rows(rows), start=1)}
    return [{**r, "rank": ranks.get(r["point"])} for r in sorted(rows, key=lambda r: r["point"])]


def columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Identity, parameters (in the order first seen), verdict, metrics, utilizations, rank."""
    fixed = {*IDENTITY_COLUMNS, *VERDICT_COLUMNS, *METRIC_COLUMNS, *(f"util_{u}" for u in UTIL_UNITS), "rank"}
    params: list[str] = []
    for row in rows:
        params.extend(k for k in row if k not in fixed and k not in params)
    return [*IDENTITY_COLUMNS, *params, *VERDICT_COLUMNS, *METRIC_COLUMNS, *(f"util_{u}" for u in UTIL_UNITS),
            "rank"]  # fmt: skip


def _arrow_column(values: list[Any]) -> Any:
    import pyarrow as pa

    kinds = {type(v) for v in values if v is not None}
    if kinds <= {int, float} and float in kinds:
        return pa.array([None if v is None else float(v) for v in values], type=pa.float64())
    if kinds <= {int}:
        return pa.array(values, type=pa.int64())
    if kinds <= {bool}:
        return pa.array(values, type=pa.bool_())
    if kinds <= {float}:
        return pa.array(values, type=pa.float64())
    return pa.array([None if v is None else str(v) for v in values], type=pa.string())


def _write_parquet(rows: Sequence[dict[str, Any]], names: list[str], path: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(
            f"--out {path}: Parquet needs pyarrow (pip install pyarrow), or write .csv"
        ) from None
    table = pa.table({name: _arrow_column([r.get(name) for r in rows]) for name in names})
    pq.write_table(table, path, compression="zstd")


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    return str(value)


def _write_csv(rows: Sequence[dict[str, Any]], names: list[str], path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(names)
        for row in rows:
            writer.writerow([_csv_cell(row.get(n)) for n in names])


def write_results(rows: Sequence[dict[str, Any]], path: str | Path) -> None:
    """Write rows (sorted by point, ranked) to ``path`` atomically: Parquet or CSV by its suffix."""
    target = Path(path)
    kind = output_format(target)
    ranked = with_ranks(rows)
    names = columns(ranked)
    tmp = target.with_name(target.name + ".tmp")
    try:
        (_write_parquet if kind == "parquet" else _write_csv)(ranked, names, tmp)
        os.replace(tmp, target)
    except OSError as exc:
        raise InputError(f"--out {target}: cannot write ({exc.strerror})") from None


def read_results(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a Parquet result file (as written by :func:`write_results`); a file that is not one is
    an :class:`InputError` naming it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(
            f"{quote(path)}: not a Parquet results file gpusim can read ({quote(exc)})"
        ) from None
    missing = [name for name in ("schedule", "arch") if name not in table.column_names]
    if missing:
        raise InputError(f"{quote(path)}: not a gpusim results file (no {', '.join(missing)} column)")
    return table.to_pylist()
