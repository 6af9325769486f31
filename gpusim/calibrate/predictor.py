"""Predict the time of one measured row: auto:gemm search or a named schedule, ``a+b`` sums, cached."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from gpusim.arch import Arch
from gpusim.calibrate.measurements import Measurement
from gpusim.calibrate.store import PredictionStore, prediction_key
from gpusim.errors import (
    DeadlockError,
    GpusimError,
    LimitExceeded,
    ScheduleRefused,
    SimulationLimitExceeded,
    UnknownNameError,
    overrides_from,
    quote,
)
from gpusim.sim.limits import DEFAULT_MAX_EVENTS
from gpusim.sim.power import ClockSensitivity, ClockStart


class Skip(Exception):
    """The row cannot be predicted; the message says why."""


@dataclass(frozen=True)
class PartPrediction:
    """One schedule of a row: its time and, for auto, the chosen schedule and parameters."""

    schedule: str
    time_us: float
    chosen: tuple[str, tuple[tuple[str, Any], ...]] | None = None
    clock_mhz: float | None = None
    """The clock the prediction ran at (the power model's answer where it is on)."""
    sensitivity: ClockSensitivity | None = None
    """Where the power model limited the clock: its local slopes there (gpusim.sim.power)."""
    events: int = 0
    """Events its simulation ran in detail (what predicting it again costs)."""

    def start(self) -> ClockStart | None:
        """Where a nearby model point's power fixed point may start (None: not power-limited)."""
        if self.sensitivity is None or self.clock_mhz is None:
            return None
        return ClockStart(self.clock_mhz, self.sensitivity.power_slope)


_PARAM_LIKE = re.compile(r"^[A-Z][A-Z0-9_]*$")
"""Upper-case keys in ``params`` are schedule parameters (BM, STAGES); lower-case ones may describe the run."""


def _symbols(schedule: str) -> tuple[set[str], dict[str, str]]:
    """(problem and param names, aliases) of a schedule; auto takes the GEMM problem keys."""
    from gpusim.api import problem_keys
    from gpusim.schedule.load import read_spec

    if schedule.startswith("auto"):
        return set(problem_keys(schedule)), {}
    spec = read_spec(schedule)
    return set(spec.problem) | set(spec.params), dict(spec.aliases)


@cache
def parameter_vocabulary() -> frozenset[str]:
    """Every problem and param name (and alias) of the built-in schedules."""
    from gpusim.schedule.load import builtin_schedule_names

    names: set[str] = set()
    for name in builtin_schedule_names():
        symbols, aliases = _symbols(name)
        names |= symbols | set(aliases)
    return frozenset(names)


def problem_for(schedule: str, m: Measurement, siblings: tuple[str, ...] = ()) -> dict[str, Any]:
    """The overrides a schedule takes from the row: problem columns, dtype and params.

    A ``params`` key that names a parameter (an upper-case key, or any built-in schedule's symbol) which
    this schedule does not have makes the row unpredictable: it is skipped naming the key and the closest
    known one, never predicted as the default tile. Aliases (DeepGEMM's BLOCK_M; a problem column such as
    the sparse MLA decode's ``seqlen_kv`` for ``topk``) map to their symbol.
    In a kernel sequence (``a+b+c``) a key is for the kernels that have it: only a key that none of the
    ``siblings`` (the other kernels of the row) has either skips the row."""
    keys, aliases = _symbols(schedule)
    values: dict[str, Any] = {}
    for key, value in m.dims.items():  # a column named by an alias is its symbol, unless that has a column
        name = aliases.get(key, key)
        values[key if name in m.dims and name != key else name] = value
    if "causal" in values:
        values["causal"] = int(values["causal"])
    if m.dtype:
        values["dtype"] = m.dtype
    for key, value in m.params.items():
        name = aliases.get(key, key)
        if name in keys:
            values[name] = value
        elif any(_knows(sibling, key) for sibling in siblings):
            continue
        elif _PARAM_LIKE.match(key) or key in parameter_vocabulary():
            close = difflib.get_close_matches(key, sorted(keys | set(aliases)), n=1, cutoff=0.0)
            hint = f"; the closest it has is '{close[0]}'" if close else ""
            raise Skip(f"{schedule} has no parameter '{key}' (params {key}={value}){hint}")
    return {k: v for k, v in values.items() if k in keys}


def _knows(schedule: str, key: str) -> bool:
    """Whether a schedule has the parameter (or alias) ``key``."""
    keys, aliases = _symbols(schedule)
    return aliases.get(key, key) in keys


def ignored_columns(m: Measurement) -> list[str]:
    """Problem columns (and dtype) of the row that its schedules do not use (they describe the measurement)."""
    used: set[str] = set()
    try:
        for name in (s.strip() for s in m.schedule.split("+") if s.strip()):
            symbols, aliases = _symbols(name)
            used |= symbols | set(aliases)
    except GpusimError:
        return []
    columns = [*m.dims, *(["dtype"] if m.dtype else [])]
    return [c for c in columns if c not in used]


def _cal_key(arch: Arch) -> tuple[Any, ...]:
    c = arch.calibration
    return (arch.id, c.sustained_clock_mhz, c.hbm_bandwidth_fraction, c.l2_bandwidth_fraction, c.latency_scale,
            c.launch_overhead_ns, c.tensor_issue_efficiency, c.cuda_core_issue_efficiency, c.energy_scale, c.tensor_cuda_overlap,
            tuple(arch.mechanisms or ()))  # fmt: skip


class Predictor:
    """Predictions of rows, cached by (arch costs, schedule, problem) within one run.

    ``max_events`` bounds the simulated work of one simulation (events simulated in detail, not
    seconds: the same rows are predicted on any machine); a row that needs more is skipped with that
    reason.
    """

    def __init__(self, max_events: int | None = DEFAULT_MAX_EVENTS, on_simulation: Any = None,
                 store: PredictionStore | None = None) -> None:  # fmt: skip
        self.cache: dict[tuple[Any, ...], PartPrediction | str] = {}
        self.simulations = 0
        self.max_events = max_events
        self.on_simulation = on_simulation
        """Called as ``on_simulation(count, 0)`` after each prediction run (progress bars)."""
        self.store = store
        """Results kept on disk across runs (``--cache``; gpusim.calibrate.store), or None."""

    def _stored_key(self, schedule: str, arch: Arch, problem: dict[str, Any], pinned: Any,
                    start: ClockStart | None) -> str | None:  # fmt: skip
        if self.store is None:
            return None
        return prediction_key(schedule, arch, problem, pinned, start, self.max_events)

    def _keep(self, key: tuple[Any, ...], stored_key: str | None, value: PartPrediction | str) -> None:
        self.cache[key] = value
        if stored_key is not None and self.store is not None:
            self.store.put(stored_key, value)

    def part(self, schedule: str, arch: Arch, problem: dict[str, Any],
             pinned: tuple[str, tuple[tuple[str, Any], ...]] | None = None,
             start: ClockStart | None = None) -> PartPrediction:  # fmt: skip
        """One schedule's prediction, within the work limit (``start``: where the power model's fixed
        point starts; used for a pinned or named schedule only)."""
        try:
            with overrides_from("row"):
                return self._part(schedule, arch, problem, pinned, start)
        except LimitExceeded as exc:
            key = (_cal_key(arch), schedule, tuple(sorted(problem.items())), pinned, start)
            if isinstance(exc, SimulationLimitExceeded):
                reason = (f"{schedule}: needs more than the work limit of {self.max_events or 0:,} simulated "
                          "events (raise --max-events)")  # fmt: skip
            else:  # a size past what gpusim plans (a launch's CTAs, a problem size): no flag raises it
                reason = quote(exc, 400)
            self._keep(key, self._stored_key(schedule, arch, problem, pinned, start), reason)
            raise Skip(reason) from None

    def _part(self, schedule: str, arch: Arch, problem: dict[str, Any],
              pinned: tuple[str, tuple[tuple[str, Any], ...]] | None = None,
              start: ClockStart | None = None) -> PartPrediction:  # fmt: skip
        """One schedule's prediction (``pinned``: simulate this auto choice instead of searching)."""
        from gpusim.api import predict

        key = (_cal_key(arch), schedule, tuple(sorted(problem.items())), pinned, start)
        hit = self.cache.get(key)
        if isinstance(hit, str):
            raise Skip(hit)
        if hit is not None:
            return hit
        stored_key = self._stored_key(schedule, arch, problem, pinned, start)
        if stored_key is not None and self.store is not None:
            kept = self.store.get(stored_key)
            if kept is not None:
                self.cache[key] = kept
                if isinstance(kept, str):
                    raise Skip(kept)
                return kept
        # the arch already carries the costs to use (datasheet, calibrated or a fit's trial point)
        costs = arch.calibration.origin
        try:
            if schedule.startswith("auto") and pinned is None:
                if schedule == "auto:attn":
                    raise Skip("auto:attn: no attention search exists yet")
                prediction = predict(
                    schedule, arch, costs=costs, attribute=False, max_events=self.max_events, **problem
                )
                choice = prediction.choice or {}
                chosen = (choice.get("schedule", ""), tuple(sorted((choice.get("params") or {}).items())))
                result = _part_prediction(schedule, prediction, chosen)
            else:
                name, params = (pinned[0], {**problem, **dict(pinned[1])}) if pinned else (schedule, problem)
                if start is None:
                    prediction = predict(
                        name, arch, costs=costs, attribute=False, max_events=self.max_events, **params
                    )
                else:
                    prediction = _predict_from(name, arch, params, self.max_events, start)
                result = _part_prediction(schedule, prediction, pinned)
            self.simulations += 1
            if self.on_simulation is not None:
                self.on_simulation(self.simulations, 0)
        except Skip as exc:
            self._keep(key, stored_key, str(exc))
            raise
        except UnknownNameError as exc:
            reason = str(exc)
            self._keep(key, stored_key, reason)
            raise Skip(reason) from None
        except LimitExceeded:
            raise
        except (ScheduleRefused, DeadlockError, GpusimError) as exc:
            reason = f"{schedule}: {exc}" if not str(exc).startswith(schedule) else str(exc)
            self._keep(key, stored_key, reason)
            raise Skip(reason) from None
        self._keep(key, stored_key, result)
        return result

    def row(self, m: Measurement, arch: Arch,
            pins: tuple[Any, ...] | None = None) -> tuple[float, tuple[Any, ...]]:  # fmt: skip
        """Predicted time (us) of a row (sum over ``a+b``) and the auto choices made (for pinning)."""
        parts = self.row_parts(m, arch, pins)
        return sum(part.time_us for part in parts), tuple(part.chosen for part in parts)

    def row_parts(self, m: Measurement, arch: Arch, pins: tuple[Any, ...] | None = None,
                  starts: tuple[ClockStart | None, ...] | None = None) -> list[PartPrediction]:  # fmt: skip
        """Every schedule's prediction of a row (``a+b``: two), in order; ``starts``: where each part's
        power fixed point starts (a calibration's nearby point)."""
        from gpusim.api import schedules

        parts: list[PartPrediction] = []
        names = [s.strip() for s in m.schedule.split("+")]
        for name in names:
            if not name.startswith("auto") and name not in schedules() and "/" not in name:
                raise Skip(f"unknown schedule '{quote(name, 80)}'")
        for i, name in enumerate(names):
            siblings = tuple(other for j, other in enumerate(names) if j != i) if len(names) > 1 else ()
            try:
                problem = problem_for(name, m, siblings)
            except GpusimError as exc:  # a schedule cell naming a file that is not a schedule
                raise Skip(quote(exc, 300)) from None
            part = self.part(name, arch, problem, pins[i] if pins else None, starts[i] if starts else None)
            parts.append(part)
        return parts


def _part_prediction(schedule: str, prediction: Any, chosen: Any) -> PartPrediction:
    sens = prediction.sim.get("power_sensitivity") if prediction.sim.get("power_limited") else None
    return PartPrediction(
        schedule,
        prediction.time_us,
        chosen,
        prediction.clock_mhz,
        ClockSensitivity(sens["power_slope"], sens["time_slope"]) if sens else None,
        int(prediction.sim.get("events") or 0),
    )


def _predict_from(
    name: str, arch: Arch, params: dict[str, Any], max_events: int | None, start: ClockStart
) -> Any:
    """A named schedule's time-only prediction whose power fixed point starts at ``start``."""
    from gpusim.schedule.load import load_schedule
    from gpusim.summarize import predict_resolved

    sched = load_schedule(name, arch, params)
    return predict_resolved(sched, arch, attribute=False, max_events=max_events, power_start=start)
