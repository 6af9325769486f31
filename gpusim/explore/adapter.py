"""The one place exploration reaches the simulator.

Every prediction a sweep, the tuner or rank-check makes goes through :func:`predict` here, and every
legality pre-check through :func:`refusal`. ``predict`` calls ``gpusim.predict`` (the project's one
prediction path) when it exists, and otherwise the equivalent load -> check -> simulate -> summarize
sequence, so nothing else in ``gpusim.explore`` touches the simulator directly.
"""

from __future__ import annotations

from typing import Any, Literal

from gpusim.arch import Arch, load_arch
from gpusim.errors import DeadlockError, GpusimError, ScheduleRefused

Costs = Literal["calibrated", "datasheet"]
COSTS: tuple[str, ...] = ("calibrated", "datasheet")


def arch_for(arch: str | Arch, costs: Costs) -> Arch:
    """The arch object with the requested costs (shipped calibration or datasheet)."""
    if isinstance(arch, Arch):
        return arch
    return load_arch(arch, calibrated=(costs == "calibrated"))


def refusal(schedule: str, arch: str | Arch, costs: Costs, params: dict[str, Any]) -> str | None:
    """Why the hardware and budget checks refuse this point, or None when it may be simulated.

    Bad input (an unknown parameter, a value of the wrong type) is not a refusal: it raises InputError.
    """
    from gpusim.schedule.check import check_schedule
    from gpusim.schedule.load import load_schedule

    arch_obj = arch_for(arch, costs)
    try:
        check_schedule(load_schedule(schedule, arch_obj, params), arch_obj)
    except ScheduleRefused as exc:
        return str(exc)
    return None


def predict(schedule: str, arch: str | Arch, costs: Costs, params: dict[str, Any]) -> Any:
    """A Prediction for ``schedule`` on ``arch`` with ``params`` (problem and schedule parameters).

    Raises ScheduleRefused, DeadlockError or another GpusimError as the prediction path does.
    """
    try:
        from gpusim.api import predict as api_predict  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        api_predict = None
    if api_predict is not None:
        return api_predict(schedule, arch_for(arch, costs), costs=costs, **params)
    from gpusim.report.summary import summarize
    from gpusim.schedule.load import load_schedule
    from gpusim.sim.engine import simulate

    arch_obj = arch_for(arch, costs)
    return summarize(simulate(load_schedule(schedule, arch_obj, params), arch_obj))


def prediction_dict(prediction: Any) -> dict[str, Any]:
    """The prediction's JSON document (``to_dict()`` on the API's Prediction, ``as_dict()`` before it)."""
    to_dict = getattr(prediction, "to_dict", None) or prediction.as_dict
    return dict(to_dict())


__all__ = [
    "COSTS",
    "Costs",
    "DeadlockError",
    "GpusimError",
    "arch_for",
    "predict",
    "prediction_dict",
    "refusal",
]
