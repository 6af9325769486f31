"""``gpusim validate``: predict every measured row and report errors per arch and schedule family."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gpusim.api import load_arch
from gpusim.arch import Arch, resolve_arch_id
from gpusim.calibrate.carryover import Carryover
from gpusim.calibrate.convention import family_of, measured_time_us
from gpusim.calibrate.measurements import Measurement, read_measurements
from gpusim.calibrate.predictor import Predictor, Skip, ignored_columns, problem_for
from gpusim.calibrate.stats import error_pct, error_stats
from gpusim.errors import GpusimError, InputError, UnknownNameError, checked_call, quote
from gpusim.mechanisms import with_model
from gpusim.sim.limits import DEFAULT_MAX_EVENTS

Costs = Literal["datasheet", "calibrated"]


@dataclass
class RowResult:
    """The outcome for one measured row."""

    m: Measurement
    arch: str
    family: str
    measured_time_us: float | None
    predicted_time_us: float | None
    skipped: str | None
    costs: str | None = None
    pins: tuple[Any, ...] | None = None

    @property
    def error_pct(self) -> float | None:
        if self.predicted_time_us is None or self.measured_time_us is None:
            return None
        return error_pct(self.predicted_time_us, self.measured_time_us)

    def as_dict(self) -> dict[str, Any]:
        """JSON form (``row`` is the global 0-based data-row index)."""
        err = self.error_pct
        return {
            "row": self.m.index,
            "file": self.m.file,
            "line": self.m.line,
            "source": self.m.source,
            "arch": self.arch,
            "schedule": self.m.schedule,
            "family": self.family,
            "metric": self.m.metric,
            "measured_time_us": _r(self.measured_time_us),
            "predicted_time_us": _r(self.predicted_time_us),
            "error_pct": None if err is None else round(err, 2),
            "costs": self.costs,
            "skipped": self.skipped,
            "ignored_columns": ignored_columns(self.m),
        }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def arch_for(name: str, costs: Costs, cache: dict[str, Arch | str], model: str | None = None) -> Arch:
    """The arch a row names, with shipped calibrated costs when ``costs`` is calibrated (and the
    mechanisms ``model`` switches, ``gpusim.mechanisms``)."""
    key = f"{name}|{costs}|{model}"
    hit = cache.get(key)
    if isinstance(hit, str):
        raise Skip(hit)
    if hit is not None:
        return hit
    try:
        arch = with_model(load_arch(resolve_arch_id(name), costs=costs), model)
    except UnknownNameError:
        cache[key] = f"unknown arch '{name}'"
        raise Skip(cache[key]) from None
    cache[key] = arch
    return arch


def precheck(m: Measurement) -> str | None:
    """Why a row cannot be predicted before any simulation, or None."""
    if m.error:
        return f"malformed: {m.error}"
    if "unmapped" in m.params:
        return f"unmapped: {m.params['unmapped']}"
    if not m.schedule:
        return "no schedule given"
    if "duplicate" in m.params:
        return f"duplicate of the {m.params['duplicate']}"
    return None


def validate_rows(rows: list[Measurement], *, costs: Costs = "calibrated", arch_filter: str | None = None,
                  predictor: Predictor | None = None, arch_override: Arch | None = None,
                  on_progress: Callable[[int, int], None] | None = None,
                  model: str | None = None,
                  on_result: Callable[[RowResult], None] | None = None) -> list[RowResult]:  # fmt: skip
    """Predict each row (``arch_override``: use this Arch for every row of its id;
    ``on_progress(done, total)`` before each row, ``on_result(result)`` after it)."""
    predictor = predictor or Predictor()
    arch_cache: dict[str, Arch | str] = {}
    wanted = resolve_arch_id(arch_filter) if arch_filter else None
    results: list[RowResult] = []
    for done, m in enumerate(rows):
        if on_progress is not None:
            on_progress(done, len(rows))
        fam = family_of(m.schedule)
        res = RowResult(m, m.arch, fam, None, None, None)
        results.append(res)
        reason = precheck(m)
        try:
            if reason is not None:
                raise Skip(reason)
            try:
                res.measured_time_us = measured_time_us(m)
            except (ValueError, KeyError) as exc:
                missing = f"column {exc} is empty" if isinstance(exc, KeyError) else str(exc)
                raise Skip(f"measured value not usable: {missing}") from None
            arch = arch_for(m.arch, costs, arch_cache, model)
            res.arch = arch.id
            if wanted is not None and arch.id != wanted:
                raise Skip(f"arch {arch.id} not selected (--arch {wanted})")
            if arch_override is not None and arch_override.id == arch.id:
                arch = arch_override
            res.costs = arch.calibration.origin
            res.predicted_time_us, res.pins = predictor.row(m, arch)
        except Skip as exc:
            res.skipped = str(exc)
            res.predicted_time_us = None
        if on_result is not None:
            on_result(res)
    return results


@checked_call
def validate(rows: list[Measurement], *, costs: Costs = "calibrated") -> list[RowResult]:
    """Predict measured rows (``gpusim.read_measurements``) in this process: one result per row with
    measured and predicted time, error and family, or why it was skipped (``gpusim validate`` in Python)."""
    if not isinstance(costs, str) or costs not in ("calibrated", "datasheet"):
        raise InputError(f"costs '{quote(costs)}': expected 'calibrated' or 'datasheet'")
    if isinstance(rows, str | bytes | Path) or not isinstance(rows, list | tuple):
        raise InputError(f"validate: expected the rows gpusim.read_measurements(path) returns, got "
                         f"{type(rows).__name__}")  # fmt: skip
    bad = next((i for i, r in enumerate(rows) if not isinstance(r, Measurement)), None)
    if bad is not None:
        raise InputError(f"validate: rows[{bad}]: expected a Measurement (gpusim.read_measurements), got "
                         f"{type(rows[bad]).__name__}")  # fmt: skip
    return validate_rows(list(rows), costs=costs)


def summarize_results(results: list[RowResult]) -> dict[str, Any]:
    """Per arch and family, per family, and overall: rows, skipped (with reasons), error statistics."""
    groups: dict[tuple[str, str], list[RowResult]] = defaultdict(list)
    for r in results:
        groups[(r.arch, r.family)].append(r)
    by_arch_family = []
    for (arch, fam), rs in sorted(groups.items()):
        errs = [r.error_pct for r in rs if r.error_pct is not None]
        reasons = Counter(_reason_key(r.skipped) for r in rs if r.skipped)
        by_arch_family.append({"arch": arch, "family": fam, "rows": len(rs), "predicted": len(errs),
                               "skipped": len(rs) - len(errs), "skip_reasons": dict(reasons.most_common()),
                               **error_stats(errs)})  # fmt: skip
    fam_groups: dict[str, list[float]] = defaultdict(list)
    for r in results:
        if r.error_pct is not None:
            fam_groups[r.family].append(r.error_pct)
    all_errs = [e for v in fam_groups.values() for e in v]
    return {
        "rows": len(results),
        "predicted": len(all_errs),
        "skipped": len(results) - len(all_errs),
        "by_arch_family": by_arch_family,
        "by_family": {f: error_stats(v) for f, v in sorted(fam_groups.items())},
        "overall": error_stats(all_errs),
    }


def _reason_key(reason: str | None) -> str:
    """Skip reasons grouped: malformed rows keep their own text; others lose row-specific detail, and the
    built-in files' directory (so the same reason reads the same from any checkout, before it is cut)."""
    from gpusim.calibrate.accuracy import portable_reason

    text = reason or ""
    if text.startswith("malformed"):
        return text
    text = portable_reason(text)
    return text if len(text) <= 160 else text[:157] + "..."


def _worker(args: tuple[list[Measurement], Costs, str | None, float | None, str | None],
            ) -> tuple[list[RowResult], int]:  # fmt: skip
    rows, costs, arch_filter, max_events, model = args
    predictor = Predictor(max_events)
    return validate_rows(
        rows, costs=costs, arch_filter=arch_filter, predictor=predictor, model=model
    ), predictor.simulations


def _prediction_keys(m: Measurement, arch_ids: dict[str, str | None]) -> list[tuple[Any, ...]]:
    """The predictions a row may run, named as the Predictor caches them (arch, schedule, problem): rows
    that share one go to the same task, so each distinct prediction runs once, in one process, whatever
    the scheduling (``predictions_run`` is then the serial run's). A row whose parts cannot be named
    (unknown arch, a bad schedule cell) gets only the keys named so far: it is skipped before those
    that follow are predicted."""
    if m.arch not in arch_ids:
        try:
            arch_ids[m.arch] = resolve_arch_id(m.arch)
        except GpusimError:
            arch_ids[m.arch] = None
    arch_id = arch_ids[m.arch]
    if arch_id is None:
        return []
    names = [s.strip() for s in m.schedule.split("+")]
    keys: list[tuple[Any, ...]] = []
    for i, name in enumerate(names):
        siblings = tuple(other for j, other in enumerate(names) if j != i) if len(names) > 1 else ()
        try:
            problem = problem_for(name, m, siblings)
        except (Skip, GpusimError):
            break
        keys.append((arch_id, name, tuple(sorted(problem.items()))))
    return keys


def _expected_cost(m: Measurement) -> float:
    """A rough, machine-independent guess of how long a row takes to predict, only to start the longest
    tasks first (it never changes a result): the measured kernel time, times the ~15 candidates an
    ``auto:`` search simulates, times 4 for causal attention (its SM groups do different work, so the
    fast-forward finds few periods)."""
    try:
        cost = measured_time_us(m)
    except (ValueError, KeyError):
        return 0.0
    if "auto" in m.schedule:
        cost *= 15.0
    if m.dims.get("causal"):
        cost *= 4.0
    return cost


def _tasks(rows: list[Measurement]) -> list[list[Measurement]]:
    """Rows grouped into tasks (rows that share a prediction together, in row order), longest
    expected first (ties in row order), so the last task to finish is a short one."""
    parent = list(range(len(rows)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[tuple[Any, ...], int] = {}
    arch_ids: dict[str, str | None] = {}
    for i, m in enumerate(rows):
        for key in _prediction_keys(m, arch_ids):
            j = owner.setdefault(key, i)
            a, b = find(i), find(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[int, list[Measurement]] = defaultdict(list)
    for i, m in enumerate(rows):
        groups[find(i)].append(m)
    cost = {root: sum(_expected_cost(m) for m in group) for root, group in groups.items()}
    return [groups[root] for root in sorted(groups, key=lambda root: (-cost[root], root))]


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def map_in_processes(fn: Any, tasks: list[Any], jobs: int) -> Iterator[Any]:
    """``fn(t)`` for each of ``tasks`` in ``jobs`` spawned processes (never more than the CPUs, nor the
    tasks: each worker holds a simulation's memory), yielded as they finish. Workers ignore Ctrl-C (the
    parent stops them at once and reports one line); a worker's gpusim error reaches the caller
    unchanged."""
    context = multiprocessing.get_context("spawn")
    # The workers start with Ctrl-C ignored: an ignored signal stays ignored across exec, and Python
    # keeps it so, so a Ctrl-C while a worker is still importing gpusim prints nothing there. The
    # parent blocks it meanwhile; one pressed in those milliseconds is dropped (press again).
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    previous_handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        processes = max(1, min(jobs, len(tasks), os.cpu_count() or 1))
        pool = context.Pool(processes=processes, initializer=_ignore_interrupts)
    finally:
        signal.signal(signal.SIGINT, previous_handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)
    try:
        results = pool.imap_unordered(fn, tasks)
        for _ in tasks:
            while True:
                try:
                    out = results.next(timeout=0.1)  # short waits keep the parent responsive to Ctrl-C
                    break
                except multiprocessing.TimeoutError:
                    continue
            yield out
    except BaseException:
        pool.terminate()
        pool.join()
        raise
    pool.close()
    pool.join()


LIMIT_PHRASES = ("work limit", "gpusim simulates at most", "larger than gpusim simulates")
"""Skip reasons that name a limit of gpusim's code (its work limit, the launch and problem sizes it plans),
not of the row's inputs: such a row is predicted again, since the inputs digest does not cover the code."""


def run_validate(paths: list[str | Path], *, costs: Costs = "calibrated", arch_filter: str | None = None,
                 jobs: int | None = None,
                 max_events: int | None = DEFAULT_MAX_EVENTS,
                 on_progress: Callable[[int, int], None] = lambda done, total: None,
                 model: str | None = None,
                 carry: Carryover | None = None,
                 only: set[int] | None = None,
                 on_results: Callable[[list[RowResult]], None] | None = None,
                 ) -> tuple[list[RowResult], dict[str, Any]]:  # fmt: skip
    """Read, predict and summarise; the summary carries the wall time and simulation count.

    Rows are predicted in ``jobs`` processes (default: the CPU count), one task at a time to whichever
    process is free, longest expected first; rows that share a prediction form one task, so each
    distinct prediction runs once. Results are in row order, identical to a serial run's.
    ``carry`` (:mod:`gpusim.calibrate.carryover`) records each row's inputs digest and supplies the
    earlier results of rows whose digest is unchanged; those rows are not predicted again (a row skipped
    for the work limit is, unless ``carry.reuse_over_limit``: the digest does not cover gpusim's code,
    which may have become faster).
    ``only``: predict just the rows with these indices (the others are left out of the results).
    ``on_results(results)``: called with the rows predicted, as they finish (a journal that lets an
    interrupted run resume, :class:`gpusim.calibrate.carryover.Journal`).
    """
    t0 = time.perf_counter()
    if jobs is not None and jobs < 0:
        raise InputError(f"--jobs {jobs}: expected 0 (the CPU count) or more")
    if max_events is not None and max_events < 1:
        raise InputError(f"--max-events {max_events}: expected a whole number of events >= 1")
    if arch_filter:
        resolve_arch_id(arch_filter)  # an unknown --arch is one error before any work, not one per worker
    all_rows = read_measurements(list(paths))
    if only is not None:
        all_rows = [m for m in all_rows if m.index in only]
    carried: list[RowResult] = []
    rows = all_rows
    if carry is not None:
        carry.digest_rows(all_rows)
        rows = []
        for m in all_rows:
            record = carry.reusable(m)
            # rows refused before predicting are cheap, and their reasons name the row's global index
            over_limit = (
                record is not None
                and any(phrase in (record.skipped or "") for phrase in LIMIT_PHRASES)
                and not carry.reuse_over_limit
            )
            if record is None or record.measured_time_us is None or over_limit or precheck(m) is not None:
                rows.append(m)
                continue
            carried.append(RowResult(m, record.arch, record.family, record.measured_time_us,
                                     record.predicted_time_us, record.skipped, record.costs))  # fmt: skip
            carry.carried[m.index] = record.predicted_on
    jobs = jobs or os.cpu_count() or 1
    needs = [m for m in rows if precheck(m) is None]
    if jobs > 1 and len(needs) > 8:
        # rows refused before any simulation are reported here; the rest go out one task at a time to
        # whichever process is free, and come back sorted into row order: the output is the serial one
        results = validate_rows([m for m in rows if precheck(m) is not None], costs=costs,
                                arch_filter=arch_filter)  # fmt: skip
        tasks = _tasks(needs)
        simulations = 0
        on_progress(len(results), len(rows))
        for out, count in map_in_processes(
            _worker, [(t, costs, arch_filter, max_events, model) for t in tasks], jobs
        ):
            results.extend(out)
            if on_results is not None:
                on_results(out)
            simulations += count
            on_progress(len(results), len(rows))
        results.sort(key=lambda r: r.m.index)
    else:
        predictor = Predictor(max_events)
        results = validate_rows(rows, costs=costs, arch_filter=arch_filter, predictor=predictor,
                                on_progress=on_progress, model=model,
                                on_result=None if on_results is None else lambda r: on_results([r]))  # fmt: skip
        simulations = predictor.simulations
    if carried:
        results = sorted(results + carried, key=lambda r: r.m.index)
    summary = summarize_results(results)
    summary["costs"] = costs
    if model is not None:
        summary["model"] = model
    summary["files"] = [str(p) for p in paths]
    summary["wall_s"] = round(time.perf_counter() - t0, 2)
    summary["predictions_run"] = simulations
    summary["jobs"] = jobs
    summary["max_events"] = max_events
    if carry is not None:
        summary["carried_over"] = len(carried)
        summary["carried_from"] = sorted(set(carry.carried.values()))
    return results, summary
