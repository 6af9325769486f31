"""Where `gpusim validate` spends its time: wall seconds per measured row, slowest first.

Run: ``python bench/profile_validate.py data/measurements/X.csv [--arch ID] [--max-events N]``. Rows are
predicted one after another in this process (as ``gpusim validate -j 1``); each row's wall time is the
time between two progress calls, so a cached repeat of an earlier prediction costs ~0. Not part of
the tests.
"""

from __future__ import annotations

import argparse
import json
import time

from gpusim.calibrate.measurements import read_measurements
from gpusim.calibrate.predictor import Predictor
from gpusim.calibrate.validate import validate_rows
from gpusim.sim.limits import DEFAULT_MAX_EVENTS


def main() -> None:
    """Print one JSON line per row (slowest first) and the total."""
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--arch", default=None)
    ap.add_argument("--max-events", type=int, default=DEFAULT_MAX_EVENTS)
    ap.add_argument("--costs", default="calibrated")
    args = ap.parse_args()
    rows = read_measurements(args.csv)
    stamps: list[float] = []
    start = time.perf_counter()
    results = validate_rows(rows, costs=args.costs, arch_filter=args.arch, predictor=Predictor(args.max_events),
                            on_progress=lambda done, total: stamps.append(time.perf_counter()))  # fmt: skip
    stamps.append(time.perf_counter())
    timed = []
    for i, res in enumerate(results):
        m = res.m
        timed.append({"wall_s": round(stamps[i + 1] - stamps[i], 3), "row": m.index, "arch": m.arch,
                      "schedule": m.schedule, "dims": m.dims, "params": m.params,
                      "skipped": res.skipped})  # fmt: skip
    for t in sorted(timed, key=lambda t: -t["wall_s"]):
        print(json.dumps(t, default=str), flush=True)
    print(json.dumps({"total_s": round(time.perf_counter() - start, 2), "rows": len(rows)}))


if __name__ == "__main__":
    main()
