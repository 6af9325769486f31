"""Simulator speed: wall time of whole predictions against the targets of issue 11.

Run: ``python bench/bench_predict.py`` (prints the Markdown table of docs/performance.md). Each case
runs in its own process (so its peak RSS is its own) with a wall-clock guard that only stops the
benchmark, never a prediction. Wall and CPU seconds are both given (CPU seconds stay meaningful on a
shared, loaded machine). A fixed pure-Python reference workload is timed (CPU) in the same run and
every case is also given as a ratio to it, so figures compare across machines. Not part of the tests.

Options: ``--cases NAME,...`` (substring match on the case label), ``--repeats N``, ``--timeout S`` (CPU
seconds per case).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from typing import Any

# (label, schedule, arch or None for the reference arch, problem, target seconds)
CASES: list[tuple[str, str, str | None, dict[str, Any], float]] = [
    ("gemm 8192^3 bf16 ping-pong", "gemm_ws_pingpong", "h100", {"M": 8192, "N": 8192, "K": 8192}, 0.1),
    ("gemm 65536^3 bf16 ping-pong", "gemm_ws_pingpong", "h100", {"M": 65536, "N": 65536, "K": 65536}, 0.3),
    *[
        (
            f"FA3 fwd 128k hdim {d}{' causal' if c else ''}",
            "attn_fa3_fwd",
            "h100",
            {"batch": 1, "heads": 2048 // d, "seqlen_q": 131072, "head_dim": d, "causal": c},
            0.3,
        )
        for d in (64, 128, 256)
        for c in (False, True)
    ],
    ("FA2 fwd 16k", "attn_fa2_fwd", "a100", {"batch": 1, "heads": 16, "seqlen_q": 16384}, 0.3),
    ("FA2 bwd 16k", "attn_fa2_bwd", "a100", {"batch": 1, "heads": 16, "seqlen_q": 16384}, 0.3),
    ("FlashMLA decode b128 x 64k", "mla_decode_flashmla", "h800", {"batch": 128, "seqlen_kv": 65536}, 0.3),
    ("FA4 fwd 32k", "attn_fa4_fwd", "b200", {"batch": 1, "heads": 16, "seqlen_q": 32768}, 0.3),
    *[
        (
            f"FA4 bwd hdim 256 8k: {kernel}",
            f"attn_fa4_bwd_hd256_{kernel}",
            "b200",
            {"batch": 4, "heads": 16, "seqlen_q": 8192},
            0.3,
        )
        for kernel in ("dq", "dkdv")
    ],
    (
        "DeepGEMM grouped 8 x 8192x7168x4096",
        "gemm_fp8_deepgemm",
        "h800",
        {"M": 8192, "N": 7168, "K": 4096, "groups": 8},  # M is per group (MT = groups * ceil(M / BM))
        0.3,
    ),
    # stream-K: 8192^3 is data-parallel under CUTLASS's heuristic (its last wave is more than half full);
    # 5120^2 leaves 8 tiles in the last wave, so its last two waves run stream-K ahead of 5 data-parallel ones
    ("stream-K 8192^3 (heuristic)", "gemm_streamk", "h100", {"M": 8192, "N": 8192, "K": 8192}, 0.3),
    ("stream-K 5120x5120x4096", "gemm_streamk", "h100", {"M": 5120, "N": 5120, "K": 4096}, 0.3),
    ("auto:gemm 8192^3", "auto:gemm", "h100", {"M": 8192, "N": 8192, "K": 8192}, 1.0),
    ("auto:gemm 3000x5000x7000", "auto:gemm", "h100", {"M": 3000, "N": 5000, "K": 7000}, 1.0),
]


def reference_workload_s() -> float:
    """Seconds of a fixed pure-Python workload (dict and float work like the simulator's)."""
    start = time.perf_counter()
    table: dict[int, float] = {}
    acc = 0.0
    for i in range(1_000_000):
        key = i & 1023
        acc += table.get(key, 0.0) * 0.5 + i % 7
        table[key] = acc % 1000.0
    return time.perf_counter() - start


def reference_workload_cpu_s() -> float:
    """CPU seconds of the reference workload (robust to other jobs sharing the machine)."""
    start = time.process_time()
    reference_workload_s()
    return time.process_time() - start


def _one(schedule: str, arch: str | None, problem: dict[str, Any], repeats: int) -> dict[str, Any]:
    import resource

    import gpusim

    walls, cpus = [], []
    prediction = None
    for _ in range(repeats):
        start, cpu_start = time.perf_counter(), time.process_time()
        prediction = gpusim.predict(schedule, arch, costs="datasheet", **problem)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu_start)
    assert prediction is not None
    return {
        "wall_s": statistics.median(walls),
        "cpu_s": statistics.median(cpus),
        "events": prediction.sim.get("events"),
        "skipped_events": prediction.sim.get("skipped_events"),
        "time_us": prediction.time_us,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--child", default="")
    args = parser.parse_args()
    if args.child:
        import resource

        limit = int(args.timeout) + 1  # the guard counts CPU seconds: the same cases stop on a loaded machine
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))
        schedule, arch, problem = json.loads(args.child)
        print(json.dumps(_one(schedule, arch, problem, args.repeats)))
        return
    wanted = [w for w in args.cases.split(",") if w]
    cases = [c for c in CASES if not wanted or any(w in c[0] for w in wanted)]
    ref = min(reference_workload_cpu_s() for _ in range(3))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}; load average {os.getloadavg()[0]:.1f}; "
          f"reference workload {ref:.3f} CPU s")  # fmt: skip
    print()
    print(
        "| case | target s | wall s (median) | CPU s (median) | x reference (CPU) | events | events skipped "
        "| predicted us | peak RSS MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for label, schedule, arch, problem, target in cases:
        cmd = [sys.executable, __file__, "--repeats", str(args.repeats), "--timeout", str(args.timeout), "--child",
               json.dumps([schedule, arch, problem])]  # fmt: skip
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=20 * args.timeout, check=False)
            result = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else None
            if result is None and out.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
                note = f"over the benchmark's {args.timeout:g} CPU-s guard"
            elif result is None:
                note = (out.stderr.strip().splitlines() or ["failed"])[-1][:80]
            else:
                note = ""
        except subprocess.TimeoutExpired:
            result, note = None, f"over the benchmark's {20 * args.timeout:g} s wall guard"
        if result is None:
            print(f"| {label} | {target} | {note} | | | | | | |")
            continue
        print(f"| {label} | {target} | {result['wall_s']:.3f} | {result['cpu_s']:.3f} | {result['cpu_s'] / ref:.1f} | "
              f"{result['events']:,} | {result['skipped_events'] or 0:,} | {result['time_us']:,.1f} | "
              f"{result['rss_mb']:.0f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
