"""How fast a deadlock at the very end of a large kernel is named.

The kernel is the shipped ping-pong GEMM with one change, written to a temporary YAML file: in the
grid's last work unit the math warpgroups wait, before each k-tile, for an event that the producer
gives only after its last acquire of that unit. The producer needs the math warpgroups to release
stages first, so the last unit deadlocks, whatever the timing. Every earlier unit runs as shipped.

For each size the table gives the wall time of ``gpusim.predict`` in a warm process and of the
``gpusim predict`` command end to end (Python start-up and imports included), and where the
deadlock was found. Usage: ``python bench/bench_late_deadlock.py [--sizes 8192,65536]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from late_deadlocks import pingpong_event_cycle

import gpusim
from gpusim.errors import DeadlockError

SCHEDULES = Path(__file__).resolve().parent.parent / "schedules"
LAST_UNIT = "m == ceil_div(M, BM) - 1 and n == ceil_div(N, BN) - 1"


def write_mutant(directory: Path) -> Path:
    """The ping-pong GEMM with a wait cycle in its last unit (its producer written out)."""
    text = (SCHEDULES / "gemm_ws_pingpong.yaml").read_text().replace("gemm_ws_pingpong", "late_cycle", 1)
    text = pingpong_event_cycle(text, "late", LAST_UNIT, f"({LAST_UNIT}) and k == k_end - 1")
    path = directory / "late_cycle.yaml"
    path.write_text(text)
    return path


def in_process(path: Path, size: int) -> tuple[float, str]:
    start = time.perf_counter()
    try:
        gpusim.predict(str(path), "h100", M=size, N=size, K=size, attribute=False)
    except DeadlockError as exc:
        return time.perf_counter() - start, "before simulating" if "before simulating" in str(
            exc
        ) else "simulating"
    return time.perf_counter() - start, "no deadlock (a bug in this benchmark)"


def command(path: Path, size: int) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "gpusim", "predict", str(path), "--arch", "h100",
         *(f"--set={k}={size}" for k in "MNK")],
        capture_output=True, check=False, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    return time.perf_counter() - start


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="8192,16384,32768,65536")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    with tempfile.TemporaryDirectory() as tmp:
        path = write_mutant(Path(tmp))
        gpusim.predict("gemm_ws_pingpong", "h100", M=512, N=512, K=512)  # imports and caches warm
        print(
            f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; load {os.getloadavg()[0]:.1f}"
        )
        print()
        print("| M = N = K | in process s (best of 2) | found | `gpusim predict` s |")
        print("|---|---|---|---|")
        for size in sizes:
            runs = [in_process(path, size) for _ in range(2)]
            best = min(t for t, _ in runs)
            print(f"| {size} | {best:.3f} | {runs[0][1]} | {command(path, size):.2f} |")


if __name__ == "__main__":
    main()
