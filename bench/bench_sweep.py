"""Sweep throughput: points per minute with local processes and on a 2-worker loopback Dask cluster.

Run: ``python bench/bench_sweep.py [--points N] [--size M]`` (prints a Markdown table for
docs/exploration.md). Not part of the tests. The sweep is gemm_ws_pingpong on h100 over BN, STAGES and
CLUSTER_N at M=N=K=``--size``; refused points are counted but cost only the static check.
"""

from __future__ import annotations

import argparse
import os
import time

from gpusim.explore.executors import DaskExecutor, InlineExecutor, LocalExecutor
from gpusim.explore.grid import enumerate_points, parse_axes
from gpusim.explore.sweep import run_sweep


def points(size: int, count: int) -> list:
    """About ``count`` points of a ping-pong GEMM grid (legal and refused ones)."""
    axes = parse_axes(["BN=64..256:16", "STAGES=2..8", "CLUSTER_N=1,2", "BM=64,128"])
    grid = enumerate_points("gemm_ws_pingpong", ["h100"], axes, {"M": size, "N": size, "K": size})
    return grid[:count]


def measure(name: str, executor: object, pts: list) -> tuple[str, int, int, float]:
    """Wall seconds of one sweep and the points predicted."""
    start = time.perf_counter()
    result = run_sweep(pts, "calibrated", executor)  # type: ignore[arg-type]
    wall = time.perf_counter() - start
    return name, len(pts), result.predicted, wall


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=120)
    parser.add_argument("--size", type=int, default=1024)
    args = parser.parse_args()
    pts = points(args.size, args.points)
    runs = [measure("inline (1 process)", InlineExecutor(), pts),
            measure(f"local processes ({os.cpu_count()} cores)", LocalExecutor(), pts)]  # fmt: skip
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                      silence_logs=50) as cluster, Client(cluster) as client:  # fmt: skip
        client.run(lambda: __import__("gpusim.explore.point"))
        runs.append(measure("Dask LocalCluster, 2 workers (loopback)", DaskExecutor(client), pts))
    print(
        f"gemm_ws_pingpong on h100, M=N=K={args.size}, {len(pts)} points, machine with {os.cpu_count()} cores\n"
    )
    print("| executor | points | predicted | wall s | points / minute |")
    print("|---|---|---|---|---|")
    for name, total, predicted, wall in runs:
        print(f"| {name} | {total} | {predicted} | {wall:.1f} | {60 * total / wall:,.0f} |")


if __name__ == "__main__":
    main()
