"""Simulator speed: wall time of whole predictions and simulated events per second.

Run: ``python bench/bench_predict.py`` (prints a Markdown table for the README). Not part of the tests.
"""

from __future__ import annotations

import statistics
import time

import gpusim

CASES = [
    ("gemm_ws_pingpong", "h100", {"M": 8192, "N": 8192, "K": 8192}),
    ("gemm_ws_pingpong", "h100", {"M": 4096, "N": 4096, "K": 4096}),
    ("gemm_ws_pingpong", "h100", {"M": 16384, "N": 16384, "K": 16384}),
]


def bench(name: str, arch_id: str, overrides: dict[str, int], repeats: int = 3) -> tuple[float, int, float]:
    """Median wall seconds of a time-only ``gpusim.predict`` (load, check, simulate, summarize; datasheet
    costs), events, predicted TFLOPS."""
    walls, events, tflops = [], 0, 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        prediction = gpusim.predict(name, arch_id, costs="datasheet", attribute=False, **overrides)
        walls.append(time.perf_counter() - start)
        events, tflops = prediction.sim["events"], prediction.tflops
    return statistics.median(walls), events, tflops


def main() -> None:
    """Print the table."""
    print("| schedule | arch | problem | wall s (median of 3) | events | events/s | predicted TFLOPS |")
    print("|---|---|---|---|---|---|---|")
    for name, arch_id, overrides in CASES:
        wall, events, tflops = bench(name, arch_id, overrides)
        problem = "x".join(str(overrides[k]) for k in ("M", "N", "K"))
        print(
            f"| {name} | {arch_id} | {problem} | {wall:.2f} | {events:,} | {events / wall:,.0f} | {tflops:.0f} |"
        )


if __name__ == "__main__":
    main()
