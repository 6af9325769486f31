"""The fit's row predictions, in this process or in worker processes (``gpusim calibrate --jobs``).

A fit predicts every row at one model point, then at each perturbed point: batches of independent
predictions. :class:`RowPool` runs a batch and returns results in request order; with ``jobs > 1`` the
batch is spread over spawned processes (gpusim.calibrate.validate's pool: Ctrl-C ends it with one line,
a worker's error reaches the caller unchanged). A result is the same in either mode: each prediction is
deterministic and the per-process caches only save repeats.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from gpusim.arch import Arch
from gpusim.calibrate.measurements import Measurement
from gpusim.calibrate.predictor import PartPrediction, Predictor, Skip
from gpusim.calibrate.store import open_store
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


def _base(predictor: Predictor, req: PartsRequest) -> BaseResult:
    result = validate_rows([req.m], costs="datasheet", predictor=predictor, arch_override=req.arch)[0]
    if result.predicted_time_us is None:
        return result, None
    # the same predictions again, pinned to the search's choices (repeats of a named schedule are cached)
    return result, _parts(predictor, PartsRequest(req.m, req.arch, result.pins))


def _parts(predictor: Predictor, req: PartsRequest) -> PartsResult:
    try:
        return predictor.row_parts(req.m, req.arch, req.pins, starts=req.starts)
    except Skip as exc:
        return exc


_Out = TypeVar("_Out")
_Work = Callable[[Predictor, PartsRequest], _Out]


def _task(args: tuple[_Work[_Out], int, PartsRequest, int | None, str | None]) -> tuple[int, _Out, int, int]:
    """One request in a worker process, with its own predictor (the work function is picklable by name):
    its result, the simulations it ran and the results it took from the cache."""
    work, index, req, max_events, cache_dir = args
    store = open_store(cache_dir)
    hits = store.hits if store is not None else 0
    predictor = Predictor(max_events, store=store)
    result = work(predictor, req)
    return index, result, predictor.simulations, (store.hits - hits) if store is not None else 0


class RowPool:
    """Batches of row predictions for a fit, serial (``jobs`` 1) or in ``jobs`` processes."""

    def __init__(
        self,
        jobs: int = 1,
        max_events: int | None = DEFAULT_MAX_EVENTS,
        on_progress: Any = None,
        cache_dir: str | None = None,
    ) -> None:
        self.jobs = max(1, jobs)
        self.max_events = max_events
        self.on_progress = on_progress
        """Called as ``on_progress(simulations, 0)`` as predictions finish (progress bars)."""
        self.cache_dir = cache_dir
        """Where simulation results are kept across runs (gpusim.calibrate.store), or None."""
        self._predictor = Predictor(max_events, store=open_store(cache_dir))
        self._worker_simulations = 0
        self._worker_reused = 0
        self._hits_before = self._predictor.store.hits if self._predictor.store is not None else 0

    @property
    def simulations(self) -> int:
        """Predictions run so far (this process's and the workers')."""
        return self._predictor.simulations + self._worker_simulations

    @property
    def reused(self) -> int:
        """Predictions taken from the cache directory instead of simulated (``cache_dir``)."""
        own = self._predictor.store.hits - self._hits_before if self._predictor.store is not None else 0
        return own + self._worker_reused

    def _progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.simulations, 0)

    def base(self, rows: list[Measurement], arch: Arch) -> list[BaseResult]:
        """Each row predicted cold on ``arch`` (its auto searches run), as ``gpusim validate`` does, with
        its parts pinned to the choices made."""
        return self._run(_base, [PartsRequest(m, arch) for m in rows])

    def parts(self, requests: list[PartsRequest]) -> list[PartsResult]:
        """Each request's parts, or the Skip that stopped it, in request order."""
        return self._run(_parts, requests)

    def _run(self, work: _Work[_Out], requests: list[PartsRequest]) -> list[_Out]:
        """``work`` for each request, in request order: here, or spread over the worker processes."""
        if self.jobs == 1 or len(requests) < 2:
            out = []
            for req in requests:
                out.append(work(self._predictor, req))
                self._progress()
            return out
        tasks = [(work, i, req, self.max_events, self.cache_dir) for i, req in enumerate(requests)]
        results: dict[int, _Out] = {}
        for index, result, simulations, reused in map_in_processes(_task, tasks, self.jobs):
            results[index] = result
            self._worker_simulations += simulations
            self._worker_reused += reused
            self._progress()
        return [results[i] for i in range(len(requests))]
