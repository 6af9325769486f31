"""Chrome / Perfetto trace of a simulation: one process per simulated SM, one track per agent and role.

Agent tracks show when each unit (tensor core, pipes, LSU, memory ports) is busy; role tracks show what
each role replica spends its time in (a wait on a stage, an MMA, CUDA-core math, a turnstile).

Open the file in https://ui.perfetto.dev (or chrome://tracing). Timestamps are microseconds, as the
Chrome trace format requires. HBM and L2 bandwidth appear as counters on a "chip" process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpusim.errors import InputError
from gpusim.sim.engine import SimRun

_CHIP_PID = 0


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
                {"name": s.name or pipe, "cat": pipe, "ph": "X", "pid": pid, "tid": tid,
                 "ts": s.start_ns / 1000, "dur": max(s.end_ns - s.start_ns, 0.0) / 1000}
                for s in server.spans
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
    for runner in run.runners:
        if not runner.spans:
            continue
        pid = runner.sm.index + 1
        tid = role_tid[pid] = role_tid.get(pid, 100) + 1
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
    metadata = [e for e in events if e["ph"] == "M"]
    timed = sorted((e for e in events if e["ph"] != "M"), key=lambda e: (e["pid"], e["tid"], e["ts"]))
    return metadata + timed


def write_trace(run: SimRun, path: str | Path) -> Path:
    """Write the trace JSON; an unwritable path is a one-line error."""
    target = Path(path)
    payload = {"traceEvents": trace_events(run), "displayTimeUnit": "ns",
               "otherData": {"schedule": run.sched.name, "arch": run.arch.id}}  # fmt: skip
    try:
        target.write_text(json.dumps(payload))
    except OSError as exc:
        raise InputError(f"--trace {path}: cannot write: {exc.strerror or exc}") from None
    return target
