"""Rank checks: does gpusim order measured ablations (same kernel, different tiles, stages, clusters or
overlap switches) the way the measurements do, and how good is its top pick?

Rows are grouped by the optional ``ablation`` column of a measurement file; without it, rows of the same
source, arch, dtype and problem form a group. Per group: pairwise order agreement (a predicted tie within
0.5% counts as wrong; pairs measured equal are left out) and the top pick's share of the best measured
throughput (the measured throughput of the configuration gpusim predicts fastest, over the best measured).
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusim.calibrate.convention import measured_time_us
from gpusim.calibrate.measurements import Measurement, read_measurements
from gpusim.errors import InputError
from gpusim.explore.adapter import Costs
from gpusim.explore.executors import Executor
from gpusim.explore.grid import Point
from gpusim.explore.sweep import run_sweep

TIE_FRACTION = 0.005
"""Predicted times closer than this (relative) are a tie, and a tie counts as a wrong order."""


@dataclass
class AblationRow:
    """One measured configuration of an ablation and its prediction (or why there is none)."""

    m: Measurement
    group: str
    measured_us: float | None = None
    predicted_us: float | None = None
    skipped: str | None = None

    @property
    def label(self) -> str:
        """The configuration: schedule and its parameters."""
        params = ";".join(f"{k}={v}" for k, v in self.m.params.items())
        return f"{self.m.schedule}({params})"


@dataclass
class AblationResult:
    """The figures of one ablation group."""

    group: str
    arch: str
    rows: list[AblationRow]
    pairs: int = 0
    agree: int = 0
    ties: int = 0
    top_pick_share: float | None = None
    top_pick: str | None = None
    best_measured: str | None = None
    pair_details: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "group": self.group, "arch": self.arch, "pairs": self.pairs, "agree": self.agree, "ties": self.ties,
            "top_pick": self.top_pick, "best_measured": self.best_measured, "top_pick_share": self.top_pick_share,
            "rows": [{"line": r.m.line, "config": r.label, "measured_us": r.measured_us,
                      "predicted_us": r.predicted_us, "skipped": r.skipped} for r in self.rows],
            "pair_details": self.pair_details,
        }  # fmt: skip


def _groups_column(path: Path) -> dict[int, str]:
    """The ``ablation`` cell of each line (read after read_measurements accepted the file)."""
    import io

    from gpusim.calibrate.measurements import MAX_CSV_BYTES
    from gpusim.textfile import read_text_file

    text = read_text_file(path, what="a measurement CSV file", max_bytes=MAX_CSV_BYTES)
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
        if "ablation" not in (reader.fieldnames or []):
            return {}
        return {line: (row.get("ablation") or "").strip() for line, row in enumerate(reader, start=2)}
    except csv.Error:
        return {}  # the rows themselves are reported malformed by read_measurements


def _default_group(m: Measurement) -> str:
    dims = ",".join(f"{k}={v}" for k, v in sorted(m.dims.items()))
    return f"{m.arch} {m.dtype} {dims} [{m.source[:40]}]"


def read_ablations(paths: Sequence[str | Path]) -> list[AblationRow]:
    """Every measured row with its ablation group."""
    rows: list[AblationRow] = []
    for path in map(Path, paths):
        measured = read_measurements([path], start=len(rows))
        named = _groups_column(path) if path.is_file() else {}
        for m in measured:
            rows.append(AblationRow(m, named.get(m.line) or _default_group(m)))
    return rows


def _schedule_keys(schedule: str) -> set[str]:
    from gpusim.schedule.load import read_spec

    spec = read_spec(schedule)
    return {*spec.problem, *spec.params, *(getattr(spec, "aliases", None) or {})}


def _point(row: AblationRow, index: int) -> Point | str:
    """The point that predicts a row, or why it cannot be predicted."""
    m = row.m
    if m.error:
        return m.error
    if "unmapped" in m.params:
        return f"unmapped: {m.params['unmapped']}"
    if not m.schedule or "+" in m.schedule or m.schedule.startswith("auto"):
        return f"schedule '{m.schedule}': rank-check predicts one named schedule per row"
    try:
        keys = _schedule_keys(m.schedule)
    except InputError as exc:
        return str(exc)
    unknown = sorted(set(m.params) - keys)
    if unknown:
        return f"params {unknown[0]}: {m.schedule} has no such parameter"
    values: dict[str, Any] = {k: v for k, v in m.dims.items() if k in keys}
    if m.dtype and "dtype" in keys:
        values["dtype"] = m.dtype
    values.update(m.params)
    return Point(index, m.schedule, m.arch, tuple(values.items()))


def _score(group: str, rows: list[AblationRow]) -> AblationResult:
    usable = [r for r in rows if r.predicted_us is not None and r.measured_us is not None]
    result = AblationResult(group, rows[0].m.arch, rows)
    for a, b in itertools.combinations(usable, 2):
        measured = a.measured_us - b.measured_us  # type: ignore[operator]
        if measured == 0:
            continue
        predicted = a.predicted_us - b.predicted_us  # type: ignore[operator]
        tie = abs(predicted) <= TIE_FRACTION * min(a.predicted_us, b.predicted_us)  # type: ignore[type-var]
        right = not tie and predicted * measured > 0
        result.pairs += 1
        result.agree += right
        result.ties += tie
        result.pair_details.append({"a": a.label, "b": b.label, "measured_faster": a.label if measured < 0 else b.label,
                                    "predicted_ratio": round(a.predicted_us / b.predicted_us, 4),  # type: ignore[operator]
                                    "right": right, "tie": tie})  # fmt: skip
    if len(usable) >= 2:
        pick = min(usable, key=lambda r: r.predicted_us)  # type: ignore[arg-type,return-value]
        best = min(usable, key=lambda r: r.measured_us)  # type: ignore[arg-type,return-value]
        result.top_pick, result.best_measured = pick.label, best.label
        result.top_pick_share = best.measured_us / pick.measured_us  # type: ignore[operator]
    return result


def rank_check(paths: Sequence[str | Path], costs: Costs, executor: Executor) -> list[AblationResult]:
    """Predict every row of the files and score each ablation group with at least two configurations."""
    rows = read_ablations(paths)
    points: list[Point] = []
    by_point: dict[int, AblationRow] = {}
    for row in rows:
        try:
            row.measured_us = measured_time_us(row.m)
        except (ValueError, KeyError) as exc:
            row.skipped = f"measured value: {exc}"
            continue
        point = _point(row, len(points))
        if isinstance(point, str):
            row.skipped = point
            continue
        by_point[point.index] = row
        points.append(point)
    for result_row in run_sweep(points, costs, executor).rows:
        row = by_point[result_row["point"]]
        if result_row["status"] == "ok":
            row.predicted_us = result_row["time_us"]
        else:
            row.skipped = f"{result_row['status']}: {result_row['reason']}"
    groups: dict[str, list[AblationRow]] = {}
    for row in rows:
        groups.setdefault(row.group, []).append(row)
    return [_score(g, members) for g, members in groups.items() if len(members) >= 2]


def score_predicted(rows: Sequence[tuple[Measurement, float | None, float | None]]) -> list[AblationResult]:
    """Score the ablation groups (files with an ``ablation`` column) among rows already predicted
    elsewhere (``gpusim validate``): each row as (measurement, measured us, predicted us)."""
    named: dict[str, dict[int, str]] = {}
    groups: dict[str, list[AblationRow]] = {}
    for m, measured_us, predicted_us in rows:
        if m.file not in named:
            path = Path(m.file)
            named[m.file] = _groups_column(path) if path.is_file() else {}
        group = named[m.file].get(m.line)
        if group:
            groups.setdefault(group, []).append(AblationRow(m, group, measured_us, predicted_us))
    return [_score(g, members) for g, members in groups.items() if len(members) >= 2]


def summary(results: Sequence[AblationResult]) -> dict[str, Any]:
    """Totals over the groups: pairs right, ties, groups fully right, top-pick shares."""
    shares = [r.top_pick_share for r in results if r.top_pick_share is not None]
    scored = [r for r in results if r.pairs]
    return {
        "groups": len(results),
        "groups_scored": len(scored),
        "pairs": sum(r.pairs for r in results),
        "pairs_right": sum(r.agree for r in results),
        "ties": sum(r.ties for r in results),
        "groups_all_pairs_right": sum(1 for r in scored if r.agree == r.pairs),
        "mean_top_pick_share": sum(shares) / len(shares) if shares else None,
        "min_top_pick_share": min(shares) if shares else None,
    }


def markdown(results: Sequence[AblationResult], costs: str, files: Sequence[str]) -> str:
    """The generated rank-check section (docs/rank_check.md)."""
    total = summary(results)
    lines = [
        "<!-- generated by `gpusim rank-check " + " ".join(files) + " --markdown docs/rank_check.md`; do not edit -->",
        "# Rank check against measured ablations",
        "",
        f"Costs: {costs}. A predicted tie (within {TIE_FRACTION:.1%}) counts as a wrong order. "
        "Top-pick share: measured throughput of the configuration gpusim predicts fastest, over the best measured.",
        "",
        f"**{total['pairs_right']} of {total['pairs']} pairs ordered right** ({total['ties']} predicted ties); "
        f"{total['groups_all_pairs_right']} of {total['groups_scored']} ablations fully right; "
        + (f"top-pick share mean {total['mean_top_pick_share']:.1%}, min {total['min_top_pick_share']:.1%}."
           if total["mean_top_pick_share"] is not None else "no top pick."),
        "",
        "| ablation | arch | pairs right | top pick | best measured | top-pick share |",
        "|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in results:
        share = "" if r.top_pick_share is None else f"{r.top_pick_share:.1%}"
        lines.append(f"| {r.group} | {r.arch} | {r.agree}/{r.pairs}" + (f" ({r.ties} tie)" if r.ties else "")
                     + f" | {r.top_pick or ''} | {r.best_measured or ''} | {share} |")  # fmt: skip
    skipped = [(r.group, row) for r in results for row in r.rows if row.skipped]
    if skipped:
        lines += ["", "Rows not predicted:", ""]
        lines += [f"- {g}: {row.label}: {row.skipped}" for g, row in skipped]
    return "\n".join(lines) + "\n"
