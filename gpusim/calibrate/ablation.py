"""What each switchable mechanism contributes on the measured rows (``gpusim validate ... --ablate``).

For every mechanism of :data:`gpusim.mechanisms.MECHANISMS`, the rows whose arch has it in effect (on
under the run's costs and model, and not a no-op there) and that the run predicted are predicted again with that one mechanism
switched off, everything else unchanged: the same calibration overlays, not refitted, so a row's
change is what the mechanism contributes at the fitted parameters, not what a refit without it would
reach. The variants' row results are stored beside the report (``<report>_ablation_rows.csv``, the
format of ``<report>_rows.csv``; each row's digest covers its variant's model), so
``--reuse-unchanged`` carries them over as it does the main rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusim.arch import Arch
from gpusim.calibrate.accuracy import _f
from gpusim.calibrate.carryover import Carryover, Journal, RowRecord
from gpusim.calibrate.stats import error_stats
from gpusim.calibrate.validate import RowResult, arch_for, run_validate
from gpusim.errors import GpusimError
from gpusim.mechanisms import MECHANISMS, in_effect

MOVED_FRACTION = 0.005
"""A row whose prediction moves by more than this fraction counts as moved by the mechanism."""
BETTER_POINTS = 0.5
"""A row is better (worse) without the mechanism when its absolute error drops (rises) by more than
this many percentage points."""


def ablation_rows_file_for(markdown: str | Path) -> Path:
    """Where the variants' row results of the report at ``markdown`` live (``docs/accuracy.md`` ->
    ``docs/accuracy_ablation_rows.csv``)."""
    path = Path(markdown)
    return path.with_name(f"{path.stem}_ablation_rows.csv")


def variant_model(model: str | None, mechanism: str) -> str:
    """The model text of the run's model with ``mechanism`` switched off (an item of the run's model that
    names the mechanism is dropped: a mechanism is named once)."""
    kept = [
        item for item in (model or "").replace(" ", ",").split(",") if item and item.lstrip("+-") != mechanism
    ]
    return ",".join([*kept, f"-{mechanism}"])


@dataclass
class Ablation:
    """One mechanism switched off: its variant's results on the rows whose arch has it on."""

    mechanism: str
    results: list[RowResult]
    carry: Carryover


def rows_with(mechanism: str, results: list[RowResult], costs: str, model: str | None) -> set[int]:
    """Indices of the predicted rows whose arch, under ``costs`` and ``model``, has ``mechanism`` in effect
    (on, and not a no-op there: :func:`gpusim.mechanisms.in_effect`)."""
    cache: dict[str, Arch | str] = {}
    out: set[int] = set()
    for r in results:
        if r.predicted_time_us is None:
            continue
        try:
            arch = arch_for(r.m.arch, costs, cache, model)  # type: ignore[arg-type]
        except GpusimError:
            continue
        if in_effect(mechanism, arch) and _schedule_can_feel(mechanism, r.m.schedule):
            out.add(r.m.index)
    return out


def _schedule_can_feel(mechanism: str, schedule: str) -> bool:
    """Whether the row's schedule (``a+b``: any part) can be changed by ``mechanism``: ``mma_sync_warps``
    and ``mma_sync_issuing`` only by a schedule that issues mma.sync (an ``auto:`` search may pick one),
    ``grid_dispatch`` only by a non-persistent one. ``auto:gemm`` is not ablated for ``grid_dispatch``: its candidates' units loop
    alike except in uneven split-K (one k-tile of difference), where dispatch and round robin agree (equal
    to the last digit in one-wave splits: gemm_cp_async 128x4096x4096 on h200 and 256x1024x5000 on a100,
    gemm_sync 128x1760x7000 on v100), and ablating its 331 rows would cost as much as predicting them."""
    if mechanism not in ("mma_sync_warps", "mma_sync_issuing", "grid_dispatch"):
        return True
    from gpusim.sim.mma_sync_rate import schedule_issues_mma_sync

    parts = [s.strip() for s in schedule.split("+") if s.strip()]
    if mechanism == "grid_dispatch":
        return any(not part.startswith("auto:gemm") and _may_be_non_persistent(part) for part in parts)
    return any(part.startswith("auto:") or schedule_issues_mma_sync(part) for part in parts)


def _may_be_non_persistent(name_or_path: str) -> bool:
    """Whether the schedule file launches one CTA per unit (True when it cannot be read)."""
    from gpusim.errors import GpusimError
    from gpusim.schedule.load import read_spec

    try:
        return not read_spec(name_or_path).launch.persistent
    except (GpusimError, OSError, AttributeError):
        return True


def run_ablations(files: list[str], results: list[RowResult], *, costs: str, model: str | None,
                  arch_filter: str | None, jobs: int | None, max_events: int | None,
                  previous: dict[tuple[str, int, str], RowRecord],
                  on_progress: Callable[[str, int, int], None] = lambda name, done, total: None,
                  journal: Journal | None = None,
                  ) -> list[Ablation]:  # fmt: skip
    """Every mechanism switched off, in turn, on the rows whose arch has it on (``previous``: stored
    variant results to carry over where a row's digest is unchanged; ``journal``: where each variant
    result is appended as it is predicted)."""
    out = []
    for mechanism in sorted(MECHANISMS):
        selected = rows_with(mechanism, results, costs, model)
        variant = variant_model(model, mechanism)
        carry = Carryover(costs, variant, max_events, arch_filter, previous=previous)
        if not selected:
            out.append(Ablation(mechanism, [], carry))
            continue
        rows, _summary = run_validate(files, costs=costs, arch_filter=arch_filter, jobs=jobs, max_events=max_events,
                                      on_progress=lambda done, total, m=mechanism: on_progress(m, done, total),
                                      model=variant, carry=carry, only=selected,
                                      on_results=None if journal is None else journal.recorder(carry))  # fmt: skip
        out.append(Ablation(mechanism, rows, carry))
    return out


def _pair_stats(pairs: list[tuple[RowResult, RowResult]]) -> dict[str, Any]:
    on = [abs(a.error_pct) for a, _ in pairs]  # type: ignore[arg-type]
    off = [abs(b.error_pct) for _, b in pairs]  # type: ignore[arg-type]
    moved = sum(
        1
        for a, b in pairs
        if abs(b.predicted_time_us / a.predicted_time_us - 1) > MOVED_FRACTION  # type: ignore[operator]
    )
    better = sum(1 for x, y in zip(on, off, strict=True) if y < x - BETTER_POINTS)
    worse = sum(1 for x, y in zip(on, off, strict=True) if y > x + BETTER_POINTS)
    return {"n": len(pairs), "on": error_stats(on), "off": error_stats(off), "moved": moved, "better": better,
            "worse": worse}  # fmt: skip


def ablation_lines(results: list[RowResult], ablations: list[Ablation]) -> list[str]:
    """The report's section: per mechanism and family, the errors with and without it on the same rows."""
    by_index = {r.m.index: r for r in results}
    lines = ["", "## Mechanism ablation", "",
             "Each switchable mechanism (`gpusim/mechanisms.py`, `--model -NAME`) switched off on the rows whose "
             "arch has it on, everything else as above: the same calibration overlays, not refitted, so this is "
             "what a mechanism contributes at the fitted parameters. Rows: predicted both with and without it "
             f"(the variant under the same work limit). Moved: prediction changed by more than {MOVED_FRACTION:.1%}; "
             f"better / worse without: absolute error lower / higher by more than {BETTER_POINTS} points. Switching "
             "`shared_tensor` off also switches `pipe_coupling` off (coupling needs the shared core). Every "
             "variant row is in [accuracy_ablation_rows.csv](accuracy_ablation_rows.csv).", "",
             "| mechanism | family | rows | with: median / p90 abs % | without: median / p90 abs % | moved | "
             "better / worse without |", "|---|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for ab in ablations:
        pairs_by_family: dict[str, list[tuple[RowResult, RowResult]]] = {}
        for v in ab.results:
            base = by_index.get(v.m.index)
            if base is None or base.error_pct is None or v.error_pct is None:
                continue
            pairs_by_family.setdefault(base.family, []).append((base, v))
        skipped = sum(1 for v in ab.results if v.error_pct is None)
        if not ab.results:
            lines.append(f"| {ab.mechanism} | - | 0 | in effect on no predicted row (off, or a no-op at every "
                         "arch's parameters) | | | |")  # fmt: skip
            continue
        groups = sorted(pairs_by_family.items())
        if len(groups) > 1:
            groups.append(("all", [p for _, ps in groups for p in ps]))
        for i, (family, pairs) in enumerate(groups):
            s = _pair_stats(pairs)
            label = ab.mechanism if i == 0 else ""
            name = f"**{family}**" if family == "all" else family
            lines.append(f"| {label} | {name} | {s['n']} | {_f(s['on']['median_abs_pct'])} / "
                         f"{_f(s['on']['p90_abs_pct'])} | {_f(s['off']['median_abs_pct'])} / "
                         f"{_f(s['off']['p90_abs_pct'])} | {s['moved']} | {s['better']} / {s['worse']} |")  # fmt: skip
        if skipped:
            lines.append(f"| {ab.mechanism} | not predicted without it | {skipped} | | | | |")
    return lines
