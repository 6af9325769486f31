"""The one place exploration reaches the prediction path.

Every prediction a sweep, the tuner or rank-check makes is a :func:`gpusim.predict` call made here, and
every legality pre-check goes through :func:`refusal` (the static checks ``predict`` runs first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from gpusim.arch import Arch
from gpusim.errors import ScheduleRefused

Costs = Literal["calibrated", "datasheet"]
COSTS: tuple[str, ...] = ("calibrated", "datasheet")

_ARCHS: dict[tuple[str, str], Arch] = {}


def arch_for(arch: str | Path | Arch, costs: Costs) -> Arch:
    """The arch with the requested costs (shipped or user calibration, or datasheet), cached per process.

    A sweep resolves its archs once in the calling process and sends the objects to the workers, so
    every machine of a cluster predicts with the same costs.
    """
    if isinstance(arch, Arch):
        return arch
    key = (str(arch), costs)
    if key not in _ARCHS:
        from gpusim.api import load_arch

        _ARCHS[key] = load_arch(arch, costs=costs)
    return _ARCHS[key]


def refusal(schedule: str, arch: str | Arch, costs: Costs, params: dict[str, Any]) -> str | None:
    """Why the hardware and budget checks refuse this point, or None when it may be predicted.

    Bad input (an unknown parameter, a value of the wrong type) is not a refusal: it raises InputError.
    """
    from gpusim.errors import overrides_from
    from gpusim.schedule.check import check_schedule
    from gpusim.schedule.load import load_schedule

    arch_obj = arch_for(arch, costs)
    try:
        with overrides_from("point"):
            check_schedule(load_schedule(schedule, arch_obj, params), arch_obj)
    except ScheduleRefused as exc:
        return str(exc)
    return None


def predict(schedule: str, arch: str | Arch, costs: Costs, params: dict[str, Any]) -> Any:
    """``gpusim.predict`` for ``schedule`` on ``arch`` with ``params`` (problem and schedule parameters).

    Raises ScheduleRefused, DeadlockError or another GpusimError as the prediction path does.
    """
    from gpusim.api import predict as api_predict
    from gpusim.errors import overrides_from

    with overrides_from("point"):  # a point's values are the command line's --grid / --set
        return api_predict(schedule, arch_for(arch, costs), costs=costs, **params)


def prediction_dict(prediction: Any) -> dict[str, Any]:
    """The prediction's JSON document (what ``gpusim predict --json`` prints)."""
    return dict(prediction.to_dict())
