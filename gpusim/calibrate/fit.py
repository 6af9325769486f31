"""``gpusim calibrate``: fit an arch's calibration block to measured rows, with cross-validation.

Each usable row is simulated once at the datasheet point and once per fitted parameter at a small
perturbation (auto:gemm rows keep the schedule their search chose), which gives each row's
elasticities d log t / d log p. With the power model on, the energy scale's elasticities come from each
row's clock sensitivity instead (:func:`energy_elasticity`: the energy scale moves nothing but the
clock), and each perturbed point's fixed point starts at the clock the point found. Least squares on
log error (scipy, bounded, fixed start, a weak pull to the datasheet values so that parameters the
rows cannot tell apart stay put) runs on that linearised model; the fitted block is then
re-simulated for the reported error. Cross-validation (leave-one-source-out, or k-fold when the rows
have one source) refits on the linearised model without the held-out rows and reports the error on
them.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from gpusim.arch import Arch
from gpusim.calibrate.convention import family_of, measured_time_us
from gpusim.calibrate.measurements import Measurement
from gpusim.calibrate.params import FitParam, fit_params
from gpusim.calibrate.predictor import PartPrediction
from gpusim.calibrate.rowpool import PartsRequest, RowPool
from gpusim.calibrate.stats import error_pct, error_stats, log_residual_quantiles
from gpusim.calibrate.validate import precheck
from gpusim.costs import with_calibration
from gpusim.errors import InputError, quote
from gpusim.mechanisms import MECHANISMS, mechanisms_of
from gpusim.sim.power import ClockStart

PRIOR_WEIGHT = 0.05
STEP = 0.10
MAX_ITERS = 6
"""Gauss-Newton iterations at most (``--max-iterations``); each costs one simulation per row (Broyden) or
1 + p (fresh slopes)."""
TRUST_LOG_STEP = 0.3
"""How far (in log) one iteration may move a multiplicative parameter: the linearisation around the
current point is believed that far (x0.74 .. x1.35)."""
MAX_FIT_ROWS = 0
"""0: no cap on the rows per arch."""


@dataclass
class FitRow:
    m: Measurement
    family: str
    measured_us: float
    base_us: float
    pins: tuple[Any, ...]
    elasticity: np.ndarray  # per multiplicative parameter
    parts: list[PartPrediction] = field(default_factory=list)
    """The row's schedules predicted at the current point (their clocks start the perturbed points' power
    fixed points)."""

    def starts(self) -> tuple[ClockStart | None, ...] | None:
        """Where each part's power fixed point starts at a nearby point: this point's clocks."""
        return tuple(part.start() for part in self.parts) if self.parts else None


def energy_elasticity(fr: FitRow, launch_us: float, kernel_us: float) -> float:
    """d log t / d log energy_scale of a row from its parts' clock sensitivities (no simulation).

    The power model holds s * D(f) = limit - static at the clock f it answers, so d log f / d log s =
    -1 / (d log D / d log f), and each power-limited part's kernel time moves by its d log T / d log f
    times that; a part that runs at its ceiling does not move (``kernel_us``: the row's kernel time)."""
    change = 0.0
    for part in fr.parts:
        sens = part.sensitivity
        if sens is None:
            continue
        change += max(part.time_us - launch_us, 0.0) * sens.time_slope * (-1.0 / max(sens.power_slope, 0.2))
    return change / max(kernel_us, 1e-9)


def default_fit_names(families: set[str], small_times: bool, power: bool = False,
                      coupling: bool = False) -> list[str]:  # fmt: skip
    """What the rows can identify: memory rows -> HBM; compute rows -> clock and tensor efficiency;
    attention and MLA rows (softmax beside the MMAs) -> the tensor/CUDA-core overlap when the
    ``pipe_coupling`` mechanism is on (``coupling``). With the power model on (``power``) the clock is
    the model's output, never fitted: its energy scale is fitted in the clock's place."""
    names: list[str] = []
    if families & {"gemm", "attention", "mla"}:
        names += ["energy_scale" if power else "sustained_clock_mhz", "tensor_issue_efficiency"]
    if coupling and families & {"attention", "mla"}:
        names.append("tensor_cuda_overlap")
    if "stream" in families:
        names.append("hbm_bandwidth_fraction")
    if small_times:
        names.append("launch_overhead_ns")
    return names


def _arch_with(base: Arch, values: dict[str, float], origin: str = "calibrated") -> Arch:
    cal = base.calibration.model_dump()
    cal.update(values)
    cal["origin"] = origin
    return with_calibration(base, cal)


def _select(rows: list[Measurement], arch_id: str, max_rows: int,
            dropped: dict[int, str] | None = None) -> tuple[list[Measurement], int]:  # fmt: skip
    """The rows of ``arch_id`` to fit on (at most ``max_rows``, spread over families and times) and how many
    were usable; ``dropped`` collects why each other row of the arch cannot be used (malformed, no time)."""
    from gpusim.arch import resolve_arch_id
    from gpusim.errors import UnknownNameError

    usable = []
    for m in rows:
        try:
            if resolve_arch_id(m.arch) != arch_id:
                continue
        except UnknownNameError:
            continue
        reason = precheck(m)
        if reason is None:
            try:
                measured_time_us(m)
            except (ValueError, KeyError) as exc:
                reason = f"no measured time: {exc}"
        if reason is not None:
            if dropped is not None:
                dropped[m.index] = reason
            continue
        usable.append(m)
    if not max_rows or len(usable) <= max_rows:
        return usable, len(usable)
    ordered = sorted(usable, key=lambda m: (family_of(m.schedule), measured_time_us(m), m.index))
    if max_rows == 1:
        picks = [(len(ordered) - 1) // 2]
    else:
        picks = sorted({round(i * (len(ordered) - 1) / (max_rows - 1)) for i in range(max_rows)})
    return sorted((ordered[i] for i in picks), key=lambda m: m.index), len(usable)


def _model(x: np.ndarray, rows: list[FitRow], mult: list[FitParam], add: FitParam | None, xc: np.ndarray,
           launch_c_us: float) -> np.ndarray:  # fmt: skip
    """Predicted times (us) of ``rows`` at x, linearised (in log time) around the centre xc."""
    k = len(mult)
    dx = x[:k] - xc[:k]
    out = np.empty(len(rows))
    for i, r in enumerate(rows):
        kernel = max(r.base_us - launch_c_us, 1e-6) * math.exp(float(r.elasticity @ dx))
        out[i] = kernel + (x[k] / 1000.0 if add is not None else launch_c_us)
    return out


def _solve(rows: list[FitRow], mult: list[FitParam], add: FitParam | None, xc: np.ndarray, x0: np.ndarray,
           launch_c_us: float) -> np.ndarray:  # fmt: skip
    """Bounded least squares on log error around the centre xc, pulled weakly to the datasheet x0."""
    if not len(xc):  # nothing left to fit (microbenchmarks fixed every parameter the rows identify)
        return xc.copy()
    lo = np.array([math.log(p.lo) for p in mult] + ([add.lo] if add else []))
    hi = np.array([math.log(p.hi) for p in mult] + ([add.hi] if add else []))
    meas = np.log([r.measured_us for r in rows])
    scale = np.array([1.0] * len(mult) + ([1000.0] if add else []))
    # a trust region: one linearisation is believed within TRUST_LOG_STEP of each multiplicative parameter
    lo = np.maximum(lo, np.concatenate([xc[: len(mult)] - TRUST_LOG_STEP, lo[len(mult) :]]))
    hi = np.minimum(hi, np.concatenate([xc[: len(mult)] + TRUST_LOG_STEP, hi[len(mult) :]]))

    def resid(z: np.ndarray) -> np.ndarray:
        x = z * scale
        pred = _model(x, rows, mult, add, xc, launch_c_us)
        prior = PRIOR_WEIGHT * (x[: len(mult)] - x0[: len(mult)])
        return np.concatenate([np.log(pred) - meas, prior])

    margin = 0.01 * (hi - lo)  # start strictly inside the bounds (trf stalls on a bound)
    start = np.clip(xc, lo + margin, hi - margin) / scale
    sol = least_squares(resid, start, bounds=(lo / scale, hi / scale), method="trf", x_scale=1.0)
    return sol.x * scale


def _fit_events(fr: FitRow) -> int:
    """The events a row's prediction simulated in detail (its parts together): what every further point
    of the fit costs for it."""
    return sum(part.events for part in fr.parts)


def _secant_update(fit_rows: list[FitRow], simulated: list[int], step: np.ndarray, before: dict[int, float],
                   now: dict[int, float], moved: set[int]) -> None:  # fmt: skip
    """Broyden's update of each row's simulated elasticities from the step the fit just took: the
    elasticities along ``step`` become what the row's two simulations say (its log kernel time moved by
    ``log now - log before``, less the part the analytic elasticities account for); across it they stay."""
    s = step[simulated]
    ss = float(s @ s)
    if ss < 1e-12:
        return  # only the analytic parameters moved: nothing new about the others
    analytic = [j for j in range(len(step)) if j not in simulated]
    for fr in fit_rows:
        if fr.m.index not in moved:
            continue
        y = math.log(now[fr.m.index]) - math.log(before[fr.m.index])
        y -= sum(float(fr.elasticity[j] * step[j]) for j in analytic)
        e = fr.elasticity[simulated]
        fr.elasticity[simulated] = e + ((y - float(e @ s)) / ss) * s


def _still_moving(mult: list[FitParam], x: np.ndarray, last_step: np.ndarray, iterations: int) -> list[str]:
    """The multiplicative parameters the last iteration still moved (the fit stopped at MAX_ITERS, not at
    a fixed point): their optimum lies further that way, by at least as much again where the step was
    the whole trust region."""
    out = []
    for i, p in enumerate(mult):
        step = float(last_step[i]) if i < len(last_step) else 0.0
        if abs(step) < 0.01:
            continue
        whole = abs(step) >= TRUST_LOG_STEP - 1e-6
        out.append(f"{p.name}={math.exp(float(x[i])):.4g} still moving {'down' if step < 0 else 'up'} "
                   f"(x{math.exp(step):.3g} in the last of {iterations} iterations"
                   + (", the whole trust region: not converged" if whole else "") + ")")  # fmt: skip
    return out


def _values(x: np.ndarray, mult: list[FitParam], add: FitParam | None) -> dict[str, float]:
    vals = {p.name: float(math.exp(x[i])) for i, p in enumerate(mult)}
    if add is not None:
        vals[add.name] = float(x[len(mult)])
    return vals


def _rows_pushing(fit_rows: list[FitRow], after: dict[int, float], i: int, p: FitParam, side: str,
                  most: int = 3) -> str:  # fmt: skip
    """The rows whose error would shrink if ``p`` moved past its ``side`` bound, strongest first: the
    sign of residual x elasticity (d log t / d log p; for the additive launch overhead, 1 / t)."""
    pulls = []
    for fr in fit_rows:
        t = after.get(fr.m.index)
        if t is None or t <= 0:
            continue
        residual = math.log(t / fr.measured_us)
        slope = 1.0 / t if p.additive else float(fr.elasticity[i])
        outward = -residual * slope if side == "upper" else residual * slope
        if outward > 0:
            pulls.append((outward, fr, residual))
    pulls.sort(key=lambda e: (-e[0], e[1].m.index))
    names = [
        f"row {fr.m.index} ({fr.m.file}:{fr.m.line}, {math.expm1(r) * 100:+.1f}%)"
        for _, fr, r in pulls[:most]
    ]
    if len(pulls) > most:
        names.append(f"{len(pulls) - most} more")
    return ", ".join(names)


def micro_fixed(
    rows: list[Measurement], base: Arch, names: list[str] | None
) -> tuple[dict[str, float], dict[str, Any]]:
    """The calibration fields the microbenchmark rows (``gpusim measure --micro``) of ``base`` fix, and
    the report of every constant they identify (gpusim.calibrate.micro.constants). A field named in
    ``names`` (``--fit``) is fitted instead, and the report says so."""
    from gpusim.calibrate.micro.constants import (
        calibration_values,
        identify,
        malformed_micro_rows,
        micro_rows,
    )

    mine = micro_rows(rows, base.id)
    malformed = malformed_micro_rows(rows, base.id)
    if not mine:
        return {}, ({"rows": 0, "files": [], "constants": [], "applied": {}, "notes": {}, "malformed": malformed}
                    if malformed else {})  # fmt: skip
    constants = identify(mine, base)
    power = "power" in mechanisms_of(base)
    values = calibration_values(constants, power)
    notes: dict[str, str] = {}
    if "sustained_clock_mhz" in values:
        hi = base.clocks.boost_clock_mhz
        if values["sustained_clock_mhz"] > hi:
            notes["sustained_clock_mhz"] = (
                f"measured {values['sustained_clock_mhz']:.0f} MHz held at the max boost {hi:g}"
            )
            values["sustained_clock_mhz"] = hi
    if power and any(c.maps_to == "calibration.sustained_clock_mhz" for c in constants):
        notes["sustained_clock_mhz"] = "not applied: with the power model on the clock is an output"
    for name in list(values):
        if names is not None and name in names:
            notes[name] = f"fitted (--fit names it) instead of the measured {values.pop(name):.4g}"
    report = {"rows": len(mine), "files": sorted({m.file for m in mine}),
              "constants": [c.as_dict() for c in constants],
              "applied": {k: round(x, 4) for k, x in values.items()}, "notes": notes, "malformed": malformed}  # fmt: skip
    return values, report


def calibrate(rows: list[Measurement], base: Arch, names: list[str] | None = None,
              max_rows: int = MAX_FIT_ROWS, on_progress: Any = None, use_micro: bool = True,
              jobs: int = 1, cache_dir: str | None = None,
              max_fit_events: int | None = None, jacobian: str = "broyden",
              max_iterations: int = MAX_ITERS) -> dict[str, Any]:  # fmt: skip
    """Fit ``base``'s calibration block to its rows; returns the block, provenance and report.
    ``on_progress(simulations, 0)`` is called after each simulation (progress bars). Microbenchmark rows
    among ``rows`` (``use_micro``) fix the calibration fields they measure (:func:`micro_fixed`).
    ``jobs``: processes the row predictions run in (the fitted values do not depend on it).
    ``cache_dir``: keep every simulation's result there and reuse those whose inputs are unchanged
    (gpusim.calibrate.store), so a stopped fit resumes where it stopped. ``max_fit_events``: rows whose
    prediction simulates more events than this in detail are left out of the fit (each is predicted once,
    at the start; every further point would cost as much again), with that reason among the skipped.
    ``jacobian``: ``fresh`` perturbs every simulated parameter at every iteration (one simulation per row
    and parameter); ``broyden`` (the default) does so at the first iteration only and then updates each
    row's elasticities from the step the fit took and the row's simulations at both ends (Broyden's
    secant update): every point the fit moves to is still simulated, only the slopes are estimated."""
    if jacobian not in ("broyden", "fresh"):
        raise InputError(f"calibrate: jacobian '{quote(jacobian, 40)}': expected broyden or fresh")
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, int) or max_iterations < 1:
        raise InputError(f"calibrate: max_iterations {max_iterations!r}: expected a whole number >= 1")
    t0 = time.perf_counter()
    fixed, micro_report = micro_fixed(rows, base, names) if use_micro else ({}, {})
    base = _arch_with(base, fixed, origin="datasheet")
    dropped: dict[int, str] = {}
    chosen, n_usable = _select(rows, base.id, max_rows, dropped)
    if not chosen:
        raise InputError(f"calibrate: no usable measured rows for {base.id}")
    pool = RowPool(jobs, on_progress=on_progress, cache_dir=cache_dir)
    base_outcomes = pool.base(chosen, base)
    base_results = [result for result, _ in base_outcomes]
    base_parts = {result.m.index: parts for result, parts in base_outcomes if isinstance(parts, list)}
    ok = [r for r in base_results if r.predicted_time_us is not None and r.measured_time_us]
    skipped = {**dropped, **{r.m.index: r.skipped for r in base_results if r.skipped}}
    if not ok:
        raise InputError(f"calibrate: none of the {len(chosen)} rows for {base.id} can be predicted; "
                         f"e.g. row {base_results[0].m.index}: {base_results[0].skipped}")  # fmt: skip
    families = {r.family for r in ok}
    power = "power" in mechanisms_of(base)
    if names is None:
        names = default_fit_names(families, any((r.measured_time_us or 0) < 30 for r in ok), power,
                                  coupling="pipe_coupling" in mechanisms_of(base))  # fmt: skip
        names = [n for n in names if n not in fixed]
    if power and "sustained_clock_mhz" in names:
        raise InputError("calibrate: with the power model on (--model +power) the clock is an output; "
                         "fit energy_scale instead of sustained_clock_mhz")  # fmt: skip
    specs = fit_params(base)
    mult = [specs[n] for n in names if not specs[n].additive]
    add = next((specs[n] for n in names if specs[n].additive), None)
    x0 = np.array([math.log(p.start(base)) for p in mult] + ([add.start(base)] if add else []))
    launch0_us = base.calibration.launch_overhead_ns / 1000.0

    # Gauss-Newton outer loop: linearise at the current point (one pinned simulation per row and
    # parameter, stepping 10% towards the lower bound), solve, move, until the step is under 1%. With
    # the power model on, the energy scale's elasticities come from the clock sensitivities of the
    # point's own fixed points (it changes nothing but the clock), and every other fixed point starts
    # at the clock the point found.
    # a row's base time is its parts' (pinned to the search's choices, as every perturbed point is)
    def base_time_us(r: Any) -> float:
        parts = base_parts.get(r.m.index)
        return sum(part.time_us for part in parts) if parts else r.predicted_time_us

    fit_rows = [FitRow(r.m, r.family, r.measured_time_us, base_time_us(r), r.pins or (), np.zeros(len(mult)),
                       base_parts.get(r.m.index, []))
                for r in ok]  # fmt: skip
    if max_fit_events:
        costly = [fr for fr in fit_rows if _fit_events(fr) > max_fit_events]
        for fr in costly:
            skipped[fr.m.index] = (
                f"left out of the fit: its prediction simulates {_fit_events(fr):,} events in detail, over "
                f"--max-fit-events {max_fit_events:,} (gpusim validate predicts it at the fitted point)"
            )
        fit_rows = [fr for fr in fit_rows if _fit_events(fr) <= max_fit_events]
        if not fit_rows:
            raise InputError(
                f"calibrate: every usable row of {base.id} simulates more than --max-fit-events "
                f"{max_fit_events:,} events (the cheapest: {min(_fit_events(fr) for fr in costly):,})"
            )
    used = {fr.m.index for fr in fit_rows}
    x = x0.copy()
    iterations = 0
    last_step = np.zeros(len(mult))
    # the parameters whose elasticities come from simulations (finite differences, then secant updates)
    simulated = [j for j, p in enumerate(mult) if not (power and p.name == "energy_scale")]
    previous: tuple[np.ndarray, dict[int, float], set[int]] | None = None
    while iterations < max_iterations:
        iterations += 1
        point = _values(x, mult, add)
        arch_x = _arch_with(base, point, origin="datasheet")
        launch_c_us = (x[len(mult)] / 1000.0) if add else launch0_us
        todo = fit_rows if iterations > 1 else [fr for fr in fit_rows if not fr.parts]
        # the rows whose time at this point was simulated (at the first point: every row with parts)
        moved: set[int] = {fr.m.index for fr in fit_rows if fr.parts} if iterations == 1 else set()
        for fr, got in zip(todo, pool.parts([PartsRequest(fr.m, arch_x, fr.pins, fr.starts()) for fr in todo]),
                           strict=True):  # fmt: skip
            if isinstance(got, list):
                fr.parts = got
                fr.base_us = sum(part.time_us for part in got)
                moved.add(fr.m.index)
        for j in range(len(mult)):
            if j not in simulated:
                for fr in fit_rows:
                    kernel_us = max(fr.base_us - launch_c_us, 1e-9)
                    fr.elasticity[j] = energy_elasticity(
                        fr, arch_x.calibration.launch_overhead_ns / 1000.0, kernel_us
                    )
        kernels = {fr.m.index: max(fr.base_us - launch_c_us, 1e-9) for fr in fit_rows}
        if jacobian == "broyden" and previous is not None:
            both = moved & previous[2]  # a row skipped at either end (a work limit) keeps its slopes
            _secant_update(
                fit_rows, simulated, x[: len(mult)] - previous[0][: len(mult)], previous[1], kernels, both
            )
        else:
            for j in simulated:
                p = mult[j]
                value = point[p.name]
                factor = 1 - STEP if value * (1 - STEP) >= p.lo else 1 + STEP
                arch_j = _arch_with(base, {**point, p.name: value * factor}, origin="datasheet")
                perturbed = pool.parts([PartsRequest(fr.m, arch_j, fr.pins, fr.starts()) for fr in fit_rows])
                for fr, got in zip(fit_rows, perturbed, strict=True):
                    t = sum(part.time_us for part in got) if isinstance(got, list) else fr.base_us
                    k0 = kernels[fr.m.index]
                    fr.elasticity[j] = (math.log(max(t - launch_c_us, 1e-9)) - math.log(k0)) / math.log(
                        factor
                    )
        previous = (x.copy(), kernels, moved)
        x_new = _solve(fit_rows, mult, add, x, x0, launch_c_us)
        step = np.abs(x_new[: len(mult)] - x[: len(mult)])
        last_step = x_new[: len(mult)] - x[: len(mult)]
        x = x_new
        if not len(step) or float(step.max()) < 0.01:
            break
    xc = x.copy()
    values = _values(x, mult, add)
    fitted = _arch_with(base, values)
    launch_c_us = (x[len(mult)] / 1000.0) if add else launch0_us

    # error before and after (after: re-simulated at the fitted point, same schedule choices)
    before = {r.m.index: r.predicted_time_us for r in ok if r.m.index in used}
    after: dict[int, float] = {}
    for fr, got in zip(
        fit_rows, pool.parts([PartsRequest(fr.m, fitted, fr.pins) for fr in fit_rows]), strict=True
    ):
        if isinstance(got, list):
            after[fr.m.index] = sum(part.time_us for part in got)
    # recentre the linear model on the fitted point's true times for cross-validation
    for fr in fit_rows:
        if fr.m.index in after:
            fr.base_us = after[fr.m.index]

    # cross-validation on the linearised model
    sources = sorted({fr.m.source for fr in fit_rows})
    if len(sources) >= 2:
        folds = [[i for i, fr in enumerate(fit_rows) if fr.m.source == s] for s in sources]
        cv_kind = f"leave-one-source-out ({len(sources)} sources)"
    else:
        k = min(5, len(fit_rows))
        folds = [[i for i in range(len(fit_rows)) if i % k == f] for f in range(k)]
        cv_kind = f"{k}-fold (rows by index modulo {k})"
    cv_pred: dict[int, float] = {}
    if len(fit_rows) >= 2:
        for fold in folds:
            train = [fr for i, fr in enumerate(fit_rows) if i not in fold]
            if not train:
                continue
            xf = _solve(train, mult, add, xc, x0, launch_c_us)
            held = [fit_rows[i] for i in fold]
            for fr, t in zip(held, _model(xf, held, mult, add, xc, launch_c_us), strict=True):
                cv_pred[fr.m.index] = float(t)

    def stats_by_family(pred: dict[int, float]) -> dict[str, Any]:
        out: dict[str, list[float]] = defaultdict(list)
        for fr in fit_rows:
            if fr.m.index in pred:
                out[fr.family].append(error_pct(pred[fr.m.index], fr.measured_us))
        allv = [e for v in out.values() for e in v]
        return {**{f: error_stats(v) for f, v in sorted(out.items())}, "all": error_stats(allv)}

    residual_src = cv_pred if len(cv_pred) >= 3 else after
    resid: dict[str, list[float]] = defaultdict(list)
    for fr in fit_rows:
        if fr.m.index in residual_src:
            resid[fr.family].append(math.log(fr.measured_us / residual_src[fr.m.index]))

    at_bound = []
    for i, p in enumerate(mult + ([add] if add else [])):
        v = math.exp(x[i]) if not p.additive else x[i]
        if abs(v - p.lo) <= 1e-3 * max(abs(p.lo), 1.0) or abs(v - p.hi) <= 1e-3 * max(abs(p.hi), 1.0):
            side = "lower" if abs(v - p.lo) < abs(v - p.hi) else "upper"
            pushers = _rows_pushing(fit_rows, after, i, p, side)
            at_bound.append(f"{p.name}={v:.4g} at its {side} bound [{p.lo:.4g}, {p.hi:.4g}]"
                            + (f"; pushed there by {pushers}" if pushers else ""))  # fmt: skip
    provenance = {
        "date": dt.datetime.now(dt.UTC).date().isoformat(),
        "fitted": names,
        "model": sorted(mechanisms_of(base)),
        "model_known": sorted(MECHANISMS),
        "bounds": {p.name: [round(p.lo, 4), round(p.hi, 4)] for p in [*mult, *([add] if add else [])]},
        "at_bound": at_bound,
        "not_converged": _still_moving(mult, x, last_step, iterations),
        "rows_used": len(fit_rows),
        "iterations": iterations,
        "jacobian": jacobian,
        "rows_usable": n_usable,
        "row_indices": [fr.m.index for fr in fit_rows],
        "files": sorted({fr.m.file for fr in fit_rows}),
        "sources": sources,
        "error_before": stats_by_family(before),
        "error_after": stats_by_family(after),
        "cross_validation": {"method": cv_kind, **stats_by_family(cv_pred)},
        "residuals": {f: log_residual_quantiles(v) for f, v in sorted(resid.items()) if v},
        "residuals_from": "cross-validation" if residual_src is cv_pred else "fitted rows",
    }
    if micro_report:
        provenance["micro"] = {"files": micro_report["files"], "applied": micro_report["applied"]}
    cal = fitted.calibration.model_dump()
    for key, value in list(cal.items()):
        if isinstance(value, float):
            cal[key] = round(value, 4)
    cal["provenance"] = provenance
    return {
        "arch": base.id,
        "calibration": cal,
        "skipped": skipped,
        "wall_s": round(time.perf_counter() - t0, 2),
        "simulations": pool.simulations,
        "reused": pool.reused,
        "micro": micro_report,
    }
