"""The sweep journal: every finished point appended as one JSON line, so nothing done is lost.

The journal lives next to the output (``results.parquet.partial.jsonl``) while a sweep runs; ``--resume``
reads it back (a half-written last line is ignored) and the sweep predicts only the points it lacks.
"""

from __future__ import annotations

import json
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
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short when the sweep was killed
        if "journal" in record:
            header = header or record
        elif "row" in record:
            rows.append(record["row"])
    return header, rows
