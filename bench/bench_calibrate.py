"""How long ``gpusim calibrate`` takes: wall and CPU seconds, simulations and the fitted values.

Run: ``python bench/bench_calibrate.py --arch h800 --fit energy_scale,tensor_issue_efficiency --max-rows 8
--model +power [--jobs 2]``. The fit runs in this process (``--jobs 1``) or spreads its row predictions over
worker processes; CPU seconds count this process and its finished workers. Not part of the tests.
"""

from __future__ import annotations

import argparse
import glob
import json
import resource
import time


def main() -> None:
    """Print one JSON line: the timing and what was fitted."""
    from gpusim.api import load_arch
    from gpusim.calibrate.fit import calibrate
    from gpusim.calibrate.measurements import read_measurements
    from gpusim.calibrate.params import parse_fit_names
    from gpusim.mechanisms import with_model

    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", required=True)
    ap.add_argument("--fit", default=None)
    ap.add_argument("--max-rows", type=int, default=0)
    ap.add_argument("--model", default=None)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("csv", nargs="*")
    args = ap.parse_args()
    base = with_model(load_arch(args.arch, costs="datasheet"), args.model)
    rows = read_measurements(args.csv or sorted(glob.glob("data/measurements/*.csv")))
    start, cpu_start = time.perf_counter(), time.process_time()
    result = calibrate(rows, base, parse_fit_names(args.fit, base), max_rows=args.max_rows, jobs=args.jobs)
    wall = time.perf_counter() - start
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cal = result["calibration"]
    fitted = {name: cal[name] for name in cal["provenance"]["fitted"]}
    print(json.dumps({
        "arch": args.arch, "jobs": args.jobs, "rows": cal["provenance"]["rows_used"],
        "iterations": cal["provenance"]["iterations"], "simulations": result["simulations"],
        "wall_s": round(wall, 1), "cpu_s": round(time.process_time() - cpu_start + children.ru_utime, 1),
        "fitted": fitted, "cv_all": cal["provenance"]["cross_validation"]["all"],
    }))  # fmt: skip


if __name__ == "__main__":
    main()
