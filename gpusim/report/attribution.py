"""Bottleneck attribution: how much of the kernel time each cause accounts for, and a one-line verdict.

Method (an approximation of the critical path, stated so it can be argued with):

1. The kernel time is launch overhead + simulated time. Launch overhead is its own cause.
2. The *tail wave* costs ``T - mean(end)``: the kernel end minus the SM-weighted mean of the times the
   SM groups finish. Perfectly balanced work would end at the mean, so the difference is the time
   lost to SMs that ran out of work while others still had tiles.
3. The SM group that finishes last carries the critical path. Its timeline up to the tail is split
   into elementary intervals and each is charged to the first cause that holds, in this order:
   tensor core busy; SFU busy; CUDA cores busy (fp32, conversions, integer); LSU / shared memory or
   TMEM busy; memory port busy (TMA, cp.async, ldg moving bytes); a role waiting on data from memory
   (the latency of loads in flight); anything else is a barrier, turnstile or latency wait.
   Work that overlaps the tensor core is hidden behind it, so it is not charged.

The shares add up to 1 (they are rounded so that the rounded values still do).

The bottleneck is the largest share, with one exception: when the tensor core leads but the busier
memory level (HBM or L2) runs at a larger fraction of its peak bandwidth than the tensor core's share,
the memory system is the limit (the tensor work streams behind it), and the bottleneck is ``memory``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any

from gpusim.report.intervals import Interval, clip, merge, subtract, total
from gpusim.report.timeline import check_recorded, last_sm, sm_end_ns
from gpusim.sim.engine import SimRun
from gpusim.sim.hardware import issued_tensor_flops

CAUSES = (
    "tensor_core",
    "memory",
    "cuda_cores",
    "sfu",
    "shared_memory",
    "barrier_wait",
    "launch",
    "tail_wave",
)

CAUSE_LABELS = {
    "tensor_core": "tensor-core work",
    "memory": "waiting on TMA/HBM",
    "cuda_cores": "CUDA-core work",
    "sfu": "SFU work",
    "shared_memory": "shared-memory / LSU work",
    "barrier_wait": "barrier or turnstile waits",
    "launch": "launch overhead",
    "tail_wave": "tail wave",
}

_MEMORY_QUEUES = ("ldg", "cp_async", "tma_store")


@dataclass(frozen=True)
class Attribution:
    """Shares of the kernel time per cause, the tail's own split, and the verdict."""

    shares: dict[str, float]
    tail_causes: dict[str, float]
    critical_sm: int
    bottleneck: str
    """The dominant cause (a key of ``shares``)."""
    verdict: str

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"shares": self.shares, "tail_causes": self.tail_causes, "critical_sm_group": self.critical_sm,
                "bottleneck": self.bottleneck, "verdict": self.verdict}  # fmt: skip


def _memory_wait_labels(run: SimRun) -> set[str]:
    labels = {f"wait_async {q}" for q in _MEMORY_QUEUES}
    for name, buf in run.sched.buffers.items():
        if buf.producer in ("tma", "cp_async"):
            labels.add(f"wait {name}")
    return labels


def classify(run: SimRun, sm_index: int, lo: float, hi: float,
             timelines: dict[int, list[tuple[str, _Timeline]]] | None = None) -> dict[str, float]:  # fmt: skip
    """Nanoseconds per cause on SM group ``sm_index`` over ``[lo, hi]`` (priority order, see module doc).

    A fast-forwarded span repeats the period simulated just before it, so it counts as that period's
    causes times the periods skipped; that period may itself hold an earlier jump (a tile-level period
    around a fast-forwarded mainloop), which counts the same way. ``timelines``: a cache of the SM
    groups' merged busy intervals, for several calls on one run."""
    if timelines is None:
        timelines = {}
    if sm_index not in timelines:
        timelines[sm_index] = _cause_timelines(run, sm_index)
    order = timelines[sm_index]
    return _classify_with_jumps(order, lo, hi, sorted(run.jumps, key=lambda j: j.start_ns))


def _classify_with_jumps(
    order: list[tuple[str, _Timeline]], lo: float, hi: float, jumps: list[Any]
) -> dict[str, float]:
    out = dict.fromkeys(CAUSES, 0.0)
    cursor = lo
    for i, jump in enumerate(jumps):
        start, end = max(lo, jump.start_ns), min(hi, jump.end_ns)
        if end <= start:
            continue
        for k, v in _classify_detailed(order, cursor, start).items():
            out[k] += v
        period_ns = (jump.end_ns - jump.start_ns) / jump.periods
        observed = _classify_with_jumps(order, jump.start_ns - period_ns, jump.start_ns, jumps[:i])
        for k, v in observed.items():
            out[k] += v * (end - start) / period_ns
        cursor = end
    for k, v in _classify_detailed(order, cursor, hi).items():
        out[k] += v
    return out


def _saturated(servers: list[Any]) -> list[Interval]:
    """When a pipe is saturated: its one server busy, or every SM sub-partition that used it busy at once
    (one warp's work on one SMSP does not make the SM's pipe the bottleneck while others idle)."""
    busy = [merge(srv.spans.intervals()) if srv.spans else [] for srv in servers]
    used = [b for b in busy if b]
    if not used:
        return []
    out = used[0]
    for other in used[1:]:
        out = subtract(out, subtract(out, other))
    return out


@dataclass(frozen=True)
class _Timeline:
    """Sorted, disjoint busy intervals with their starts and ends apart, to clip a window by bisection."""

    intervals: list[Interval]
    starts: list[float]
    ends: list[float]

    @classmethod
    def of(cls, intervals: list[Interval]) -> _Timeline:
        return cls(intervals, [a for a, _ in intervals], [b for _, b in intervals])

    def clip(self, lo: float, hi: float) -> list[Interval]:
        """``clip(intervals, lo, hi)`` looking only at the intervals that overlap the window."""
        first = bisect_right(self.ends, lo)  # the first interval ending after lo
        last = bisect_left(self.starts, hi, lo=first)  # past the last one starting before hi
        return clip(self.intervals[first:last], lo, hi)


def _cause_timelines(run: SimRun, sm_index: int) -> list[tuple[str, _Timeline]]:
    """The busy intervals of each cause on one SM group, in priority order (the whole run, merged once)."""
    sm = run.sms[sm_index]

    def server(*pipes: str) -> list[Interval]:
        return merge(a for p in pipes for a in _saturated(sm.pipe_servers(p)))

    ports = merge((a, b) for p in (sm.ingress, sm.egress) if p is not None for a, b, _ in p.spans or [])
    mem_labels = _memory_wait_labels(run)
    mem_waits = merge(
        (a, b)
        for r in run.runners
        if r.sm.index == sm_index
        for a, b, label in r.spans or []
        if label in mem_labels
    )
    order = [
        ("tensor_core", server("tensor")),
        ("sfu", server("sfu")),
        ("cuda_cores", server("fp32", "cvt", "int")),
        ("shared_memory", server("lsu", "tmem")),
        ("memory", ports),
        ("memory", mem_waits),
    ]
    return [(cause, _Timeline.of(busy)) for cause, busy in order]


def _classify_detailed(order: list[tuple[str, _Timeline]], lo: float, hi: float) -> dict[str, float]:
    left = [(lo, hi)] if hi > lo else []
    out = dict.fromkeys(CAUSES, 0.0)
    for cause, busy in order:
        taken = busy.clip(lo, hi)
        hit = subtract(left, subtract(left, taken))  # left ∩ taken
        out[cause] += total(hit)
        left = subtract(left, taken)
    out["barrier_wait"] += total(left)
    return out


def _tail_ns(run: SimRun) -> float:
    ends = [(sm_end_ns(run, i), sm.weight) for i, sm in enumerate(run.sms)]
    weight = sum(w for _, w in ends)
    if weight <= 0:
        return 0.0
    mean = sum(e * w for e, w in ends) / weight
    return max(0.0, run.kernel_ns - mean)


def _round_shares(raw: dict[str, float], digits: int = 4) -> dict[str, float]:
    s = sum(raw.values()) or 1.0
    shares = {k: round(v / s, digits) for k, v in raw.items()}
    residual = round(1.0 - sum(shares.values()), digits)
    if residual:
        biggest = max(shares, key=lambda k: shares[k])
        shares[biggest] = round(shares[biggest] + residual, digits)
    return shares


def attribute(run: SimRun) -> Attribution:
    """Attribute the kernel time of a recorded simulation to causes (see the module doc)."""
    check_recorded(run)
    launch_ns = run.arch.calibration.launch_overhead_ns
    kernel = run.kernel_ns
    crit = last_sm(run)
    tail = min(_tail_ns(run), kernel)
    timelines: dict[int, list[tuple[str, _Timeline]]] = {}
    main = classify(run, crit, 0.0, kernel - tail, timelines)
    # the critical group's own idle time before it started is counted as a wait
    tail_split = classify(run, crit, kernel - tail, kernel, timelines) if tail > 0 else {}
    raw = dict(main)
    raw["tail_wave"] = tail
    raw["launch"] = launch_ns
    if sum(raw.values()) <= 0:  # nothing ran (every CTA exits at once) and the launch costs nothing
        shares = dict.fromkeys(raw, 0.0) | {"launch": 1.0}
        return Attribution(
            shares, {}, crit, "launch", "no work: every CTA exits at once; the time is the launch's"
        )
    shares = _round_shares(raw)
    tail_total = sum(tail_split.values())
    tail_causes = (
        {k: round(v / tail_total, 4) for k, v in tail_split.items() if v > 0} if tail_total > 0 else {}
    )
    top = dominant_cause(shares, _memory_level(run)[1])
    return Attribution(shares, tail_causes, crit, top, verdict(run, shares, tail_causes, top))


def _memory_level(run: SimRun) -> tuple[str, float]:
    """Which memory level is closer to its peak, and how close (fraction of peak bandwidth)."""
    net, mem = run.net, run.arch.memory
    ns = max(run.kernel_ns, 1e-9)
    hbm = (net.hbm_read_bytes + net.hbm_write_bytes) / (ns * mem.hbm_bandwidth_bytes_per_s / 1e9)
    l2 = (net.l2_read_bytes + net.l2_write_bytes) / (ns * mem.l2_bandwidth_bytes_per_s / 1e9)
    return ("HBM", hbm) if hbm >= l2 else ("L2", l2)


def tensor_efficiency_while_busy(run: SimRun) -> float:
    """Achieved tensor FLOP rate while the tensor core is busy, as a fraction of the dense peak."""
    busy_sm_ns = sum(sm.servers["tensor"].busy_ns * sm.weight for sm in run.sms)
    peak = run.arch.dense_peak_tflops(run.sched.metrics_dtype) or 0.0
    if busy_sm_ns <= 0 or peak <= 0:
        return 0.0
    flops = issued_tensor_flops(run.sms)
    per_sm_peak = peak * 1e3 / run.arch.sm_count  # FLOP/ns per SM
    return flops / busy_sm_ns / per_sm_peak


def dominant_cause(shares: dict[str, float], memory_fraction: float = 0.0) -> str:
    """The cause with the largest share (work causes first, then the tail wave, then launch); memory
    instead of the tensor core when the memory level runs closer to its peak (see the module doc)."""
    work = {k: v for k, v in shares.items() if k not in ("launch", "tail_wave")}
    top = max(work, key=lambda k: work[k])
    if top == "tensor_core" and memory_fraction > work[top]:
        top = "memory"
    if shares["tail_wave"] > work[top]:
        top = "tail_wave"
    if shares["launch"] > max(work.get(top, 0.0), shares["tail_wave"]):
        top = "launch"
    return top


def verdict(run: SimRun, shares: dict[str, float], tail_causes: dict[str, float], top: str) -> str:
    """One line: the dominant cause ``top`` with its evidence, then the runner-up and the tail."""
    work = {k: v for k, v in shares.items() if k not in ("launch", "tail_wave")}
    level, level_frac = _memory_level(run)
    if top == "tensor_core":
        head = (f"tensor-core bound: {shares[top]:.0%} of the time on the tensor core, at "
                f"{tensor_efficiency_while_busy(run):.0%} of its peak while busy")  # fmt: skip
        if level_frac >= 0.5:
            head += f" ({level} at {level_frac:.0%} of peak bandwidth)"
    elif top == "memory":
        head = (f"memory-bound ({level}): {level} at {level_frac:.0%} of peak bandwidth, "
                f"{shares['memory']:.0%} of the time waiting on TMA/{level}")  # fmt: skip
    elif top == "tail_wave":
        head = f"tail-wave bound: {shares[top]:.0%} of the time with SMs out of work"
    elif top == "launch":
        head = f"launch-bound: launch overhead is {shares[top]:.0%} of the time"
    elif top == "barrier_wait":
        head = f"latency/synchronization bound: {shares[top]:.0%} of the time in barrier, turnstile or latency waits"
    else:
        head = f"{CAUSE_LABELS[top].replace(' work', '')}-bound: {shares[top]:.0%} of the time in {CAUSE_LABELS[top]}"
    parts = [head]
    rest = sorted((k for k in work if k != top), key=lambda k: -work[k])
    if rest and work[rest[0]] >= 0.03:
        k = rest[0]
        label = f"waiting on TMA/{level}" if k == "memory" else CAUSE_LABELS[k]
        parts.append(f"{work[k]:.0%} {label}")
    if top != "tail_wave" and shares["tail_wave"] >= 0.01:
        sub = max(tail_causes, key=lambda k: tail_causes[k]) if tail_causes else ""
        what = f"waiting on TMA/{level}" if sub == "memory" else CAUSE_LABELS.get(sub, "")
        parts.append(f"{shares['tail_wave']:.0%} in the tail wave" + (f" (last SMs: {what})" if what else ""))
    return "; ".join(parts)
