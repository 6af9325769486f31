"""The fit's row predictions, in this process or in worker processes (``gpusim calibrate --jobs``).

A fit predicts every row at one model point, then at each perturbed point: batches of independent
predictions. :class:`RowPool` runs a batch and returns results in request order; with ``jobs > 1`` the
batch is spread over spawned processes (gpusim.calibrate.validate's pool: Ctrl-C ends it with one line,
a worker's error reaches the caller unchanged). A result is the same in either mode: each prediction is
deterministic and the per-process caches only save repeats.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpusim.arch import Arch
from gpusim.calibrate.measurements import Measurement
from gpusim.calibrate.predictor import PartPrediction, Predictor, Skip
from gpusim.calibrate.validate import RowResult, map_in_processes, validate_rows
from gpusim.sim.limits import DEFAULT_MAX_EVENTS
from gpusim.sim.power import ClockStart


@dataclass(frozen=True)
class PartsRequest:
    """Predict the parts of row ``m`` on ``arch`` (``pins``: the auto choices to keep; ``starts``: where
    each part's power fixed point starts)."""

    m: Measurement
    arch: Arch
    pins: tuple[Any, ...] | None = None
    starts: tuple[ClockStart | None, ...] | None = None


PartsResult = list[PartPrediction] | Skip


BaseResult = tuple[RowResult, PartsResult | None]


def _base(predictor: Predictor, m: Measurement, arch: Arch) -> BaseResult:
    result = validate_rows([m], costs="datasheet", predictor=predictor, arch_override=arch)[0]
    if result.predicted_time_us is None:
        return result, None
    # the same predictions again, pinned to the search's choices (repeats of a named schedule are cached)
    return result, _parts(predictor, PartsRequest(m, arch, result.pins))


def _base_task(args: tuple[int, Measurement, Arch, int | None]) -> tuple[int, BaseResult, int]:
    index, m, arch, max_events = args
    predictor = Predictor(max_events)
    return index, _base(predictor, m, arch), predictor.simulations


def _parts_task(args: tuple[int, PartsRequest, int | None]) -> tuple[int, PartsResult, int]:
    index, req, max_events = args
    predictor = Predictor(max_events)
    return index, _parts(predictor, req), predictor.simulations


def _parts(predictor: Predictor, req: PartsRequest) -> PartsResult:
    try:
        return predictor.row_parts(req.m, req.arch, req.pins, starts=req.starts)
    except Skip as exc:
        return exc


class RowPool:
    """Batches of row predictions for a fit, serial (``jobs`` 1) or in ``jobs`` processes."""

    def __init__(
        self, jobs: int = 1, max_events: int | None = DEFAULT_MAX_EVENTS, on_progress: Any = None
    ) -> None:
        self.jobs = max(1, jobs)
        self.max_events = max_events
        self.on_progress = on_progress
        """Called as ``on_progress(simulations, 0)`` as predictions finish (progress bars)."""
        self._predictor = Predictor(max_events)
        self._worker_simulations = 0

    @property
    def simulations(self) -> int:
        """Predictions run so far (this process's and the workers')."""
        return self._predictor.simulations + self._worker_simulations

    def _progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.simulations, 0)

    def base(self, rows: list[Measurement], arch: Arch) -> list[BaseResult]:
        """Each row predicted cold on ``arch`` (its auto searches run), as ``gpusim validate`` does, with
        its parts pinned to the choices made."""
        if self.jobs == 1 or len(rows) < 2:
            out = []
            for m in rows:
                out.append(_base(self._predictor, m, arch))
                self._progress()
            return out
        tasks = [(i, m, arch, self.max_events) for i, m in enumerate(rows)]
        results: dict[int, BaseResult] = {}
        for index, result, simulations in map_in_processes(_base_task, tasks, self.jobs):
            results[index] = result
            self._worker_simulations += simulations
            self._progress()
        return [results[i] for i in range(len(rows))]

    def parts(self, requests: list[PartsRequest]) -> list[PartsResult]:
        """Each request's parts, or the Skip that stopped it, in request order."""
        if self.jobs == 1 or len(requests) < 2:
            out = []
            for req in requests:
                out.append(_parts(self._predictor, req))
                self._progress()
            return out
        tasks = [(i, req, self.max_events) for i, req in enumerate(requests)]
        results: dict[int, PartsResult] = {}
        for index, result, simulations in map_in_processes(_parts_task, tasks, self.jobs):
            results[index] = result
            self._worker_simulations += simulations
            self._progress()
        return [results[i] for i in range(len(requests))]
