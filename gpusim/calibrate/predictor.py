"""Predict the time of one measured row: auto:gemm search or a named schedule, ``a+b`` sums, cached."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpusim.arch import Arch
from gpusim.calibrate.measurements import Measurement
from gpusim.errors import (
    DeadlockError,
    GpusimError,
    ScheduleRefused,
    SimulationLimitExceeded,
    UnknownNameError,
)
from gpusim.sim.limits import DEFAULT_MAX_EVENTS


class Skip(Exception):
    """The row cannot be predicted; the message says why."""


@dataclass(frozen=True)
class PartPrediction:
    """One schedule of a row: its time and, for auto, the chosen schedule and parameters."""

    schedule: str
    time_us: float
    chosen: tuple[str, tuple[tuple[str, Any], ...]] | None = None


def problem_for(schedule: str, m: Measurement) -> dict[str, Any]:
    """The overrides a schedule takes from the row: problem columns, dtype and known params."""
    from gpusim.autotune import GEMM_PROBLEM_KEYS, is_auto
    from gpusim.schedule.load import _read_spec as read_spec
    from gpusim.schedule.load import schedule_path

    values: dict[str, Any] = dict(m.dims)
    if "causal" in values:
        values["causal"] = int(values["causal"])
    if m.dtype:
        values["dtype"] = m.dtype
    values.update(m.params)
    if is_auto(schedule):
        keys = set(GEMM_PROBLEM_KEYS)
    else:
        spec = read_spec(schedule_path(schedule))
        keys = set(spec.problem) | set(spec.params)
    return {k: v for k, v in values.items() if k in keys}


def _cal_key(arch: Arch) -> tuple[Any, ...]:
    c = arch.calibration
    return (arch.id, c.sustained_clock_mhz, c.hbm_bandwidth_fraction, c.l2_bandwidth_fraction, c.latency_scale,
            c.launch_overhead_ns, c.tensor_issue_efficiency, c.cuda_core_issue_efficiency)  # fmt: skip


class Predictor:
    """Predictions of rows, cached by (arch costs, schedule, problem) within one run.

    ``max_events`` bounds the simulated work of one simulation (events, not seconds: the same rows are
    predicted on any machine); a row that needs more is skipped with that reason.
    """

    def __init__(self, max_events: int | None = DEFAULT_MAX_EVENTS) -> None:
        self.cache: dict[tuple[Any, ...], PartPrediction | str] = {}
        self.simulations = 0
        self.max_events = max_events

    def part(self, schedule: str, arch: Arch, problem: dict[str, Any],
             pinned: tuple[str, tuple[tuple[str, Any], ...]] | None = None) -> PartPrediction:  # fmt: skip
        """One schedule's prediction, within the work limit."""
        try:
            return self._part(schedule, arch, problem, pinned)
        except SimulationLimitExceeded:
            key = (_cal_key(arch), schedule, tuple(sorted(problem.items())), pinned)
            reason = (f"{schedule}: needs more than the work limit of {self.max_events:,} simulated events "
                      "(raise --max-events)")  # fmt: skip
            self.cache[key] = reason
            raise Skip(reason) from None

    def _part(self, schedule: str, arch: Arch, problem: dict[str, Any],
              pinned: tuple[str, tuple[tuple[str, Any], ...]] | None = None) -> PartPrediction:  # fmt: skip
        """One schedule's prediction (``pinned``: simulate this auto choice instead of searching)."""
        from gpusim.autotune import is_auto, search_gemm
        from gpusim.report.summary import summarize
        from gpusim.schedule.load import load_schedule
        from gpusim.sim.engine import simulate

        key = (_cal_key(arch), schedule, tuple(sorted(problem.items())), pinned)
        hit = self.cache.get(key)
        if isinstance(hit, str):
            raise Skip(hit)
        if hit is not None:
            return hit
        try:
            if is_auto(schedule) and pinned is None:
                if schedule == "auto:attn":
                    raise Skip("auto:attn: no attention search exists yet")
                prediction, _ = search_gemm(arch, problem, max_events=self.max_events)
                self.simulations += 1
                choice = prediction.choice or {}
                chosen = (choice.get("schedule", ""), tuple(sorted((choice.get("params") or {}).items())))
                result = PartPrediction(schedule, prediction.time_us, chosen)
            else:
                name, params = (pinned[0], {**problem, **dict(pinned[1])}) if pinned else (schedule, problem)
                run = simulate(load_schedule(name, arch, params), arch, max_events=self.max_events)
                self.simulations += 1
                result = PartPrediction(schedule, summarize(run).time_us, pinned)
        except Skip as exc:
            self.cache[key] = str(exc)
            raise
        except UnknownNameError as exc:
            reason = str(exc)
            self.cache[key] = reason
            raise Skip(reason) from None
        except SimulationLimitExceeded:
            raise
        except (ScheduleRefused, DeadlockError, GpusimError) as exc:
            reason = f"{schedule}: {exc}" if not str(exc).startswith(schedule) else str(exc)
            self.cache[key] = reason
            raise Skip(reason) from None
        self.cache[key] = result
        return result

    def row(self, m: Measurement, arch: Arch,
            pins: tuple[Any, ...] | None = None) -> tuple[float, tuple[Any, ...]]:  # fmt: skip
        """Predicted time (us) of a row (sum over ``a+b``) and the auto choices made (for pinning)."""
        from gpusim.schedule.load import builtin_schedule_names

        total = 0.0
        chosen: list[Any] = []
        for i, name in enumerate(s.strip() for s in m.schedule.split("+")):
            from gpusim.autotune import is_auto

            if not is_auto(name) and name not in builtin_schedule_names() and "/" not in name:
                raise Skip(f"unknown schedule '{name}'")
            problem = problem_for(name, m)
            part = self.part(name, arch, problem, pins[i] if pins else None)
            total += part.time_us
            chosen.append(part.chosen)
        return total, tuple(chosen)
