"""Per-SM timeline data from a recorded simulation: lanes for agents and roles, and the default window.

A *lane* is one row of a Gantt chart: an agent of the SM (load port, tensor core, CUDA cores, SFU,
LSU, TMEM, store port) or a role replica (its spans say what it spent time in: ``wait ab``,
``mma wgmma``, ``cuda softmax``, ``turn mma_turn``). Needs ``simulate(..., record=True)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gpusim.errors import InputError, quote
from gpusim.sim.engine import SimRun
from gpusim.sim.hardware import PIPES

Span = tuple[float, float, str]

# Agent lanes in display order: (lane label, kind, pipes served by the lane).
AGENT_LANES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("load port (TMA / cp.async / ldg)", "memory", ("ingress",)),
    ("tensor core", "tensor", ("tensor",)),
    ("CUDA cores (fp32, cvt, int)", "cuda", ("fp32", "cvt", "int")),
    ("SFU (ex2)", "sfu", ("sfu",)),
    ("LSU / shared memory", "lsu", ("lsu",)),
    ("TMEM datapath", "tmem", ("tmem",)),
    ("store port", "store", ("egress",)),
)

WAIT_PREFIXES = ("wait", "acquire", "sync", "syncthreads", "turn", "arrive")


def is_wait(label: str) -> bool:
    """Whether a role span is a barrier / stage / turnstile / async-queue wait (drawn hatched)."""
    return label.split(" ", 1)[0] in WAIT_PREFIXES or label.startswith("wait_async")


def role_kind(label: str) -> str:
    """The colour kind of a role span: a wait, or the unit its op ran on."""
    op = label.split(" ", 1)[0]
    if is_wait(label):
        data = op in ("wait", "wait_async", "acquire")
        return "wait_data" if data else "wait_barrier"
    if op == "mma":
        return "tensor"
    if op == "cuda":
        return "cuda"
    if op in ("lds", "sts"):
        return "lsu"
    if op.startswith("tmem"):
        return "tmem"
    if op in ("reduce", "tma_load", "tma_store", "cp_async", "ldg", "stg"):
        return "memory"
    return "cuda"


@dataclass
class Lane:
    """One Gantt row."""

    label: str
    kind: str
    """``agent`` or ``role``."""
    spans: list[Span] = field(default_factory=list)
    color_kind: str = ""
    """For agent lanes: the colour kind of every span."""


def check_recorded(run: SimRun) -> None:
    if not run.sms or run.sms[0].ingress is None or run.sms[0].ingress.spans is None:
        raise InputError("timelines need a recorded simulation: simulate(..., record=True)")


def agent_lanes(run: SimRun, sm_index: int) -> list[Lane]:
    """The SM's agents that did any work, in display order."""
    check_recorded(run)
    sm = run.sms[sm_index]
    lanes = []
    for label, kind, pipes in AGENT_LANES:
        spans: list[Span] = []
        for pipe in pipes:
            if pipe == "ingress":
                spans.extend(sm.ingress.spans or [])  # type: ignore[union-attr]
            elif pipe == "egress":
                spans.extend(sm.egress.spans or [])  # type: ignore[union-attr]
            else:
                spans.extend(span for srv in sm.pipe_servers(pipe) for span in srv.spans or [])
        if spans:
            lanes.append(Lane(label, "agent", sorted(spans), color_kind=kind))
    return lanes


def role_lanes(run: SimRun, sm_index: int) -> list[Lane]:
    """One lane per role replica on the SM; CTAs of later waves reuse a lane once it is free."""
    check_recorded(run)
    by_name: dict[str, list[tuple[float, Lane]]] = {}
    order: list[Lane] = []
    runners = [r for r in run.runners if r.sm.index == sm_index and r.spans]
    runners.sort(key=lambda r: (r.spans[0][0], r.cta.rank, r.name))  # type: ignore[index]
    for r in runners:
        spans = r.spans or []
        start, end = spans[0][0], spans[-1][1]
        key = f"{r.name} (CTA rank {r.cta.rank})" if run.sched.launch.cluster_size > 1 else r.name
        slots = by_name.setdefault(key, [])
        for i, (free_at, lane) in enumerate(slots):
            if free_at <= start + 1e-9:
                lane.spans.extend(spans)
                slots[i] = (end, lane)
                break
        else:
            label = key if not slots else f"{key} #{len(slots) + 1}"
            lane = Lane(f"role {label}", "role", list(spans))
            slots.append((end, lane))
            order.append(lane)
    for lane in order:
        lane.spans.sort()
    order.sort(key=lambda lane: lane.label)
    return order


def sm_end_ns(run: SimRun, sm_index: int) -> float:
    """When the SM group's last role finished (its share of the kernel)."""
    ends = [r.spans[-1][1] for r in run.runners if r.sm.index == sm_index and r.spans]
    sm = run.sms[sm_index]
    ends += [srv.spans.ends[-1] for srv in sm.servers.values() if srv.spans]
    ends += [p.spans[-1][1] for p in (sm.ingress, sm.egress) if p is not None and p.spans]
    return max(ends, default=0.0)


def sm_busy_ns(run: SimRun, sm_index: int) -> float:
    """Total busy time of the SM's agents (tensor, pipes, LSU, ports): how loaded the group is."""
    sm = run.sms[sm_index]
    busy = sum(sm.pipe_busy_ns(pipe) for pipe in PIPES if pipe != "issue")
    return busy + sum(p.busy_ns for p in (sm.ingress, sm.egress) if p is not None)


def busiest_sm(run: SimRun) -> int:
    """The SM group with the most agent busy time (ties: the lower index)."""
    return max(range(len(run.sms)), key=lambda i: (sm_busy_ns(run, i), -i))


def last_sm(run: SimRun) -> int:
    """The SM group that finishes last (its work ends the kernel)."""
    return max(range(len(run.sms)), key=lambda i: (sm_end_ns(run, i), -i))


def tiles_on_sm(run: SimRun, sm_index: int) -> int:
    """Work units (tiles) the SM group's CTAs process, over all waves."""
    seen: dict[int, int] = {}
    for r in run.runners:
        if r.sm.index == sm_index:
            seen[id(r.cta)] = len(r.cta.units)
    return max(1, sum(seen.values()))


def default_window(run: SimRun, sm_index: int, periods: float = 3.0) -> tuple[float, float]:
    """A steady-state window: about ``periods`` tile periods around the middle of the SM's work
    (the whole kernel when the SM has only a few tiles)."""
    end = sm_end_ns(run, sm_index) or run.kernel_ns
    tiles = tiles_on_sm(run, sm_index)
    if tiles <= periods + 1:
        return 0.0, max(end, run.kernel_ns)
    width = periods * end / tiles
    mid = end / 2
    return max(0.0, mid - width / 2), min(end, mid + width / 2)


def parse_window_text(text: str) -> tuple[float, float]:
    """``START_US:END_US`` -> (start us, end us), finite with 0 <= start < end (checked before simulating)."""
    try:
        a, b = (float(x) for x in text.split(":"))
    except ValueError:
        raise InputError(f"--window '{quote(text, 80)}': expected START_US:END_US, e.g. 100:140") from None
    if not (math.isfinite(a) and math.isfinite(b)) or a < 0 or b <= a:
        raise InputError(f"--window '{quote(text, 80)}': need finite 0 <= START_US < END_US")
    return a, b


def parse_window(text: str, kernel_ns: float) -> tuple[float, float]:
    """``START_US:END_US`` -> (start ns, end ns); a window outside the kernel is a one-line error."""
    a, b = parse_window_text(text)
    text = quote(text, 80)
    end_us = kernel_ns / 1000
    if a >= end_us:
        raise InputError(f"--window '{text}': starts after the kernel ends at {end_us:,.2f} us")
    if b > end_us * 1.0001:
        raise InputError(f"--window '{text}': ends after the kernel ends at {end_us:,.2f} us")
    return a * 1000, min(b, end_us) * 1000


def check_sm(run: SimRun, sm_index: int) -> int:
    """Validate an SM-group index; out of range is a one-line error."""
    n = len(run.sms)
    if not 0 <= sm_index < n:
        weights = ", ".join(f"{i}: {sm.weight} SMs" for i, sm in enumerate(run.sms))
        raise InputError(f"--sm {sm_index}: out of range; this run simulates {n} SM group(s) "
                         f"(0..{n - 1}; {weights})")  # fmt: skip
    return sm_index


def binned_average(samples: list[tuple[float, float]] | None, lo: float, hi: float,
                   bins: int) -> tuple[list[float], list[float]]:  # fmt: skip
    """Average of a step function (``(t, value)`` samples, each value holding until the next) over
    ``bins`` equal bins of ``[lo, hi]``: (bin starts in ns, averages)."""

    edges = np.linspace(lo, hi, bins + 1)
    if not samples or hi <= lo:
        return list(edges[:-1]), [0.0] * bins
    t = np.array([s[0] for s in samples] + [max(hi, samples[-1][0])])
    v = np.array([s[1] for s in samples] + [0.0])
    # cumulative integral at each sample time, then interpolate at the bin edges
    cum = np.concatenate([[0.0], np.cumsum(v[:-1] * np.diff(t))])

    def integral(x: np.ndarray) -> np.ndarray:
        idx = np.clip(np.searchsorted(t, x, side="right") - 1, 0, len(t) - 1)
        return cum[idx] + v[idx] * np.clip(x - t[idx], 0.0, None) * (x >= t[0])

    area = integral(edges)
    return list(edges[:-1]), list(np.diff(area) / np.diff(edges))


def busy_fractions(spans: list[tuple[float, float]], lo: float, hi: float, bins: int) -> np.ndarray:
    """Fraction of each of ``bins`` equal bins of ``[lo, hi]`` covered by the union of ``spans`` (ns):
    what one pixel column of a Gantt lane should show when spans are narrower than a pixel."""
    from gpusim.report.intervals import merge

    merged = merge(spans)
    edges = np.linspace(lo, hi, bins + 1)
    if not merged or hi <= lo:
        return np.zeros(bins)
    starts = np.array([a for a, _ in merged])
    ends = np.array([b for _, b in merged])
    done_before = np.concatenate(([0.0], np.cumsum(ends - starts)[:-1]))
    # busy time in [0, t] is piecewise linear: flat between spans, slope 1 inside them
    knots_t = np.ravel(np.column_stack((starts, ends)))
    knots_v = np.ravel(np.column_stack((done_before, done_before + (ends - starts))))
    covered = np.interp(edges, knots_t, knots_v, left=0.0, right=float(knots_v[-1]))
    return np.clip(np.diff(covered) / np.diff(edges), 0.0, 1.0)
