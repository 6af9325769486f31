"""From a resolved schedule on an arch (with its costs) to a :class:`~gpusim.result.Prediction`.

``predict_resolved`` is the one place a simulation becomes a prediction; ``gpusim.predict`` resolves
names, paths and costs and calls it, and so does the ``auto:*`` search for each candidate.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from gpusim.arch import Arch
from gpusim.calibrate.intervals import prediction_interval
from gpusim.costs import overlay_file_of
from gpusim.errors import InputError
from gpusim.mechanisms import mechanisms_of
from gpusim.report.attribution import attribute
from gpusim.result import Prediction
from gpusim.schedule.ir import Schedule
from gpusim.sim.engine import SimRun, simulate
from gpusim.sim.gcpolicy import fewer_collections
from gpusim.sim.hardware import issued_tensor_flops
from gpusim.sim.limits import DEFAULT_MAX_EVENTS
from gpusim.sim.power import ClockStart, issues_tensor_work, sustained_clock

_SIMULATE_TAKES_EXACT = "exact" in inspect.signature(simulate).parameters

UTILIZATION_PIPES = ("tensor", "fp32", "sfu", "cvt", "int", "issue", "lsu", "tmem")


def predict_resolved(
    sched: Schedule,
    arch: Arch,
    *,
    record: bool = False,
    exact: bool = False,
    attribute: bool = True,
    deadline_s: float | None = None,
    max_events: int | None = DEFAULT_MAX_EVENTS,
    interval_name: str | None = None,
    horizon_us: float | None = None,
    horizon_flops_per_us: float | None = None,
    horizon_equal_units: bool = False,
    horizon_l2_read_bytes: float | None = None,
    replay: str = "early",
    power_start: ClockStart | None = None,
) -> Prediction:
    """Simulate ``sched`` on ``arch`` (whose calibration block says which costs) and summarize.

    ``attribute`` records the spans the critical-path attribution needs (verdict, bottleneck); off,
    the prediction is time-only (faster; for fits and searches). ``record`` keeps the simulation on
    ``Prediction.timeline`` for traces and plots. ``interval_name`` is the name whose family picks the
    interval's residuals (default: the schedule's name). ``horizon_us``: raise HorizonReached as soon as
    the predicted time (kernel plus launch) is known to reach it (a search's best so far); applied where
    the power model is off (one simulation at a fixed clock); ``horizon_flops_per_us``: with it, a chip
    tensor rate no simulation can beat, to stop sooner (``simulate``'s ``horizon_flops_per_ns``), per SM
    group with ``horizon_equal_units``, and the L2 bytes left of ``horizon_l2_read_bytes`` (``simulate``'s).
    ``replay``: when the untimed deadlock replay runs (``simulate``'s argument); the power model's later
    simulations of the same schedule skip it. ``power_start``: where the power model's fixed point starts (a calibration's nearby point;
    default: the ceiling)."""
    kwargs: dict[str, Any] = {
        "record": True if record else "spans" if attribute else False,
        "deadline_s": deadline_s,
        "max_events": max_events,
    }
    if _SIMULATE_TAKES_EXACT:
        kwargs["exact"] = exact
    if "power" not in mechanisms_of(arch):
        if horizon_us is not None:
            kwargs["horizon_ns"] = horizon_us * 1000.0 - arch.calibration.launch_overhead_ns
            if horizon_flops_per_us:
                kwargs["horizon_flops_per_ns"] = horizon_flops_per_us / 1000.0
                kwargs["horizon_equal_units"] = horizon_equal_units
            kwargs["horizon_l2_read_bytes"] = horizon_l2_read_bytes
        with fewer_collections():
            run = simulate(sched, arch, replay=replay, **kwargs)
            return summarize(run, keep_timeline=record, attributed=attribute, interval_name=interval_name)
    replays = [replay]

    def run_at(clock_mhz: float) -> SimRun:
        run = simulate(sched, at_clock(arch, clock_mhz), replay=replays[-1], **kwargs)
        replays.append("none")  # the clock changes nothing the replay reads
        return run

    with fewer_collections():
        solution = sustained_clock(arch, sched, run_at, start=power_start)
    prediction = summarize(
        solution.run, keep_timeline=record, attributed=attribute, interval_name=interval_name
    )
    sensitivity = solution.sensitivity()
    return dataclasses.replace(prediction, power_w=round(solution.power_w, 2), sim={
        **prediction.sim, "power_simulations": solution.simulations, "power_limited": solution.limited,
        "power_trials": [[round(f, 2), round(w, 2)] for f, w in solution.trials],
        "power_sensitivity": None if sensitivity is None else {
            "power_slope": round(sensitivity.power_slope, 4), "time_slope": round(sensitivity.time_slope, 4)}})  # fmt: skip


def at_clock(arch: Arch, clock_mhz: float) -> Arch:
    """``arch`` with every SM running at ``clock_mhz`` (its calibration's sustained clock set)."""
    cal = arch.calibration.model_copy(update={"sustained_clock_mhz": float(clock_mhz)})
    return arch.model_copy(update={"calibration": cal})


PEAK_HEADROOM = 1.25
"""How far above the arch's fastest dense peak (at its listed tensor clock) a prediction may land before
it is refused: room for a power-model clock above the listed one."""


def _check_work_done(sched: Any, arch: Any, kernel_tflops: float) -> None:
    """Refuse a prediction faster than the hardware can issue the problem's FLOPs: the schedule did less
    work than its problem counts (``--set KT=0``, a tile or MMA size of 0)."""
    fastest = arch.fastest_peak_tflops()
    if sched.flops > 0 and kernel_tflops > fastest * PEAK_HEADROOM:
        raise InputError(
            f"{sched.name} on {arch.id}: the simulated kernel would run at {kernel_tflops:,.0f} TFLOPS, above "
            f"the {fastest:,.0f} TFLOPS of the arch's fastest dtype: the schedule does less work than the "
            f"{sched.flops:.3g} FLOPs its problem counts (a loop count, tile or MMA size of 0?)"
        )


ISSUED_FLOPS_TOLERANCE = 1e-6
"""Relative shortfall of the tensor FLOPs a kernel issued against its problem's count that is rounding."""


def _check_tensor_work_issued(run: SimRun) -> None:
    """Refuse a kernel with MMAs that issued fewer tensor FLOPs than its problem counts: an override made the
    schedule skip work (``--set KT=0`` runs no mainloop yet reports the problem's FLOPs). Every shipped
    schedule issues at least the FLOPs it counts (padding and causal diagonals issue more)."""
    sched = run.sched
    if sched.flops <= 0 or not issues_tensor_work(sched):
        return
    issued = issued_tensor_flops(run.sms)
    if issued < sched.flops * (1 - ISSUED_FLOPS_TOLERANCE):
        raise InputError(
            f"{sched.name} on {run.arch.id}: the kernel issued {issued:.4g} tensor FLOPs of the {sched.flops:.4g} "
            f"its problem counts ({issued / sched.flops:.1%}): the schedule skips work (a loop count, tile or "
            f"MMA size set too small?)"
        )


def summarize(
    run: SimRun, *, keep_timeline: bool = False, attributed: bool = True, interval_name: str | None = None
) -> Prediction:
    """Turn a simulation into a prediction (attribution only from a recorded simulation)."""
    arch, sched = run.arch, run.sched
    launch_ns = arch.calibration.launch_overhead_ns
    kernel_ns = max(run.kernel_ns, 1e-9)
    total_ns = kernel_ns + launch_ns
    sms_total = arch.sm_count
    util: dict[str, float] = {}
    for pipe in UTILIZATION_PIPES:
        busy = sum(sm.pipe_busy_ns(pipe) * sm.weight for sm in run.sms)
        util[pipe] = busy / (sms_total * kernel_ns)
    coupled = sum(getattr(sm.servers.get("tensor"), "coupled_ns", 0.0) * sm.weight for sm in run.sms)
    if coupled > 0:  # the pipe_coupling mechanism at an overlap below 1
        util["tensor_coupled"] = coupled / (sms_total * kernel_ns)
    tma_busy = sum(sm.ingress.busy_ns * sm.weight for sm in run.sms if sm.ingress is not None)
    util["tma"] = tma_busy / (sms_total * kernel_ns)
    net = run.net
    hbm_bytes = net.hbm_read_bytes + net.hbm_write_bytes
    l2_bytes = net.l2_read_bytes + net.l2_write_bytes
    util["hbm"] = hbm_bytes / (kernel_ns * arch.memory.hbm_bandwidth_bytes_per_s / 1e9)
    util["l2"] = l2_bytes / (kernel_ns * arch.memory.l2_bandwidth_bytes_per_s / 1e9)
    hit = 1 - net.hbm_read_bytes / net.l2_read_bytes if net.l2_read_bytes > 0 else 0.0
    peak = arch.dense_peak_tflops(sched.metrics_dtype)
    if peak is None and sched.metrics_dtype == "fp32":  # CUDA-core (SIMT) work: the FP32 pipe bounds it
        peak = arch.fp32_peak_tflops()
    compute_ns = sched.flops / (peak * 1e3) if peak else 0.0
    # Bytes a resident operand starts with in L2 (the previous kernel's output) need no HBM trip; every
    # byte still crosses the L2.
    from_hbm = sched.compulsory_bytes - min(run.resident_bytes, sched.compulsory_bytes)
    memory_ns = max(from_hbm / (arch.memory.hbm_bandwidth_bytes_per_s / 1e9),
                    sched.compulsory_bytes / (arch.memory.l2_bandwidth_bytes_per_s / 1e9))  # fmt: skip
    recorded = bool(run.sms) and run.sms[0].ingress is not None and run.sms[0].ingress.spans is not None
    attr = attribute(run) if attributed and recorded else None
    b = run.budgets
    occupancy = {
        "ctas_per_sm": b.ctas_per_sm,
        "warps_per_sm": b.warps_per_sm,
        "threads_per_cta": b.threads_per_cta,
        "units": run.plan.num_units,
        "waves": run.plan.num_waves,
        "cluster": list(sched.launch.cluster),
    }
    problem_keys = set(sched.problem_symbols)
    problem, params = {}, {}
    for key in sched.symbols:
        if key in problem_keys:
            problem[key] = sched.env[key]
        else:
            params[key] = sched.env[key]
    time_us = total_ns / 1000
    _check_work_done(sched, arch, sched.flops / kernel_ns / 1e3)
    _check_tensor_work_issued(run)
    return Prediction(
        schedule=sched.name,
        arch=arch.id,
        problem=problem,
        params=params,
        time_us=time_us,
        tflops=sched.flops / total_ns / 1e3,
        hbm_gbps=hbm_bytes / total_ns,
        l2_gbps=l2_bytes / total_ns,
        l2_hit_rate=max(0.0, hit),
        hbm_read_bytes=net.hbm_read_bytes,
        hbm_write_bytes=net.hbm_write_bytes,
        utilization={k: round(v, 4) for k, v in util.items()},
        occupancy=occupancy,
        budgets=b.as_dict(),
        bottleneck=attr.bottleneck if attr else None,
        verdict=attr.verdict if attr else None,
        attribution=attr.shares if attr else None,
        interval=prediction_interval(arch, interval_name or sched.name, time_us),
        costs=arch.calibration.origin,
        overlay=overlay_file_of(arch),
        clock_mhz=arch.sustained_clock_mhz,
        model=sorted(mechanisms_of(arch)),
        roofline_us=max(compute_ns, memory_ns) / 1000,
        sim={
            "wall_s": round(run.wall_s, 4),
            "events": run.events,
            "skipped_events": run.skipped_events,
            "fast_forwards": len(run.jumps),
            "exact": run.exact,
            "simulated_sm_groups": len(run.plan.groups),
        },
        timeline=run if keep_timeline else None,
    )
