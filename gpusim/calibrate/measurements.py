"""The measurement CSV format: reading, checking and one typed record per data row."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusim.errors import InputError, kind_of, quote
from gpusim.textfile import read_text_file

MAX_CSV_BYTES = 64 << 20
"""The largest measurement file read (the shipped ones are under 100 KB)."""
MAX_CELL_CHARS = 4096
"""The longest cell accepted; a longer one makes its row malformed."""
MAX_PROBLEM_SIZE = 1 << 40
"""The largest problem dimension a row may give (beyond any real kernel's)."""

COLUMNS: tuple[str, ...] = (
    "source", "arch", "schedule", "dtype", "M", "N", "K", "batch", "heads", "seqlen_q", "seqlen_kv",
    "head_dim", "causal", "metric", "value", "unit", "notes", "params",
)  # fmt: skip
INT_COLUMNS = ("M", "N", "K", "batch", "heads", "seqlen_q", "seqlen_kv", "head_dim", "causal")

MIN_MEASURED_VALUE = 1e-9
"""The smallest measured value a row may give: a femtosecond in us, far below any real measurement in
the units gpusim reads; a smaller one makes the error overflow."""


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
    """An int, a float or the text itself (NaN and infinities are refused)."""
    t = text.strip()
    if len(t) <= 100:
        for conv in (int, float):
            try:
                value = conv(t)
            except ValueError:
                continue
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"'{t}' is not a finite number")
            return value
    return t


def parse_params(text: str) -> dict[str, Any]:
    """``key=value;key=value`` -> dict (values as numbers where they are numbers)."""
    out: dict[str, Any] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"params entry '{quote(part.strip(), 80)}' is not key=value")
        if not key.strip():
            raise ValueError(f"params entry '{quote(part.strip(), 80)}' has no key")
        if key.strip() in out:
            raise ValueError(f"params entry '{quote(key.strip(), 60)}' is given twice")
        out[key.strip()] = parse_scalar(value)
    return out


def read_measurements(paths: list[str | Path], start: int = 0) -> list[Measurement]:
    """Every data row of ``paths`` in order; a file missing columns is refused naming them."""
    if isinstance(paths, str | Path):
        paths = [paths]
    if not isinstance(paths, list | tuple) or not all(isinstance(p, str | Path) for p in paths):
        raise InputError(f"read_measurements: expected a list of CSV paths, got {kind_of(paths)}")
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise InputError(f"read_measurements: start: expected a whole number >= 0, got {kind_of(start)}")
    rows: list[Measurement] = []
    index = start
    for p in paths:
        path = Path(p)
        if not path.exists():
            raise InputError(f"{path}: no such measurement file")
        text = read_text_file(path, what="a measurement CSV file", max_bytes=MAX_CSV_BYTES)
        csv.field_size_limit(
            max(csv.field_size_limit(), MAX_CSV_BYTES)
        )  # a long cell marks its row, not the file
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)  # an unclosed quote is an error
        try:
            header = next(reader, None)
            if header is None:
                raise InputError(f"{path}: empty file; expected the header {','.join(COLUMNS)}")
            header = [h.strip() for h in header]
            twice = sorted({h for h in header if h and header.count(h) > 1})
            if twice:
                raise InputError(
                    f"{path}: line 1: the column '{quote(twice[0], 60)}' appears twice in the header"
                )
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise InputError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                                 f"(the measurement format is {','.join(COLUMNS)})")  # fmt: skip
            for cells in reader:
                if not any(c.strip() for c in cells):
                    continue
                rows.append(_row(path, reader.line_num, index, header, cells))
                index += 1
        except csv.Error as exc:
            raise InputError(
                f"{path}: line {reader.line_num}: not a valid CSV file: {quote(exc, 120)}"
            ) from None
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
    long_cells = [h for h, c in zip(header, cells, strict=True) if len(c) > MAX_CELL_CHARS]
    if long_cells:
        return Measurement(**base, error=f"{where}: column {quote(long_cells[0], 40)} is longer than "
                                         f"{MAX_CELL_CHARS} characters")  # fmt: skip
    try:
        dims: dict[str, int] = {}
        for col in INT_COLUMNS:
            text = rec[col].strip()
            if not text:
                continue
            try:
                number = float(text)
            except ValueError:
                raise ValueError(f"column {col}: '{quote(text, 40)}' is not a number") from None
            if not math.isfinite(number) or number != int(number) or not 0 <= number <= MAX_PROBLEM_SIZE:
                raise ValueError(f"column {col}: '{quote(text, 40)}' is not a whole number in 0..2**40")
            dims[col] = int(number)
        text = rec["value"].strip()
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"column value: '{quote(text, 40)}' is not a number") from None
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"column value: '{quote(text, 40)}' is not a positive finite number")
        if value < MIN_MEASURED_VALUE:  # its error would overflow: no unit gpusim reads goes this low
            raise ValueError(f"column value: '{quote(text, 40)}' is below {MIN_MEASURED_VALUE:g}, "
                             "no measurement of any unit gpusim reads")  # fmt: skip
        params = parse_params(rec["params"])
    except ValueError as exc:
        return Measurement(**base, error=f"{where}: {exc}")
    base.update(dims=dims, value=value)
    return Measurement(**base, params=params)
