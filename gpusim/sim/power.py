"""The clock a kernel sustains: a board power model over a simulation's counters, and a fixed point.

The simulation counts what the kernel did (tensor FLOPs, CUDA-core and SFU lane operations,
shared-memory, L2 and HBM bytes); this module turns the counts into average power at a clock and
finds the highest clock whose power fits under the board limit. It is a post-pass: it never enters
the event loop, so the fast-forward stays exact; it re-simulates at each trial clock.

Power at clock f (``average_power_w``)::

    P(f) = P_static + s * ( sum_core e_i * n_i * (f / f_boost)^2  +  e_hbm * n_hbm ) / T(f)

- ``e_i`` are the arch's energies per operation at the max boost clock (``Arch.power``), ``n_i`` the
  counts, ``T(f)`` the simulated kernel time at f, ``s`` the calibration's ``energy_scale``.
- Voltage-frequency law: dynamic energy per operation goes as V^2, and V is taken proportional to
  f over the DVFS range (the "cubic law", P_dynamic ~ f V^2 ~ f^3 for a kernel whose time goes as
  1/f). Real V(f) curves flatten at the low end (a floor voltage), so the cubic law overstates how
  much power a lower clock saves there; the clocks it finds are upper bounds in that regime.
- HBM energy (memory rail, fixed memory clock) does not scale with the SM clock; static power is
  taken as constant.

The clock (``sustained_clock``): the ceiling is the clock the vendor quotes the tensor-core peak at
(``clocks.tensor_clock_mhz``) for kernels that issue tensor-core work, else the max boost clock
(NVIDIA: H100 "1.83 GHz low precision, 1.98 GHz high precision"; memory-bound and FP64 kernels hold
1980 MHz on H200, gpu-benches roofline logs). If the kernel fits under the limit at the ceiling, it
runs there (a kernel with no work always does). Otherwise the clock is lowered: first by the cubic law
(f1 = f0 * ((L - P_s) / (P0 - P_s))^(1/3)), then by secant steps on log P_dynamic against log f,
then, once one trial is over the limit and one under, by interpolating log P_dynamic against log f
between the nearest two; each trial is a simulation. It stops when the power is within
``POWER_TOLERANCE`` (0.5%) of the limit or the clock would move by less than ``TOLERANCE`` / 2, after at
most ``MAX_SIMULATIONS`` simulations, and answers the highest clock tried whose power fits (within
the tolerance). The floor is ``FLOOR_FRACTION`` of the max boost clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpusim.arch import Arch, Power
from gpusim.schedule.program import walk

if TYPE_CHECKING:
    from gpusim.schedule.ir import Schedule
    from gpusim.sim.engine import SimRun

TOLERANCE = 0.005
"""Converged when the clock moves by less than this fraction."""
POWER_TOLERANCE = 0.005
"""Converged when the average power is within this fraction of the limit."""
MAX_SIMULATIONS = 5
"""Simulations the fixed point may run (the first at the ceiling included)."""
FLOOR_FRACTION = 0.3
"""Lowest clock the power manager may choose, as a fraction of the max boost clock."""


@dataclass(frozen=True)
class Activity:
    """What a kernel did, summed over all SMs: the counts the power model charges."""

    tensor_flops: float
    """Tensor-core FLOPs (as issued, padding included)."""
    tensor_dtype: str
    """The dtype the tensor FLOPs are charged at (the schedule's metrics dtype)."""
    cuda_ops: float
    """CUDA-core lane operations (fp32, int and cvt pipes)."""
    sfu_ops: float
    """SFU (MUFU) lane results."""
    smem_bytes: float
    """Shared-memory bytes: lds/sts, TMA and cp.async landings and stores, TMEM traffic."""
    l2_bytes: float
    """Bytes through the L2 (reads and writes)."""
    hbm_bytes: float
    """Bytes to and from HBM."""
    kernel_ns: float
    """Kernel time (launch overhead excluded)."""


def activity(run: SimRun) -> Activity:
    """The counters of a finished simulation (fast-forwarded spans included)."""
    r = None
    tensor = cuda = sfu = smem = 0.0
    for sm in run.sms:
        r = sm.rates
        w = sm.weight
        tensor += sm.tensor_flops * w
        cuda += w * (
            sm.pipe_busy_ns("fp32") * r.fp32_ops_per_ns
            + sm.pipe_busy_ns("int") * r.int_per_ns
            + sm.pipe_busy_ns("cvt") * r.cvt_per_ns
        )
        sfu += w * sm.pipe_busy_ns("sfu") * r.ex2_per_ns
        moved = sum(p.bytes_moved for p in (sm.ingress, sm.egress) if p is not None)
        smem += w * (
            sm.pipe_busy_ns("lsu") * r.smem_bytes_per_ns
            + sm.pipe_busy_ns("tmem") * r.tmem_bytes_per_ns
            + moved
        )
    net = run.net
    return Activity(
        tensor_flops=tensor,
        tensor_dtype=run.sched.metrics_dtype,
        cuda_ops=cuda,
        sfu_ops=sfu,
        smem_bytes=smem,
        l2_bytes=net.l2_read_bytes + net.l2_write_bytes,
        hbm_bytes=net.hbm_read_bytes + net.hbm_write_bytes,
        kernel_ns=run.kernel_ns,
    )


def tensor_pj_per_flop(arch: Arch, power: Power, dtype: str) -> float:
    """Energy per tensor FLOP of ``dtype``: the FP16 figure times the FP16 rate over the dtype's rate
    (equal energy per tensor-core clock at full rate); the FP16 figure when the dtype has no path."""
    fp16 = arch.tensor_flops_per_clk_per_sm("fp16") or arch.tensor_flops_per_clk_per_sm("bf16")
    rate = arch.tensor_flops_per_clk_per_sm(dtype)
    if not fp16 or not rate:
        return power.tensor_fp16_pj_per_flop
    return power.tensor_fp16_pj_per_flop * fp16 / rate


def dynamic_energy_pj(arch: Arch, act: Activity, clock_mhz: float) -> float:
    """Dynamic energy (pJ) of the kernel's work at ``clock_mhz`` (energy scale applied)."""
    p = arch.power
    assert p is not None
    v2 = (clock_mhz / arch.clocks.boost_clock_mhz) ** 2
    core = (
        tensor_pj_per_flop(arch, p, act.tensor_dtype) * act.tensor_flops
        + p.fp32_pj_per_op * act.cuda_ops
        + p.sfu_pj_per_op * act.sfu_ops
        + p.smem_pj_per_byte * act.smem_bytes
        + p.l2_pj_per_byte * act.l2_bytes
    )
    return arch.calibration.energy_scale * (core * v2 + p.hbm_pj_per_byte * act.hbm_bytes)


def average_power_w(arch: Arch, act: Activity, clock_mhz: float) -> float:
    """Average board power (W) over the kernel at ``clock_mhz`` (1 pJ/ns = 1 mW)."""
    p = arch.power
    assert p is not None
    if act.kernel_ns <= 0:
        return p.static_power_w
    return p.static_power_w + dynamic_energy_pj(arch, act, clock_mhz) / act.kernel_ns / 1000.0


def issues_tensor_work(sched: Schedule) -> bool:
    """Whether any role of the schedule issues an MMA."""
    return any(s.op == "mma" for role in sched.roles.values() for s, _ in walk(role.program))


def clock_ceiling_mhz(arch: Arch, sched: Schedule) -> float:
    """The highest clock the kernel may run at: the tensor-peak clock with tensor work, else max boost."""
    boost = arch.clocks.boost_clock_mhz
    return min(arch.clocks.tensor_clock_mhz, boost) if issues_tensor_work(sched) else boost


@dataclass(frozen=True)
class ClockStart:
    """Where a fixed point may start instead of at the ceiling: the clock found for a nearby model point
    (a calibration's perturbed parameter) and the slope of log P_dynamic against log f there."""

    clock_mhz: float
    power_slope: float


@dataclass(frozen=True)
class ClockSensitivity:
    """How a power-limited kernel answers a change of clock, from the two trials nearest its clock."""

    power_slope: float
    """d log P_dynamic / d log f (3 for a compute-bound kernel under the cubic law)."""
    time_slope: float
    """d log T / d log f (-1 compute-bound, 0 memory-bound)."""


@dataclass(frozen=True)
class ClockSolution:
    """The clock a kernel sustains, the simulation at that clock and the power it draws there."""

    clock_mhz: float
    run: SimRun
    power_w: float
    limited: bool
    """True when the power limit (not the ceiling) set the clock."""
    simulations: int
    trials: tuple[tuple[float, float], ...]
    """Every (clock MHz, power W) tried, in order."""
    trial_kernel_ns: tuple[float, ...] = ()
    """The simulated kernel time of each trial."""

    def sensitivity(self) -> ClockSensitivity | None:
        """The local slopes at the answer, from the two distinct trial clocks nearest it (None: one trial,
        e.g. a kernel that fits at the ceiling)."""
        p_static = self.run.arch.power.static_power_w if self.run.arch.power else 0.0
        seen: dict[float, tuple[float, float]] = {}
        for (f, w), t in zip(self.trials, self.trial_kernel_ns, strict=True):
            seen[f] = (w, t)
        if len(seen) < 2:
            return None
        near = sorted(seen, key=lambda f: (abs(math.log(f / self.clock_mhz)), f))[:2]
        (fa, (wa, ta)), (fb, (wb, tb)) = ((f, seen[f]) for f in near)
        span = math.log(fa / fb)
        dyn_a, dyn_b = max(wa - p_static, 1e-9), max(wb - p_static, 1e-9)
        return ClockSensitivity(
            math.log(dyn_a / dyn_b) / span, math.log(max(ta, 1e-9) / max(tb, 1e-9)) / span
        )


def sustained_clock(
    arch: Arch, sched: Schedule, run_at: Callable[[float], SimRun], start: ClockStart | None = None
) -> ClockSolution:
    """The highest clock (<= the ceiling) whose average power fits under the board limit; ``run_at(f)``
    simulates the kernel at f MHz. See the module doc for the iteration. ``start``: begin at that clock
    and slope instead of at the ceiling and the cubic law (a calibration's nearby points; the answer
    then agrees with a cold start's within the tolerances, not to the last digit)."""
    p = arch.power
    assert p is not None
    limit = p.board_power_limit_w
    ceiling = clock_ceiling_mhz(arch, sched)
    floor = FLOOR_FRACTION * arch.clocks.boost_clock_mhz
    runs: dict[float, tuple[SimRun, float]] = {}
    trials: list[tuple[float, float]] = []
    kernel_ns: list[float] = []

    def trial(f: float) -> float:
        run = run_at(f)
        watts = average_power_w(arch, activity(run), f)
        runs[f] = (run, watts)
        trials.append((f, watts))
        kernel_ns.append(run.kernel_ns)
        return watts

    def solution(f: float, limited: bool) -> ClockSolution:
        run, watts = runs[f]
        return ClockSolution(f, run, watts, limited, len(trials), tuple(trials), tuple(kernel_ns))

    f = ceiling
    slope = 3.0  # cubic law first: P_dynamic ~ f^3 when the time goes as 1/f
    if start is not None:
        f = min(max(start.clock_mhz, floor), ceiling)
        slope = min(max(start.power_slope, 0.2), 4.0)
    watts0 = trial(f)
    if f == ceiling and watts0 <= limit:
        return solution(ceiling, False)
    if f != ceiling and abs(watts0 - limit) <= POWER_TOLERANCE * limit:
        return solution(f, True)
    headroom = limit - p.static_power_w
    if headroom <= 0:  # nothing fits: the floor clock
        trial(floor)
        return solution(floor, True)

    def dyn(watts: float) -> float:
        return max(watts - p.static_power_w, 1e-9)

    for _ in range(MAX_SIMULATIONS - 1):
        over = [(g, w) for g, w in trials if w > limit]
        under = [(g, w) for g, w in trials if w <= limit]
        if over and under:  # bracketed: interpolate log P_dynamic against log f between the two nearest
            (f_hi, w_hi), (f_lo, w_lo) = min(over), max(under)
            if f_hi > f_lo:
                slope = min(max(math.log(dyn(w_hi) / dyn(w_lo)) / math.log(f_hi / f_lo), 0.2), 4.0)
            f_new = f_lo * (headroom / dyn(w_lo)) ** (1.0 / slope)
            f_new = min(max(f_new, f_lo), f_hi)
        else:
            f_new = f * (headroom / dyn(runs[f][1])) ** (1.0 / slope)
        f_new = min(max(f_new, floor), ceiling)
        last_fits = trials[-1][1] <= limit * (1 + POWER_TOLERANCE)
        if f_new in runs or (last_fits and abs(f_new - f) / f < TOLERANCE / 2):
            break
        watts_new = trial(f_new)
        if len(trials) >= 2 and not (over and under):
            prev = trials[-2]
            if f_new != prev[0]:  # a memory-bound kernel's power falls more slowly than f^3
                measured = math.log(dyn(watts_new) / dyn(prev[1])) / math.log(f_new / prev[0])
                slope = min(max(measured, 0.2), 4.0)
        f = f_new
        if abs(watts_new - limit) <= POWER_TOLERANCE * limit or f <= floor:
            break
    fitting = [g for g, w in trials if w <= limit * (1 + POWER_TOLERANCE)]
    best = max(fitting) if fitting else min(runs)
    return solution(best, best != ceiling or runs[best][1] > limit)
