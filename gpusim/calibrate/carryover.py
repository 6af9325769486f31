"""Row results carried between ``gpusim validate --markdown`` runs whose inputs did not change.

Beside the accuracy report, validate writes every row's result to ``<report>_rows.csv`` with a
digest of what the row's prediction reads: the row itself, the file of the row's arch (every arch file
when the row names no built-in arch) and the alias table that resolves its name, the calibration overlay
of the row's arch (calibrated costs), the schedule files the row's prediction can read (the schedules it
names, or every schedule its ``auto:`` search may try, with the parts their ``extends`` chains compose
them from; every schedule file when it names none gpusim knows), and the options (costs, model, work limit,
--arch). ``--reuse-unchanged`` takes a row's result from
that file when its digest is the same, and predicts only the rest, so refitting one arch's overlay
re-predicts that arch's rows and nothing else, and so does editing one arch file.

The digest does not cover gpusim's own code, as the report's input digest does not: after a change
to the engine, run without ``--reuse-unchanged`` (the report says how many rows were carried over and
from which runs).
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusim.arch import arch_alias_table, builtin_arch_path, resolve_arch_id
from gpusim.calibrate.accuracy import arch_files, files_digest, portable_reason, schedule_files
from gpusim.calibrate.measurements import Measurement
from gpusim.calibrate.overlay import find_overlay
from gpusim.errors import GpusimError, InputError, quote
from gpusim.schedule.load import schedules_dir

COLUMNS = ("file", "line", "inputs", "arch", "family", "measured_time_us", "predicted_time_us", "skipped",
           "costs", "predicted_on", "model")  # fmt: skip


def rows_file_for(markdown: str | Path) -> Path:
    """Where the row results of the report at ``markdown`` live (``docs/accuracy.md`` ->
    ``docs/accuracy_rows.csv``)."""
    path = Path(markdown)
    return path.with_name(f"{path.stem}_rows.csv")


@dataclass
class RowRecord:
    """One row's stored result."""

    arch: str
    family: str
    measured_time_us: float | None
    predicted_time_us: float | None
    skipped: str | None
    costs: str | None
    predicted_on: str


@dataclass
class Carryover:
    """The digests of this run's rows and, with ``--reuse-unchanged``, the earlier results to reuse."""

    costs: str
    model: str | None
    max_events: int | None
    arch_filter: str | None = None
    previous: dict[tuple[str, int, str], RowRecord] = field(default_factory=dict)
    digests: dict[int, str] = field(default_factory=dict)
    """Row index -> its inputs digest (filled by :meth:`digest_rows`)."""
    carried: dict[int, str] = field(default_factory=dict)
    """Row index -> the date of the run its result was carried from."""
    reuse_over_limit: bool = False
    """Also reuse rows that were skipped for the work limit (by default they are predicted again)."""
    _shared: str | None = None
    _overlays: dict[str, str] = field(default_factory=dict)
    _archs: dict[str, str] = field(default_factory=dict)
    _schedules: dict[str, str] = field(default_factory=dict)

    def digest_rows(self, rows: list[Measurement]) -> None:
        """Compute every row's inputs digest (once, at the start of the run)."""
        if self._shared is None:
            options = f"{self.costs}|{self.model}|{self.max_events}|{self.arch_filter}"
            self._shared = hashlib.sha256((repr(arch_alias_table()) + options).encode()).hexdigest()
        for m in rows:
            self.digests[m.index] = self._row_digest(m)

    def _arch_digest(self, arch_name: str) -> str:
        if arch_name not in self._archs:
            try:
                paths = [builtin_arch_path(resolve_arch_id(arch_name))]
            except GpusimError:
                paths = arch_files()
            self._archs[arch_name] = files_digest(paths)
        return self._archs[arch_name]

    def _overlay_digest(self, arch_name: str) -> str:
        if self.costs != "calibrated":
            return "datasheet"
        if arch_name not in self._overlays:
            try:
                path = find_overlay(resolve_arch_id(arch_name))
            except GpusimError:
                path = None
            self._overlays[arch_name] = "none" if path is None else files_digest([path])
        return self._overlays[arch_name]

    def _schedule_digest(self, schedule: str) -> str:
        if schedule not in self._schedules:
            self._schedules[schedule] = files_digest(schedule_files_read(schedule))
        return self._schedules[schedule]

    def _row_digest(self, m: Measurement) -> str:
        parts = [self._shared or "", self._arch_digest(m.arch), self._overlay_digest(m.arch), self._schedule_digest(m.schedule), m.source,
                 m.arch, m.schedule, m.dtype,
                 repr(sorted(m.dims.items())), m.metric, repr(m.value), m.unit,
                 repr(sorted((k, repr(v)) for k, v in m.params.items())), repr(m.error)]  # fmt: skip
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]

    def reusable(self, m: Measurement) -> RowRecord | None:
        """The earlier result of ``m`` when its inputs digest is unchanged."""
        return self.previous.get((Path(m.file).name, m.line, self.digests.get(m.index, "")))


def schedule_files_read(schedule: str) -> list[Path]:
    """The schedule files a row naming ``schedule`` (a name, a path, ``auto:...``, or several joined by
    ``+``) can read, in a fixed order: each named (or searched) schedule and the parts its ``extends``
    chain composes it from; every built-in schedule file when a name is none of those (the prediction
    refuses it, or reads what gpusim decides)."""
    from gpusim.explore.spaces import schedules_read

    builtin = schedules_dir()
    files: list[Path] = []
    for name in (n.strip() for n in schedule.split("+")):
        path = Path(name)
        searched = schedules_read(name)
        if searched is not None:
            roots = [builtin / f"{s}.yaml" for s in searched]
        elif path.suffix in (".yaml", ".yml") and path.is_file():
            roots = [path]
        elif name and (builtin / f"{name}.yaml").is_file():
            roots = [builtin / f"{name}.yaml"]
        else:
            return schedule_files()
        for root in roots:
            chain = _composed_from(root)
            if chain is None:
                return schedule_files()
            files += [f for f in chain if f not in files]
    return files


def _composed_from(path: Path, depth: int = 0) -> list[Path] | None:
    """``path`` and the files its ``extends`` chain names, depth first (None: unreadable or too deep)."""
    from gpusim.schedule.compose import MAX_DEPTH, resolve_base
    from gpusim.yamlio import read_yaml_mapping

    if depth > MAX_DEPTH:
        return None
    try:
        bases = read_yaml_mapping(path).get("extends") or []
    except GpusimError:
        return None
    out = [path]
    for base in [bases] if isinstance(bases, str) else bases:
        if not isinstance(base, str):
            return None
        try:
            target = resolve_base(base, path)
        except GpusimError:
            return None
        chain = _composed_from(target, depth + 1)
        if chain is None:
            return None
        out += [f for f in chain if f not in out]
    return out


def read_previous(path: Path, journal: Path | None = None) -> dict[tuple[str, int, str], RowRecord]:
    """The stored row results at ``path`` (none when the file does not exist), and those of an
    interrupted run's ``journal`` where one exists (:class:`Journal`; its results replace stored ones
    with the same digest)."""
    out = _read_records(path)
    if journal is not None:
        out.update(_read_records(journal, partial_last=True))
    return out


def _read_records(path: Path, partial_last: bool = False) -> dict[tuple[str, int, str], RowRecord]:
    """``partial_last``: a record cut short (a journal whose run was killed while writing) is left out."""
    if not path.is_file():
        return {}
    out: dict[tuple[str, int, str], RowRecord] = {}
    try:
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f)
            if tuple(reader.fieldnames or ()) != COLUMNS:
                raise InputError(f"{quote(str(path))}: not a row-results file of gpusim validate (expected the "
                                 f"columns {', '.join(COLUMNS)})")  # fmt: skip
            for rec in reader:
                if partial_last and (None in rec.values() or None in rec):
                    continue
                out[(rec["file"], int(rec["line"]), rec["inputs"])] = RowRecord(
                    rec["arch"], rec["family"], _number(rec["measured_time_us"]),
                    _number(rec["predicted_time_us"]), rec["skipped"] or None, rec["costs"] or None,
                    rec["predicted_on"],
                )  # fmt: skip
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, csv.Error) as exc:
        raise InputError(f"{quote(str(path))}: cannot read the stored row results ({quote(str(exc))}); "
                         "delete it or run without --reuse-unchanged") from None  # fmt: skip
    return out


def _number(text: str) -> float | None:
    if not text:
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def write_rows(path: Path, results: list[Any], carry: Carryover) -> None:
    """Store every row's result with its inputs digest (a row carried over keeps its run's date)."""
    write_row_parts(path, [(results, carry)])


def write_row_parts(path: Path, parts: list[tuple[list[Any], Carryover]]) -> None:
    """Store the results of several runs (each with its own digests) in one row-results file."""
    today = dt.date.today().isoformat()
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(COLUMNS)
        for results, carry in parts:
            for r in results:
                writer.writerow(_record_cells(r, carry, today))


def _record_cells(r: Any, carry: Carryover, today: str) -> list[Any]:
    return [
        Path(r.m.file).name, r.m.line, carry.digests.get(r.m.index, ""), r.arch, r.family,
        "" if r.measured_time_us is None else repr(r.measured_time_us),
        "" if r.predicted_time_us is None else repr(r.predicted_time_us),
        portable_reason(r.skipped or ""), r.costs or "", carry.carried.get(r.m.index, today), carry.model or "default",
    ]  # fmt: skip


def journal_file_for(rows_file: Path) -> Path:
    """The journal of a run that writes ``rows_file`` (``docs/accuracy_rows.csv`` ->
    ``docs/accuracy_rows.journal.csv``)."""
    return rows_file.with_name(f"{rows_file.stem}.journal.csv")


class Journal:
    """Row results appended as they are predicted, so that an interrupted ``gpusim validate --markdown``
    (Ctrl-C, a machine that goes away) loses no finished row: the next run with ``--reuse-unchanged``
    reads the journal beside the stored results (:func:`read_previous`) and carries those rows over. A
    run that completes writes the row-results files and removes the journal; a run without
    ``--reuse-unchanged`` starts a new one."""

    def __init__(self, path: Path, *, keep: bool) -> None:
        self.path = path
        if not keep and path.exists():
            path.unlink()

    def recorder(self, carry: Carryover) -> Callable[[list[Any]], None]:
        """A callback for :func:`gpusim.calibrate.validate.run_validate`'s ``on_results`` that appends
        those results with ``carry``'s digests (and model)."""

        def record(results: list[Any]) -> None:
            today = dt.date.today().isoformat()
            new = not self.path.exists()
            with self.path.open("a", encoding="utf-8", newline="") as f:
                writer = csv.writer(f, lineterminator="\n")
                if new:
                    writer.writerow(COLUMNS)
                for r in results:
                    writer.writerow(_record_cells(r, carry, today))

        return record

    def close(self) -> None:
        """The run completed: its results are in the row-results files."""
        self.path.unlink(missing_ok=True)
