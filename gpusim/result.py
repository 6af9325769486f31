"""The result of a prediction: :class:`Prediction` (and its :class:`Interval`).

``Prediction.to_dict()`` is exactly the document ``gpusim predict --json`` prints: strict JSON (no NaN
or infinity; tuples become lists), key order as the fields below. This module imports nothing heavy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class Interval:
    """An 80% prediction interval from calibration residuals, built around the point prediction.

    ``low_us <= time_us <= high_us`` always holds: the band is the point times the 10th and 90th
    percentile of measured/predicted over the residual rows, widened to include ratio 1.
    """

    low_us: float | None
    """Lower end (us); None when no residuals apply."""
    high_us: float | None
    """Upper end (us); None when no residuals apply."""
    family: str
    """Schedule family whose residuals were used: gemm, attention, mla, stream or other."""
    extrapolation: bool
    """True when the arch has no measured rows of this family (band borrowed from other archs, or none)."""
    residual_rows: int
    """How many measured rows the residuals come from (0 when none)."""
    text: str
    """One line for people: the point, the band and where the band comes from."""

    def contains(self, time_us: float) -> bool:
        """Whether ``time_us`` lies inside the band (True when there is no band)."""
        if self.low_us is None or self.high_us is None:
            return True
        return self.low_us <= time_us <= self.high_us


@dataclass(frozen=True)
class Prediction:
    """What gpusim predicts for one schedule on one arch and problem.

    Times are microseconds of kernel time including the launch overhead; utilizations are busy
    fractions of the kernel time averaged over all SMs (``hbm``/``l2``: fraction of peak bandwidth).
    The verdict, ``bottleneck`` and ``attribution`` all come from one model, the critical-path
    attribution (``gpusim.report.attribution``).
    """

    schedule: str
    """The schedule predicted (for ``auto:*``: the search's name; ``choice`` says what it chose)."""
    arch: str
    """Arch id."""
    problem: dict[str, Any]
    """Problem parameters as resolved (M, N, K, dtype, batch, heads, ...)."""
    params: dict[str, Any]
    """Schedule parameters as resolved (tile sizes, stages, cluster, ...)."""
    time_us: float
    """Predicted kernel time (us), launch overhead included."""
    tflops: float
    """Achieved TFLOPS (the schedule's FLOP count over ``time_us``)."""
    hbm_gbps: float
    """HBM traffic (reads + writes) over ``time_us``, GB/s."""
    l2_gbps: float
    """L2 traffic over ``time_us``, GB/s."""
    l2_hit_rate: float
    """Fraction of L2 read bytes that did not go to HBM."""
    hbm_read_bytes: float
    """Bytes read from HBM."""
    hbm_write_bytes: float
    """Bytes written to HBM."""
    utilization: dict[str, float]
    """Busy fraction per unit (tensor, tma, lsu, fp32, sfu, cvt, int, issue, tmem, hbm, l2)."""
    occupancy: dict[str, Any]
    """CTAs and warps per SM, threads per CTA, work units, waves, cluster shape."""
    budgets: dict[str, Any]
    """Shared memory, registers, TMEM and threads used against the arch's limits."""
    bottleneck: str | None
    """The dominant cause of the attribution (a key of ``attribution``, e.g. ``tensor_core``); None
    only for time-only predictions (``predict(..., attribute=False)``)."""
    verdict: str | None
    """One line: the dominant cause with its evidence, the runner-up and the tail (None when not
    attributed)."""
    attribution: dict[str, float] | None
    """Share of the kernel time per cause; the shares add up to 1 (None when not attributed)."""
    interval: Interval
    """80% prediction interval around ``time_us`` from calibration residuals."""
    costs: str
    """``calibrated`` or ``datasheet``: which costs the arch carried."""
    overlay: str | None
    """The calibration overlay file the costs came from (None for datasheet costs)."""
    clock_mhz: float
    """SM clock the simulation ran at (MHz): with the ``power`` mechanism on, the clock the power model
    found (the highest whose average power fits under the board limit), else the sustained clock."""
    roofline_us: float
    """Lower bound: max(FLOPs at the dense peak, compulsory bytes at the HBM bandwidth), us."""
    sim: dict[str, Any]
    """Simulator statistics: wall seconds, events, SM groups simulated."""
    model: list[str] = field(default_factory=list)
    """Model mechanisms that were on (``gpusim.mechanisms``; e.g. ``["power"]``)."""
    power_w: float | None = None
    """Average board power (W) the power model estimates at ``clock_mhz`` (None: ``power`` was off)."""
    choice: dict[str, Any] | None = None
    """For ``auto:*``: the chosen schedule and parameters, and every candidate tried."""
    timeline: Any = field(default=None, compare=False, repr=False)
    """The recorded simulation (``gpusim.sim.engine.SimRun``) when ``predict(..., record=True)``;
    what traces and timeline plots draw. Not part of ``to_dict()``."""

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` document: every field but ``timeline``, as strict JSON values."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "timeline":
                continue
            value = getattr(self, f.name)
            if isinstance(value, Interval):
                value = {g.name: getattr(value, g.name) for g in fields(value)}
            out[f.name] = _strict_json(value)
        return out


def _strict_json(value: Any) -> Any:
    """``value`` with tuples as lists and non-finite floats as None (JSON has no NaN)."""
    if isinstance(value, dict):
        return {str(k): _strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


__all__ = ["Interval", "Prediction"]
