"""Prediction intervals from the calibration residuals of an arch and schedule family."""

from __future__ import annotations

import math
from typing import Any

from gpusim.calibrate.convention import family_of
from gpusim.calibrate.overlay import load_overlay, overlays_dir


def _residuals(arch_id: str, family: str) -> dict[str, Any] | None:
    overlay = load_overlay(arch_id)
    if overlay is None:
        return None
    return (overlay.get("provenance") or {}).get("residuals", {}).get(family)


def _pooled(family: str) -> dict[str, Any] | None:
    """The widest residual band any shipped overlay has for ``family`` (for extrapolations)."""
    best = None
    for path in sorted(overlays_dir().glob("*.yaml")) if overlays_dir().is_dir() else []:
        q = _residuals(path.stem, family)
        if q and (best is None or q["q90"] - q["q10"] > best["q90"] - best["q10"]):
            best = q
    return best


def prediction_interval(arch_id: str, schedule: str, time_us: float, costs: str) -> dict[str, Any]:
    """80% interval (q10..q90 of log(measured/predicted)) and whether it is an extrapolation."""
    family = family_of(schedule)
    if costs != "calibrated" and load_overlay(arch_id) is not None:
        return {"family": family, "low_us": None, "high_us": None, "extrapolation": False,
                "text": f"{time_us:,.1f} us (datasheet costs; no interval: the {arch_id} calibration residuals "
                        "apply to its calibrated costs, drop --datasheet)"}  # fmt: skip
    q = _residuals(arch_id, family) if costs == "calibrated" else None
    extrapolation = q is None
    if q is None:
        q = _pooled(family)
    costs_text = f"{costs} costs"
    if q is None:
        return {"family": family, "low_us": None, "high_us": None, "extrapolation": True,
                "text": f"{time_us:,.1f} us ({costs_text}); no interval: no measured {family} rows on any "
                        f"calibrated arch (extrapolation)"}  # fmt: skip
    low, high = time_us * math.exp(q["q10"]), time_us * math.exp(q["q90"])
    text = f"{time_us:,.1f} us, 80% interval {low:,.1f}-{high:,.1f} us ({costs_text}"
    if extrapolation:
        text += f"; extrapolation: no measured {family} rows on {arch_id}, band borrowed from other archs)"
    else:
        text += f"; from {q['n']} measured {family} rows on {arch_id})"
    return {"family": family, "low_us": round(low, 3), "high_us": round(high, 3), "extrapolation": extrapolation,
            "residual_rows": q["n"], "text": text}  # fmt: skip
