"""Chrome / Perfetto trace of a simulation: one process per simulated SM, one track per agent and role.

Agent tracks show when each unit (tensor core, pipes, LSU, memory ports) is busy; role tracks show what
each role replica spends its time in (a wait on a stage, an MMA, CUDA-core math, a turnstile).

Open the file in https://ui.perfetto.dev (or chrome://tracing). Timestamps are microseconds, as the
Chrome trace format requires, on a whole-nanosecond grid: each value ``x`` is chosen so that
``x * 1000`` truncates and rounds to the same integer, so importers that convert either way agree;
slices on one track never overlap and every flow ends at or after its start (Perfetto drops flows
that end before they start). HBM and L2 bandwidth and the L2 hit rate appear as counters on a "chip"
process; each SM group has a counter of the shared-memory stages in use per buffer, one track per
stage slot ("filling" while its loads land, "full" until the consumers release it), and flow arrows
from the moment a stage became full to the end of the consumer's wait for it.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from gpusim.errors import InputError
from gpusim.sim.engine import SimRun

_CHIP_PID = 0
_STAGE_TID0 = 1000
_HIT_RATE_BINS = 200


def trace_events(run: SimRun) -> list[dict[str, Any]]:
    """The trace as a list of Chrome trace events."""
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": _CHIP_PID, "tid": 0,
         "args": {"name": f"{run.arch.id} chip (HBM, L2)"}},
    ]  # fmt: skip
    for sm in run.sms:
        pid = sm.index + 1
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"name": f"SM group {sm.index} (stands for {sm.weight} SMs)"}})  # fmt: skip
        tid = 0
        for pipe, server in sm.servers.items():
            tid += 1
            if not server.spans:
                continue
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": pipe}})
            events.extend(
                {"name": label or pipe, "cat": pipe, "ph": "X", "pid": pid, "tid": tid,
                 "ts": a / 1000, "dur": max(b - a, 0.0) / 1000}
                for a, b, label in server.spans
            )  # fmt: skip
        for port in (sm.ingress, sm.egress):
            tid += 1
            if port is None or not port.spans:
                continue
            events.append(
                {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": port.name}}
            )
            events.extend(
                {"name": kind, "cat": "memory", "ph": "X", "pid": pid, "tid": tid, "ts": a / 1000,
                 "dur": max(b - a, 0.0) / 1000}
                for a, b, kind in port.spans
            )  # fmt: skip
    role_tid: dict[int, int] = {}
    runner_track: dict[int, tuple[int, int]] = {}
    for runner in run.runners:
        if not runner.spans:
            continue
        pid = runner.sm.index + 1
        tid = role_tid[pid] = role_tid.get(pid, 100) + 1
        runner_track[id(runner)] = (pid, tid)
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                       "args": {"name": f"role {runner.name} (CTA rank {runner.cta.rank})"}})  # fmt: skip
        events.extend(
            {"name": label, "cat": "role", "ph": "X", "pid": pid, "tid": tid, "ts": a / 1000,
             "dur": (b - a) / 1000}
            for a, b, label in runner.spans
        )  # fmt: skip
    for name, samples in (("HBM GB/s", run.net.hbm_rate_samples), ("L2 GB/s", run.net.l2_rate_samples)):
        for t_ns, bytes_per_ns in samples or []:
            events.append({"name": name, "ph": "C", "pid": _CHIP_PID, "tid": 0, "ts": t_ns / 1000,
                           "args": {"GB/s": round(bytes_per_ns, 3)}})  # fmt: skip
    if run.jumps:  # fast-forwarded spans: whole periods skipped, drawn as one span each
        events.append({"name": "thread_name", "ph": "M", "pid": _CHIP_PID, "tid": 1,
                       "args": {"name": "fast-forward (periods skipped)"}})  # fmt: skip
        events.extend(
            {"name": f"fast-forward: {j.periods} periods", "cat": "fast-forward", "ph": "X", "pid": _CHIP_PID,
             "tid": 1, "ts": j.start_ns / 1000, "dur": (j.end_ns - j.start_ns) / 1000}
            for j in run.jumps
        )  # fmt: skip
    events.extend(_hit_rate_counter(run))
    events.extend(_stage_counters(run))
    events.extend(_stage_tracks_and_flows(run, runner_track))
    _snap_to_ns(events)
    metadata = [e for e in events if e["ph"] == "M"]
    timed = sorted((e for e in events if e["ph"] != "M"), key=lambda e: (e["pid"], e["tid"], e["ts"]))
    return metadata + timed


def _hit_rate_counter(run: SimRun) -> list[dict[str, Any]]:
    """L2 hit rate of reads (1 - HBM read bytes / L2 read bytes) over equal bins of the kernel."""
    samples = run.net.read_rate_samples
    if not samples or run.kernel_ns <= 0:
        return []
    from gpusim.report.timeline import binned_average

    starts, l2 = binned_average([(t, a) for t, a, _ in samples], 0.0, run.kernel_ns, _HIT_RATE_BINS)
    _, hbm = binned_average([(t, b) for t, _, b in samples], 0.0, run.kernel_ns, _HIT_RATE_BINS)
    out = []
    for t, a, b in zip(starts, l2, hbm, strict=True):
        if a > 1e-9:
            out.append({"name": "L2 hit rate %", "ph": "C", "pid": _CHIP_PID, "tid": 0, "ts": t / 1000,
                        "args": {"hit %": round(max(0.0, 1 - b / a) * 100, 2)}})  # fmt: skip
    return out


def _stage_counters(run: SimRun) -> list[dict[str, Any]]:
    """Stages in use per (SM group, buffer), summed over the CTAs and waves on that SM."""
    deltas: dict[tuple[int, str], list[tuple[float, int]]] = {}
    for ring in run.rings:
        if ring.in_use_samples is None or ring.sm_index < 0:
            continue
        level = 0
        steps = deltas.setdefault((ring.sm_index, ring.name), [])
        for t, n in ring.in_use_samples:
            steps.append((t, n - level))
            level = n
    out = []
    for (sm_index, name), steps in deltas.items():
        level = 0
        steps.sort(key=lambda x: x[0])
        for i, (t, d) in enumerate(steps):
            level += d
            if i + 1 < len(steps) and steps[i + 1][0] == t:
                continue  # one sample per timestamp: the level after every change at that instant
            out.append({"name": f"smem stages in use: {name}", "ph": "C", "pid": sm_index + 1, "tid": 0,
                        "ts": t / 1000, "args": {"stages": level}})  # fmt: skip
    return out


def _stage_tracks_and_flows(run: SimRun, runner_track: dict[int, tuple[int, int]]) -> list[dict[str, Any]]:
    """One track per stage slot of each buffer (rings of later waves reuse a track once it is free),
    and a flow arrow from "stage full" to the end of each consumer wait it ended."""
    out: list[dict[str, Any]] = []
    lanes: dict[tuple[int, str, int], list[float]] = {}
    next_tid: dict[int, int] = {}
    stage_tid: dict[tuple[Any, ...], int] = {}
    flow_id = 0
    rings = [r for r in run.rings if r.stage_log and r.sm_index >= 0]
    rings.sort(key=lambda r: (r.sm_index, r.name, r.cta_rank, min(e[1] for e in r.stage_log or [])))
    for ring in rings:
        log = ring.stage_log or []
        pid = ring.sm_index + 1
        first, last = min(e[1] for e in log), max(e[3] for e in log)
        slots = lanes.setdefault((pid, ring.name, ring.cta_rank), [])
        for lane_no, free_at in enumerate(slots):
            if free_at <= first:
                slots[lane_no] = last
                break
        else:
            lane_no = len(slots)
            slots.append(last)
        tids = []
        for index in range(len(ring.stages)):
            key = (pid, ring.name, ring.cta_rank, lane_no, index)
            tid = stage_tid.get(key)
            if tid is None:
                tid = stage_tid[key] = next_tid[pid] = next_tid.get(pid, _STAGE_TID0) + 1
                suffix = f" #{lane_no + 1}" if lane_no else ""
                out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                            "args": {"name": f"smem {ring.name}[{index}] (CTA rank {ring.cta_rank}){suffix}"}})  # fmt: skip
            tids.append(tid)
        for index, opened, full, freed in log:
            tid = tids[index]
            out.append({"name": f"{ring.name} filling", "cat": "stage", "ph": "X", "pid": pid, "tid": tid,
                        "ts": opened / 1000, "dur": max(full - opened, 0.0) / 1000})  # fmt: skip
            out.append({"name": f"{ring.name} full", "cat": "stage", "ph": "X", "pid": pid, "tid": tid,
                        "ts": full / 1000, "dur": max(freed - full, 0.0) / 1000})  # fmt: skip
        for t, index, owner in ring.flows or []:
            dest = runner_track.get(id(owner))
            if dest is None:
                continue
            flow_id += 1
            name = f"{ring.name} full -> {owner.name}"
            out.append({"name": name, "cat": "flow", "ph": "s", "id": flow_id, "pid": pid,
                        "tid": tids[index], "ts": t / 1000})  # fmt: skip
            # no "bp": the arrow lands on the consumer's next slice, which starts when its wait ends at t
            out.append({"name": name, "cat": "flow", "ph": "f", "id": flow_id, "pid": dest[0],
                        "tid": dest[1], "ts": t / 1000})  # fmt: skip
    return out


def us_of_ns(ns: int) -> float:
    """Microseconds for a whole number of nanoseconds, as the double ``x`` nearest ``ns / 1000`` with
    ``int(x * 1000) == round(x * 1000) == ns``."""
    x = ns / 1000
    while int(x * 1000) < ns:
        x = math.nextafter(x, math.inf)
    return x


def _snap_to_ns(events: list[dict[str, Any]]) -> None:
    """Move every timestamp to whole nanoseconds; on each track a slice starts no earlier than the
    previous one ends, and a flow ends no earlier than it starts."""
    tracks: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    flow_start: dict[int, int] = {}
    for e in events:
        if "ts" not in e:
            continue
        e["ts"] = round(e["ts"] * 1000)
        if e["ph"] == "X":
            e["dur"] = max(round(e["dur"] * 1000), 0)
            tracks[(e["pid"], e["tid"])].append(e)
        elif e["ph"] == "s":
            flow_start[e["id"]] = e["ts"]
    for slices in tracks.values():
        slices.sort(key=lambda e: e["ts"])
        busy_until = -1
        for e in slices:
            end = e["ts"] + e["dur"]
            e["ts"] = max(e["ts"], busy_until)
            e["dur"] = max(end - e["ts"], 0)
            busy_until = e["ts"] + e["dur"]
    for e in events:
        if e.get("ph") == "f":
            e["ts"] = max(e["ts"], flow_start.get(e["id"], e["ts"]))
    for e in events:
        if "ts" in e:
            e["ts"] = us_of_ns(e["ts"])
            if "dur" in e:
                e["dur"] = us_of_ns(e["dur"])


def write_trace(run: SimRun, path: str | Path) -> Path:
    """Write the trace JSON; an unwritable path is a one-line error."""
    target = Path(path)
    payload = {"traceEvents": trace_events(run),
               "otherData": {"schedule": run.sched.name, "arch": run.arch.id}}  # fmt: skip
    try:
        target.write_text(json.dumps(payload))
    except OSError as exc:
        raise InputError(f"--trace {path}: cannot write: {exc.strerror or exc}") from None
    return target
