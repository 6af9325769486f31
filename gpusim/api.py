"""The public Python API: one path from (schedule, arch, costs, problem) to a :class:`Prediction`.

::

    import gpusim

    p = gpusim.predict("gemm_ws_pingpong", "h100", M=4096, N=4096, K=4096)
    print(p.time_us, p.tflops, p.verdict, p.costs, p.overlay)

Every command of the ``gpusim`` CLI, the comparisons, the roofline, validation, calibration, the
notebooks and the benchmarks go through :func:`predict`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpusim.arch import Arch, builtin_arch_ids, validated
from gpusim.arch import load_arch as _load_arch_file
from gpusim.autotune import default_problem as auto_default_problem
from gpusim.autotune import is_auto, search
from gpusim.autotune import problem_keys as auto_problem_keys
from gpusim.costs import with_costs
from gpusim.errors import InputError, LimitExceeded, checked_call, kind_of
from gpusim.mechanisms import with_model
from gpusim.result import Prediction
from gpusim.schedule.ir import Schedule
from gpusim.schedule.load import builtin_schedule_names, read_spec, resolve
from gpusim.schedule.load import load_schedule as resolve_file
from gpusim.schedule.schema import ScheduleSpec
from gpusim.sim.limits import DEFAULT_MAX_EVENTS
from gpusim.summarize import predict_resolved

ScheduleLike = str | Path | ScheduleSpec | Schedule
"""A schedule: a built-in name, ``auto:gemm``, a YAML path, a parsed spec or a resolved schedule."""
ArchLike = str | Path | Arch
"""An arch: an id or alias (``h100``, ``sm_90``), a YAML path, or a loaded :class:`Arch`."""
DEFAULT_AUTO_ARCH = "h100"
"""The arch ``auto:*`` predicts on when none is given."""


@checked_call
def archs() -> list[str]:
    """Ids of the built-in archs, oldest generation first."""
    return builtin_arch_ids()


@checked_call
def schedules() -> list[str]:
    """Names of the built-in schedules (plus ``auto:gemm``, the search, which is not a file)."""
    return list(builtin_schedule_names())


@checked_call
def load_arch(arch: ArchLike, *, costs: str | Path = "calibrated") -> Arch:
    """An arch with the costs ``costs`` names: ``"calibrated"`` (the overlay ``gpusim calibrate``
    wrote, else the shipped one, else the datasheet), ``"datasheet"``, or an overlay file's path.
    ``arch.calibration.origin`` says which; ``provenance["overlay_file"]`` names the file."""
    base = validated(arch) if isinstance(arch, Arch) else _load_arch_file(arch)
    return with_costs(base, costs)


@checked_call
def load_schedule(schedule: str | Path) -> ScheduleSpec:
    """A schedule file parsed but not resolved: its problem and parameters with their defaults,
    reference arch and description (``predict`` resolves it for an arch and problem)."""
    return read_spec(schedule)


def reference_arch(schedule: ScheduleLike) -> str:
    """The arch a schedule was written for (``h100`` for ``auto:*``)."""
    if isinstance(schedule, Schedule | ScheduleSpec):
        return schedule.reference_arch
    if is_auto(str(schedule)):
        return DEFAULT_AUTO_ARCH
    return read_spec(schedule).reference_arch


def _resolve_schedule(schedule: ScheduleLike, arch: Arch, problem: dict[str, Any]) -> Schedule:
    if isinstance(schedule, ScheduleSpec):
        return resolve(schedule, arch, problem, None)
    if isinstance(schedule, Schedule):
        if schedule.source is None:
            raise InputError(f"schedule '{schedule.name}' was resolved without a file; pass its spec instead")
        problem = {**schedule.overrides, **problem}
        schedule = schedule.source
    return resolve_file(str(schedule), arch, problem)


@checked_call
def predict(
    schedule: ScheduleLike,
    arch: ArchLike | None = None,
    *,
    costs: str | Path = "calibrated",
    model: str | None = None,
    record: bool = False,
    exact: bool = False,
    attribute: bool = True,
    deadline_s: float | None = None,
    max_events: int | None = DEFAULT_MAX_EVENTS,
    on_progress: Callable[[int, int], None] | None = None,
    resources: Any = None,
    **problem: Any,
) -> Prediction:
    """Predict ``schedule`` on ``arch`` for ``problem`` (problem sizes and schedule parameters).

    - ``schedule``: a built-in name (see :func:`schedules`), ``auto:gemm`` (the fastest legal GEMM
      schedule and tiling gpusim finds; without M/N/K/dtype, an 8192-cube bf16 GEMM), ``auto:attention``
      (the same for attention forward), a YAML path, or a loaded schedule.
    - ``arch``: an id, alias, YAML path or :class:`Arch`; default: the schedule's reference arch.
    - ``costs``: ``"calibrated"`` (default), ``"datasheet"`` or an overlay file (see :func:`load_arch`).
    - ``model``: mechanisms to switch relative to the defaults, e.g. ``"+power"`` (the clock from the
      arch's power model instead of its sustained clock; see ``gpusim.mechanisms`` and docs/power.md);
      None: as the arch carries them (the defaults unless an earlier call set them).
    - ``record``: keep the simulation on ``Prediction.timeline`` (for traces and timeline plots).
    - ``exact``: simulate every event instead of fast-forwarding repeated periods (where supported).
    - ``attribute``: compute the critical-path attribution and verdict (off: time-only, faster).
    - ``deadline_s``: a ``time.perf_counter()`` value past which the simulation stops (LimitExceeded).
    - ``max_events``: the work limit, events simulated in detail per simulation (LimitExceeded past
      it; the same on any machine, unlike ``deadline_s``; None: no limit).
    - ``on_progress(done, total)``: called as an ``auto:*`` search goes (progress bars).
    - ``resources``: a build of the kernel (a path gpusim.compiler.inspect_file reads, or its
      BuildReport): its compiled registers and shared memory replace the schedule's budgets for
      occupancy and refusals (gpusim.compiler.with_build).

    Raises InputError (bad input), ScheduleRefused (hardware or budget check), DeadlockError or
    LimitExceeded; all are :class:`gpusim.GpusimError`.
    """
    _check_options(schedule, arch, costs, max_events, deadline_s, on_progress, resources,
                   {"record": record, "exact": exact, "attribute": attribute})  # fmt: skip
    problem = {key: _problem_value(key, value) for key, value in problem.items()}
    arch_obj = with_model(
        load_arch(arch if arch is not None else reference_arch(schedule), costs=costs), model
    )
    if isinstance(schedule, str) and schedule.startswith("auto"):
        return _predict_auto(schedule, arch_obj, problem, record=record, exact=exact, attribute=attribute,
                             deadline_s=deadline_s, max_events=max_events, on_progress=on_progress)  # fmt: skip
    sched = _resolve_schedule(schedule, arch_obj, problem)
    if resources is not None:  # a real build's registers and shared memory (gpusim/compiler/with_build.py)
        from gpusim.compiler.with_build import schedule_with_build

        sched, _ = schedule_with_build(sched, arch_obj, resources)
    return predict_resolved(sched, arch_obj, record=record, exact=exact, attribute=attribute,
                            deadline_s=deadline_s, max_events=max_events)  # fmt: skip


def _check_options(schedule: Any, arch: Any, costs: Any, max_events: Any, deadline_s: Any, on_progress: Any,
                   resources: Any, flags: dict[str, Any]) -> None:  # fmt: skip
    """Refuse, before any work, arguments of the wrong type or range (one-line InputErrors)."""
    if not isinstance(schedule, str | Path | ScheduleSpec | Schedule):
        raise InputError(
            f"schedule: expected a name, a YAML path or a loaded schedule, got {kind_of(schedule)}"
        )
    if arch is not None and not isinstance(arch, str | Path | Arch):
        raise InputError(f"arch: expected an arch id, a YAML path or an Arch, got {kind_of(arch)}")
    if not isinstance(costs, str | Path):
        raise InputError(
            f"costs: expected 'calibrated', 'datasheet' or an overlay path, got {kind_of(costs)}"
        )
    if max_events is not None and (
        isinstance(max_events, bool) or not isinstance(max_events, int) or max_events < 1
    ):
        raise InputError(f"max_events: expected a whole number of events >= 1 (None: no limit), got "
                         f"{kind_of(max_events)}")  # fmt: skip
    if deadline_s is not None and (
        isinstance(deadline_s, bool)
        or not isinstance(deadline_s, int | float)
        or not math.isfinite(deadline_s)
    ):
        raise InputError(
            f"deadline_s: expected a finite time.perf_counter() value, got {kind_of(deadline_s)}"
        )
    if deadline_s is not None and deadline_s <= time.perf_counter():
        raise LimitExceeded(f"deadline_s: {deadline_s:.3f} has already passed (time.perf_counter() is "
                            f"{time.perf_counter():.3f}); nothing was simulated")  # fmt: skip
    if on_progress is not None and not callable(on_progress):
        raise InputError(f"on_progress: expected a function (done, total), got {kind_of(on_progress)}")
    if resources is not None and not isinstance(resources, str | Path) and not hasattr(resources, "kernels"):
        raise InputError(f"resources: expected a build's path or its BuildReport, got {kind_of(resources)}")
    for name, flag in flags.items():
        if not isinstance(flag, bool):
            raise InputError(f"{name}: expected True or False, got {kind_of(flag)}")


def _problem_value(key: str, value: Any) -> Any:
    """A problem value or parameter as predict takes it: a number, a word or an expression (text); a
    NumPy scalar becomes its Python value."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        value = value.item()
    if not isinstance(value, int | float | str):
        raise InputError(f"{key}: expected a number, true/false or text (a word or an expression), got "
                         f"{kind_of(value)}")  # fmt: skip
    return value


def _predict_auto(kind: str, arch: Arch, problem: dict[str, Any], *, record: bool, exact: bool, attribute: bool,
                  deadline_s: float | None, on_progress: Callable[[int, int], None] | None,
                  max_events: int | None = DEFAULT_MAX_EVENTS) -> Prediction:  # fmt: skip
    best, _ = search(
        kind, arch, problem, deadline_s, exact=exact, on_candidate=on_progress, max_events=max_events
    )
    choice = best.choice or {}
    if attribute or record:
        full_problem = {**auto_default_problem(kind, arch), **problem}
        sched = _resolve_schedule(choice["schedule"], arch, {**full_problem, **choice["params"]})
        best = predict_resolved(sched, arch, record=record, exact=exact, attribute=attribute,
                                deadline_s=deadline_s, max_events=max_events, interval_name=kind)  # fmt: skip
    return dataclasses.replace(best, schedule=kind, choice=choice)


def default_problem(schedule: ScheduleLike, arch: ArchLike | None = None) -> dict[str, Any]:
    """The problem a schedule predicts when none is given (its file's defaults; auto: the search's default)."""
    if isinstance(schedule, str) and is_auto(schedule):
        return auto_default_problem(schedule, load_arch(arch or DEFAULT_AUTO_ARCH, costs="datasheet"))
    spec = schedule if isinstance(schedule, ScheduleSpec) else read_spec(
        schedule.source if isinstance(schedule, Schedule) else schedule)  # type: ignore[arg-type]  # fmt: skip
    return dict(spec.problem)


def problem_keys(schedule: ScheduleLike) -> tuple[str, ...]:
    """The problem names a schedule takes (M, N, K, dtype for GEMMs; batch, heads, ... for attention)."""
    if isinstance(schedule, str) and is_auto(schedule):
        return auto_problem_keys(schedule)
    return tuple(default_problem(schedule))


__all__ = [
    "ArchLike",
    "ScheduleLike",
    "archs",
    "default_problem",
    "load_arch",
    "load_schedule",
    "predict",
    "problem_keys",
    "reference_arch",
    "schedules",
]
