"""Prediction intervals from the calibration residuals of an arch and schedule family.

The band is built around the point: ``time_us * exp(min(q10, 0))`` to ``time_us * exp(max(q90, 0))``,
with q10/q90 the quantiles of log(measured/predicted) over the residual rows, so it always contains
the prediction itself.
"""

from __future__ import annotations

import math
from typing import Any

from gpusim.arch import Arch
from gpusim.calibrate.convention import family_of
from gpusim.calibrate.overlay import find_overlay, overlay_files, read_overlay_file
from gpusim.result import Interval


def _residuals(calibration: dict[str, Any], family: str) -> dict[str, Any] | None:
    return ((calibration.get("provenance") or {}).get("residuals") or {}).get(family)


def _pooled(family: str) -> dict[str, Any] | None:
    """The widest residual band any overlay in effect has for ``family`` (for extrapolations)."""
    best = None
    for path in overlay_files():
        q = _residuals(read_overlay_file(path), family)
        if q and (best is None or q["q90"] - q["q10"] > best["q90"] - best["q10"]):
            best = q
    return best


def around(time_us: float, q10: float, q90: float) -> tuple[float, float]:
    """The band ``[t·e^min(q10,0), t·e^max(q90,0)]``: it always contains ``time_us``."""
    return time_us * math.exp(min(q10, 0.0)), time_us * math.exp(max(q90, 0.0))


def prediction_interval(arch: Arch, schedule: str, time_us: float) -> Interval:
    """80% interval (q10..q90 of log(measured/predicted)) for ``time_us`` predicted on ``arch``
    (with the costs it carries) and whether it is an extrapolation: an arch without calibration
    borrows the widest band of the calibrated archs; datasheet costs of a calibrated arch get none."""
    family = family_of(schedule)
    cal = arch.calibration
    costs = cal.origin
    if costs != "calibrated" and find_overlay(arch.id) is not None:
        text = (f"{time_us:,.1f} us (datasheet costs; no interval: the {arch.id} calibration residuals "
                "apply to its calibrated costs, drop --datasheet)")  # fmt: skip
        return Interval(None, None, family, False, 0, text)
    q = _residuals(cal.model_dump(), family) if costs == "calibrated" else None
    extrapolation = q is None
    if q is None:
        q = _pooled(family)
    if q is None:
        text = (f"{time_us:,.1f} us ({costs} costs); no interval: no measured {family} rows on any "
                "calibrated arch (extrapolation)")  # fmt: skip
        return Interval(None, None, family, True, 0, text)
    low, high = around(time_us, float(q["q10"]), float(q["q90"]))
    text = f"{time_us:,.1f} us, 80% interval {low:,.1f}-{high:,.1f} us ({costs} costs"
    if extrapolation:
        text += f"; extrapolation: no measured {family} rows on {arch.id}, band borrowed from other archs)"
    else:
        text += f"; from {q['n']} measured {family} rows on {arch.id})"
    return Interval(low, high, family, extrapolation, int(q["n"]), text)
