"""The sweep journal: every finished point appended as one JSON line, so nothing done is lost.

The journal lives next to the output (``results.parquet.partial.jsonl``) while a sweep runs; ``--resume``
reads it back (a half-written last line is ignored) and the sweep predicts only the points it lacks.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import IO, Any

from gpusim.errors import InputError

FORMAT_VERSION = 1


def journal_path(out: str | Path) -> Path:
    """The journal file of an output file."""
    out = Path(out)
    return out.with_name(out.name + ".partial.jsonl")


class Journal:
    """Append-only JSON-lines log of result rows, flushed after every row."""

    def __init__(self, path: Path, header: dict[str, Any], *, append: bool) -> None:
        self.path = path
        try:
            self._file: IO[str] = path.open("a" if append else "w", encoding="utf-8")
        except OSError as exc:
            raise InputError(f"{path}: cannot write the sweep journal ({exc.strerror})") from None
        if not append or path.stat().st_size == 0:
            self._write({"journal": FORMAT_VERSION, **header})

    def _write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, sort_keys=False, allow_nan=True) + "\n")
        self._file.flush()

    def append(self, row: dict[str, Any]) -> None:
        """Record one finished point."""
        self._write({"row": row})

    def close(self) -> None:
        """Close the file (it stays on disk until the sweep removes it)."""
        self._file.close()


def read_journal(path: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The header and rows of a journal (missing file: no header, no rows)."""
    if not path.exists():
        return None, []
    header: dict[str, Any] | None = None
    rows: list[dict[str, Any]] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"{path}: cannot read the sweep journal ({exc.strerror})") from None
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue  # a line cut short when the sweep was killed
        if not isinstance(record, dict):
            continue
        if "journal" in record:
            header = header or record
        elif "row" in record and is_result_row(record["row"]):
            rows.append(record["row"])  # anything else is predicted again
    return header, rows


def is_result_row(row: Any) -> bool:
    """Whether a journal record is a row a sweep wrote: its identity, a known status and, when ok, a
    positive finite time (a damaged or edited line is predicted again instead of ranked)."""
    from gpusim.explore.point import STATUS_DEADLOCK, STATUS_ERROR, STATUS_OK, STATUS_REFUSED

    if not isinstance(row, dict) or not all(isinstance(k, str) for k in row):
        return False
    if not (isinstance(row.get("point"), int) and not isinstance(row.get("point"), bool)):
        return False
    if not all(isinstance(row.get(k), str) for k in ("schedule", "arch", "costs")):
        return False
    status = row.get("status")
    if status not in (STATUS_OK, STATUS_REFUSED, STATUS_DEADLOCK, STATUS_ERROR):
        return False
    if status != STATUS_OK:
        return True
    time_us = row.get("time_us")
    return (
        isinstance(time_us, int | float)
        and not isinstance(time_us, bool)
        and math.isfinite(time_us)
        and time_us > 0
    )
