"""The measurement CSV format: reading, checking and one typed record per data row."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusim.errors import InputError

COLUMNS: tuple[str, ...] = (
    "source", "arch", "schedule", "dtype", "M", "N", "K", "batch", "heads", "seqlen_q", "seqlen_kv",
    "head_dim", "causal", "metric", "value", "unit", "notes", "params",
)  # fmt: skip
INT_COLUMNS = ("M", "N", "K", "batch", "heads", "seqlen_q", "seqlen_kv", "head_dim", "causal")


@dataclass(frozen=True)
class Measurement:
    """One data row of a measurement file."""

    index: int
    """0-based data-row index over all files read together, in the order given."""
    file: str
    line: int
    """1-based line in the file (the header is line 1)."""
    source: str
    arch: str
    schedule: str
    dtype: str
    dims: dict[str, int]
    """The problem columns that are filled in (M, N, K, batch, heads, ...)."""
    metric: str
    value: float
    unit: str
    params: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    """Why the row is malformed (then it is reported, never predicted)."""


def parse_scalar(text: str) -> Any:
    """An int, a float or the text itself."""
    t = text.strip()
    for conv in (int, float):
        try:
            return conv(t)
        except ValueError:
            pass
    return t


def parse_params(text: str) -> dict[str, Any]:
    """``key=value;key=value`` -> dict (values as numbers where they are numbers)."""
    out: dict[str, Any] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"params entry '{part.strip()}' is not key=value")
        out[key.strip()] = parse_scalar(value)
    return out


def read_measurements(paths: list[str | Path], start: int = 0) -> list[Measurement]:
    """Every data row of ``paths`` in order; a file missing columns is refused naming them."""
    rows: list[Measurement] = []
    index = start
    for p in paths:
        path = Path(p)
        if not path.is_file():
            raise InputError(f"{path}: no such measurement file")
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None:
                raise InputError(f"{path}: empty file; expected the header {','.join(COLUMNS)}")
            header = [h.strip() for h in header]
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise InputError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                                 f"(the measurement format is {','.join(COLUMNS)})")  # fmt: skip
            for lineno, cells in enumerate(reader, start=2):
                if not any(c.strip() for c in cells):
                    continue
                rows.append(_row(path, lineno, index, header, cells))
                index += 1
    return rows


def _row(path: Path, line: int, index: int, header: list[str], cells: list[str]) -> Measurement:
    where = f"{path}:{line} (row {index})"
    rec = dict(zip(header, cells, strict=False))
    base: dict[str, Any] = {
        "index": index, "file": str(path), "line": line, "source": rec.get("source", ""),
        "arch": rec.get("arch", "").strip(), "schedule": rec.get("schedule", "").strip(),
        "dtype": rec.get("dtype", "").strip(), "dims": {}, "metric": rec.get("metric", "").strip(),
        "value": float("nan"), "unit": rec.get("unit", "").strip(),
    }  # fmt: skip
    if len(cells) != len(header):
        return Measurement(**base, error=f"{where}: {len(cells)} cells, the header has {len(header)}")
    try:
        dims: dict[str, int] = {}
        for col in INT_COLUMNS:
            text = rec[col].strip()
            if not text:
                continue
            try:
                number = float(text)
            except ValueError:
                raise ValueError(f"column {col}: '{text}' is not a number") from None
            dims[col] = int(number)
        text = rec["value"].strip()
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"column value: '{text}' is not a number") from None
        params = parse_params(rec["params"])
    except ValueError as exc:
        return Measurement(**base, error=f"{where}: {exc}")
    base.update(dims=dims, value=value)
    return Measurement(**base, params=params)
