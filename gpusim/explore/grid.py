"""Sweep grids: ``KEY=v1,v2,...`` and ``KEY=lo..hi[:step]`` axes, problem tables, and their product."""

from __future__ import annotations

import csv
import io
import itertools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusim.errors import InputError, quote
from gpusim.yamlio import parse_yaml_text

MAX_POINTS = 100_000
"""Most points one sweep enumerates (problems x archs x axes)."""
MAX_PROBLEMS_BYTES = 16 * 1024 * 1024
"""Largest ``--problems`` CSV read."""
MAX_RANGE_MAGNITUDE = 10**18
"""Largest whole number a ``lo..hi[:step]`` bound may be."""


@dataclass(frozen=True)
class Axis:
    """One swept parameter and the values it takes, in the order given."""

    key: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Point:
    """One point of a sweep: a schedule on an arch with its parameter and problem values.

    ``index`` is the point's position in the enumeration; it orders every output, so a sweep run
    on one machine or on a cluster writes the same file.
    """

    index: int
    schedule: str
    arch: str
    params: tuple[tuple[str, Any], ...]

    @property
    def overrides(self) -> dict[str, Any]:
        """The parameters as a mapping (what ``--set`` would pass)."""
        return dict(self.params)

    @property
    def key(self) -> str:
        """A stable identity for resuming: schedule, arch and the parameters, sorted."""
        body = ";".join(f"{k}={v!r}" for k, v in sorted(self.params))
        return f"{self.schedule}|{self.arch}|{body}"


def _scalar(text: str, where: str) -> Any:
    text = text.strip()
    if not text:
        raise InputError(f"{where}: empty value")
    return parse_yaml_text(text, where)


def _number(text: str, where: str) -> int | float:
    text = text.strip()
    if not _NUMBER.fullmatch(text):
        raise InputError(f"{where}: expected a number in a lo..hi[:step] range (finite, decimal), got "
                         f"'{quote(text, 80)}'")  # fmt: skip
    value: int | float = int(text) if _INTEGER.fullmatch(text) and len(text) < 40 else float(text)
    if isinstance(value, int) and abs(value) > MAX_RANGE_MAGNITUDE:
        raise InputError(f"{where}: {quote(text, 40)} is too large for a range bound (at most 1e18)")
    if not math.isfinite(value):
        raise InputError(f"{where}: expected a number in a lo..hi range (finite), got {text.strip()[:80]!r}")
    return value


_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")


def _range(key: str, body: str) -> tuple[Any, ...]:
    where = f"--grid {quote(f'{key}={body}', 80)}"
    span, _, step_text = body.partition(":")
    lo_text, _, hi_text = span.partition("..")
    lo, hi = _number(lo_text, where), _number(hi_text, where)
    step = _number(step_text, where) if step_text else 1
    if step <= 0:
        raise InputError(f"{where}: the step must be positive, got {step}")
    if hi < lo:
        raise InputError(f"{where}: the range is empty ({lo} > {hi}); write lo..hi with lo <= hi")
    span_steps = (hi - lo) / step
    if not math.isfinite(span_steps) or span_steps >= 100_000:
        raise InputError(f"{where}: more than 100,000 values in one axis; use a coarser step")
    count = int(span_steps + 1e-9) + 1
    if count > 100_000:
        raise InputError(f"{where}: {count:,} values in one axis; use a coarser step")
    values = [lo + i * step for i in range(count)]
    if all(isinstance(v, int) for v in (lo, hi, step)):
        return tuple(int(v) for v in values)
    return tuple(round(float(v), 12) for v in values)


def parse_axis(text: str) -> Axis:
    """Read ``KEY=v1,v2,...`` or ``KEY=lo..hi[:step]`` (inclusive) into an axis."""
    if "=" not in text:
        raise InputError(f"--grid '{quote(text, 80)}': expected KEY=v1,v2,... or KEY=lo..hi[:step]")
    key, _, body = text.partition("=")
    key, body = key.strip(), body.strip()
    if not key:
        raise InputError(f"--grid '{quote(text, 80)}': empty key")
    if not key.isidentifier():
        raise InputError(
            f"--grid '{quote(key, 80)}': a key is a parameter or problem name (letters, digits, _)"
        )
    if not body:
        raise InputError(f"--grid {key}: no values; expected KEY=v1,v2,... or KEY=lo..hi[:step]")
    from gpusim.schedule.reserved import refuse_predict_option

    refuse_predict_option(key, f"--grid {key}")
    if ".." in body and "," not in body:
        return Axis(key, _range(key, body))
    values = tuple(_scalar(part, f"--grid {key}") for part in body.split(","))
    if len(set(map(repr, values))) != len(values):
        raise InputError(f"--grid {key}: a value is listed twice ({quote(body, 80)})")
    return Axis(key, values)


def parse_axes(texts: Iterable[str]) -> list[Axis]:
    """Parse every ``--grid`` option; a key given twice is an error."""
    axes: list[Axis] = []
    for text in texts:
        axis = parse_axis(text)
        if any(a.key == axis.key for a in axes):
            raise InputError(f"--grid {axis.key}: given twice; list all its values in one --grid")
        axes.append(axis)
    return axes


def read_problems(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a problems CSV (a header of problem keys such as ``M,N,K,dtype``); empty cells are left out."""
    from gpusim.textfile import read_text_file

    file = Path(path)
    text = read_text_file(file, what="a problems CSV", max_bytes=MAX_PROBLEMS_BYTES)
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
        fields = reader.fieldnames
    except csv.Error as exc:
        raise InputError(f"--problems {file}: not a CSV file ({str(exc)[:120]})") from None
    if not fields or any(not (f or "").strip() for f in fields):
        raise InputError(f"--problems {file}: expected a header row of problem keys (M,N,K,dtype,...)")
    if len({f.strip() for f in fields}) != len(fields):
        raise InputError(f"--problems {file}: a column is named twice in the header")
    problems: list[dict[str, Any]] = []
    rows = enumerate(reader, start=2)
    while True:
        try:
            line, row = next(rows)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputError(f"--problems {file}: not a CSV file ({str(exc)[:120]})") from None
        if len(problems) >= MAX_POINTS:
            raise InputError(f"--problems {file}: more than {MAX_POINTS:,} problems; split the file")
        if None in row:
            raise InputError(f"{file}:{line}: more cells than header columns")
        values = {
            k.strip(): _scalar(v, f"{file}:{line}: {k.strip()}") for k, v in row.items() if v and v.strip()
        }
        if values:
            problems.append(values)
    if not problems:
        raise InputError(f"--problems {file}: no rows")
    return problems


def enumerate_points(
    schedule: str,
    archs: Sequence[str],
    axes: Sequence[Axis],
    fixed: dict[str, Any] | None = None,
    problems: Sequence[dict[str, Any]] | None = None,
) -> list[Point]:
    """The product problems x archs x axes, in that nesting order (the last axis varies fastest).

    ``fixed`` (``--set``) applies to every point; a key both fixed and swept is an error.
    """
    fixed = dict(fixed or {})
    swept = {a.key for a in axes}
    both = sorted(swept & set(fixed))
    if both:
        raise InputError(f"--set {both[0]} and --grid {both[0]}: a key is either fixed or swept, not both")
    rows = list(problems) if problems else [{}]
    count = len(rows) * len(archs)
    for axis in axes:
        count *= len(axis.values)
        if count > MAX_POINTS:
            break
    if count > MAX_POINTS:
        sizes = " x ".join([str(len(rows)), str(len(archs)), *(str(len(a.values)) for a in axes)])
        raise InputError(f"the sweep has more than {MAX_POINTS:,} points ({sizes}); narrow the --grid axes "
                         "or split the sweep")  # fmt: skip
    for row in rows:
        clash = sorted((swept | set(fixed)) & set(row))
        if clash:
            raise InputError(f"--problems column {clash[0]} is also given by --set or --grid")
    points: list[Point] = []
    for problem in rows:
        for arch in archs:
            for values in itertools.product(*(a.values for a in axes)):
                params = {**problem, **fixed, **dict(zip((a.key for a in axes), values, strict=True))}
                points.append(Point(len(points), schedule, arch, tuple(params.items())))
    return points
