"""Simulation results kept on disk, so a stopped calibration resumes and later runs reuse them.

``gpusim calibrate --cache DIR`` keeps every schedule prediction it runs in DIR, keyed by a digest of
everything the prediction reads: gpusim's own code (every file of the package but the fit's driver,
``DRIVER_FILES``), the whole arch (its calibration values and mechanisms included, its provenance left out),
the schedule files the name can read (with their ``extends`` parts), the problem and parameters, the
auto choice it is pinned to, where the power model's fixed point starts, and the work limit. A result
is used only when all of these are byte-for-byte the same, so a cached result is the result the
simulation would give now; anything changed is simulated again.

Each process appends to its own file (``sims-<host>-<pid>.jsonl``), one JSON record per line, so worker
processes never interleave writes; a record cut short (a run stopped mid-write) is ignored, and
records another process appended are read when a key is not yet known.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from functools import cache
from pathlib import Path
from typing import Any

from gpusim.arch import Arch
from gpusim.errors import InputError, quote
from gpusim.sim.power import ClockSensitivity, ClockStart

FORMAT = 1
"""Bumped when a record's layout changes (older records are then ignored)."""


DRIVER_FILES = frozenset(
    {"cli.py", "calibrate/fit.py", "calibrate/rowpool.py", "calibrate/store.py", "calibrate/report.py"}
)
"""Package files that drive a fit and never reach a simulation (what to simulate arrives as the arch,
schedule, problem and options in the key): left out of the code digest, so a change to the fit's steps
or its report keeps the cache."""


@cache
def code_digest() -> str:
    """SHA-256 over the names and bytes of every file of the installed gpusim package but the fit's
    driver (``DRIVER_FILES``)."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if (
            path.is_file()
            and "__pycache__" not in path.parts
            and path.suffix != ".pyc"
            and name not in DRIVER_FILES
        ):
            h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@cache
def _schedule_digest(schedule: str) -> str:
    from gpusim.calibrate.accuracy import files_digest
    from gpusim.calibrate.carryover import schedule_files_read

    return files_digest(schedule_files_read(schedule))


def _arch_digest(arch: Arch) -> str:
    data = arch.model_dump(mode="json")
    data.get("calibration", {}).pop("provenance", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=repr).encode()).hexdigest()


def prediction_key(schedule: str, arch: Arch, problem: dict[str, Any], pinned: Any, start: ClockStart | None,
                   max_events: int | None) -> str:  # fmt: skip
    """The digest of everything one schedule prediction reads (see the module doc)."""
    parts = [
        FORMAT,
        code_digest(),
        _arch_digest(arch),
        _schedule_digest(schedule),
        schedule,
        sorted((k, repr(v)) for k, v in problem.items()),
        repr(pinned),
        None if start is None else [repr(start.clock_mhz), repr(start.power_slope)],
        max_events,
    ]
    return hashlib.sha256(json.dumps(parts, default=repr).encode()).hexdigest()


def _encode(value: Any) -> dict[str, Any]:
    """A PartPrediction or a skip reason as a JSON object."""
    if isinstance(value, str):
        return {"skip": value}
    sens = value.sensitivity
    return {
        "schedule": value.schedule,
        "time_us": value.time_us,
        "chosen": value.chosen,
        "clock_mhz": value.clock_mhz,
        "sensitivity": None if sens is None else [sens.power_slope, sens.time_slope],
        "events": value.events,
    }


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _decode(record: dict[str, Any]) -> Any:
    from gpusim.calibrate.predictor import PartPrediction

    if "skip" in record:
        return str(record["skip"])
    sens = record["sensitivity"]
    return PartPrediction(
        str(record["schedule"]),
        float(record["time_us"]),
        _tuples(record["chosen"]),
        record["clock_mhz"],
        None if sens is None else ClockSensitivity(float(sens[0]), float(sens[1])),
        int(record.get("events", 0)),
    )


class PredictionStore:
    """The results kept in one directory (see the module doc)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        try:
            if self.directory.exists() and not self.directory.is_dir():
                raise InputError(f"--cache {quote(self.directory, 200)}: not a directory")
            self.directory.mkdir(parents=True, exist_ok=True)
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise InputError(
                f"--cache {quote(self.directory, 200)}: cannot use it as a directory ({why})"
            ) from None
        self._own = self.directory / f"sims-{socket.gethostname()}-{os.getpid()}.jsonl"
        self._entries: dict[str, Any] = {}
        self._read_upto: dict[Path, int] = {}
        self.hits = 0
        self._refresh()

    def _refresh(self) -> None:
        """Read what the directory's files gained since the last read (complete lines only)."""
        for path in sorted(self.directory.glob("sims-*.jsonl")):
            start = self._read_upto.get(path, 0)
            try:
                with path.open("rb") as f:
                    f.seek(start)
                    data = f.read()
            except OSError:
                continue
            end = data.rfind(b"\n") + 1  # a line still being written (or cut short) waits
            for line in data[:end].splitlines():
                try:
                    record = json.loads(line)
                    if record.get("format") == FORMAT:
                        self._entries[str(record["key"])] = _decode(record["value"])
                except (ValueError, KeyError, TypeError, IndexError):
                    continue  # a garbled record is simulated again
            self._read_upto[path] = start + end

    def get(self, key: str) -> Any:
        """The stored PartPrediction or skip reason for ``key``, or None."""
        if key not in self._entries:
            self._refresh()
        value = self._entries.get(key)
        if value is not None:
            self.hits += 1
        return value

    def put(self, key: str, value: Any) -> None:
        """Keep a PartPrediction or a skip reason (appended to this process's file at once)."""
        self._entries[key] = value
        line = json.dumps({"format": FORMAT, "key": key, "value": _encode(value)}) + "\n"
        try:
            with self._own.open("a", encoding="utf-8") as f:
                f.write(line)
            self._read_upto[self._own] = self._own.stat().st_size
        except OSError as exc:
            raise InputError(
                f"--cache {quote(self.directory, 200)}: cannot write {self._own.name} ({exc.strerror})"
            ) from None


_OPEN: dict[str, PredictionStore] = {}


def open_store(directory: str | Path | None) -> PredictionStore | None:
    """The process's store for ``directory`` (one per directory and process), or None."""
    if directory is None:
        return None
    key = os.path.abspath(directory)  # no file-system access: the store's own checks name a bad path
    if key not in _OPEN:
        _OPEN[key] = PredictionStore(directory)
    return _OPEN[key]
