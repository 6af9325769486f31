"""Run a sweep: pre-check every point, predict the legal ones on an executor, stream, resume, write."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusim.errors import InputError, quote
from gpusim.explore.adapter import Costs, arch_for, refusal
from gpusim.explore.executors import Executor
from gpusim.explore.grid import Point
from gpusim.explore.journal import Journal, journal_path, read_journal
from gpusim.explore.point import (
    IDENTITY_COLUMNS,
    METRIC_COLUMNS,
    STATUS_OK,
    STATUS_REFUSED,
    UTIL_UNITS,
    VERDICT_COLUMNS,
    empty_row,
)
from gpusim.explore.table import FORMATS, read_results, write_results

NON_PARAM_COLUMNS = frozenset(
    {*IDENTITY_COLUMNS, *VERDICT_COLUMNS, *METRIC_COLUMNS, *(f"util_{u}" for u in UTIL_UNITS), "rank"}
)


@dataclass
class SweepStatus:
    """Progress of a running sweep (what the progress bar shows)."""

    total: int
    done: int = 0
    refused: int = 0
    reused: int = 0
    failed: int = 0
    best: dict[str, Any] | None = None

    def add(self, row: dict[str, Any]) -> None:
        """Count one finished row."""
        self.done += 1
        if row["status"] == STATUS_REFUSED:
            self.refused += 1
        elif row["status"] != STATUS_OK:
            self.failed += 1
        elif self.best is None or (row["time_us"], row["point"]) < (self.best["time_us"], self.best["point"]):
            self.best = row


@dataclass
class SweepResult:
    """All rows of a sweep, sorted by point, and what happened to them."""

    rows: list[dict[str, Any]]
    status: SweepStatus
    executor: str
    wall_s: float
    predicted: int
    refusals: list[tuple[int, str]] = field(default_factory=list)


def row_key(row: dict[str, Any]) -> str:
    """The identity of a row's point (schedule, arch and parameters), as :attr:`Point.key`."""
    params = tuple((k, v) for k, v in row.items() if k not in NON_PARAM_COLUMNS and v is not None)
    return Point(0, row["schedule"], row["arch"], params).key


def _check_results_csv(path: Path) -> None:
    """Refuse to resume into a CSV that is not a sweep's results (the sweep would overwrite it)."""
    try:
        with path.open(encoding="utf-8", errors="replace", newline="") as f:
            header = f.readline(1 << 16).strip().split(",")
    except OSError as exc:
        raise InputError(f"--resume: {quote(str(path))}: cannot read it ({exc.strerror})") from None
    if header[:3] != ["point", "schedule", "arch"]:
        raise InputError(f"--resume: {quote(str(path))} is not a gpusim results file (its first line is not "
                         "point,schedule,arch,...); the sweep would overwrite it. Give another --out")  # fmt: skip


def _previous_rows(out: Path, costs: Costs) -> dict[str, dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if out.exists() and FORMATS.get(out.suffix.lower()) == "parquet":
        rows.extend({k: v for k, v in r.items() if k != "rank"} for r in read_results(out))
    elif out.exists() and out.is_file():
        _check_results_csv(out)
    header, journal_rows = read_journal(journal_path(out))
    if header is not None and header.get("costs") != costs:
        raise InputError(f"--resume: {journal_path(out)} was run with {header.get('costs')} costs, "
                         f"this sweep uses {costs}; remove the file or match --datasheet")  # fmt: skip
    rows.extend(journal_rows)
    return {row_key(r): r for r in rows if r.get("costs") == costs}


def run_sweep(
    points: Sequence[Point],
    costs: Costs,
    executor: Executor,
    *,
    out: str | Path | None = None,
    resume: bool = False,
    on_row: Callable[[dict[str, Any], SweepStatus], None] | None = None,
    flush_every_s: float = 30.0,
) -> SweepResult:
    """Predict every point and return the rows sorted by point.

    Refused points are found by the static checks before anything is simulated and get a row with
    the refusal reason. With ``out``, finished rows are appended to a journal as they arrive and the
    output file is rewritten with the rows so far every ``flush_every_s`` seconds and at the end;
    ``resume`` reuses the rows of an earlier run (its journal, or its Parquet output).
    """
    start = time.perf_counter()
    status = SweepStatus(total=len(points))
    out_path = Path(out) if out is not None else None
    previous = _previous_rows(out_path, costs) if (out_path is not None and resume) else {}
    rows: dict[int, dict[str, Any]] = {}
    journal: Journal | None = None
    if out_path is not None:
        journal = Journal(journal_path(out_path), {"costs": costs, "schedule": points[0].schedule if points else ""},
                          append=resume and journal_path(out_path).exists())  # fmt: skip

    def finish(row: dict[str, Any], *, reused: bool = False) -> None:
        rows[row["point"]] = row
        status.add(row)
        if reused:
            status.reused += 1
        elif journal is not None:
            journal.append(row)
        if on_row is not None:
            on_row(row, status)

    todo: list[Point] = []
    refusals: list[tuple[int, str]] = []
    for point in points:
        earlier = previous.get(point.key)
        if earlier is not None:
            finish({**earlier, "point": point.index}, reused=True)
            continue
        reason = refusal(point.schedule, point.arch, costs, point.overrides)
        if reason is not None:
            refusals.append((point.index, reason))
            finish(empty_row(point, costs, STATUS_REFUSED, reason))
        else:
            todo.append(point)
    archs = {a: arch_for(a, costs) for a in dict.fromkeys(p.arch for p in todo)}
    last_flush = time.perf_counter()
    try:
        for row in executor.run(todo, costs, archs):
            finish(row)
            if out_path is not None and time.perf_counter() - last_flush > flush_every_s:
                write_results(list(rows.values()), out_path)
                last_flush = time.perf_counter()
    finally:
        if journal is not None:
            journal.close()
    ordered = [rows[i] for i in sorted(rows)]
    if out_path is not None:
        write_results(ordered, out_path)
        journal_path(out_path).unlink(missing_ok=True)
    return SweepResult(
        ordered, status, executor.description, time.perf_counter() - start, len(todo), refusals
    )
