"""Error statistics: percent errors, medians, p90, signed bias, residual quantiles."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def error_pct(predicted: float, measured: float) -> float:
    """Signed percent error of a prediction (positive: predicted slower than measured)."""
    return (predicted - measured) / measured * 100.0


def error_stats(errors: list[float]) -> dict[str, Any]:
    """Median / mean / p90 of absolute % error and the signed bias (median signed error)."""
    if not errors:
        return {"n": 0, "median_abs_pct": None, "mean_abs_pct": None, "p90_abs_pct": None, "bias_pct": None}
    e = np.asarray(errors, dtype=float)
    a = np.abs(e)
    return {
        "n": len(errors),
        "median_abs_pct": round(float(np.median(a)), 2),
        "mean_abs_pct": round(float(np.mean(a)), 2),
        "p90_abs_pct": round(float(np.percentile(a, 90)), 2),
        "bias_pct": round(float(np.median(e)), 2),
    }


def log_residual_quantiles(log_ratios: list[float]) -> dict[str, Any]:
    """Quantiles of log(measured / predicted) for 80% intervals: q10, q50, q90."""
    r = np.asarray(log_ratios, dtype=float)
    return {
        "n": len(log_ratios),
        "q10": round(float(np.percentile(r, 10)), 5),
        "q50": round(float(np.percentile(r, 50)), 5),
        "q90": round(float(np.percentile(r, 90)), 5),
    }


def ratio_to_pct(log_ratio: float) -> float:
    """A log(measured/predicted) as the percent error of the prediction."""
    return (1.0 / math.exp(log_ratio) - 1.0) * 100.0
