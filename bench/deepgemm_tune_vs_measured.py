"""For every DeepGEMM shape with measured tile ablations (data/measurements/ablations.csv), what ``gpusim
tune gemm_fp8_deepgemm`` picks and how its measured throughput compares with the best measured tile.

    python bench/deepgemm_tune_vs_measured.py [--budget N] [--measured-only] [--json]

Per shape: the tuner's pick over DeepGEMM's whole candidate list (BLOCK_M 64/128/256 x BLOCK_N 16..256 x
clusters), whether that tile was measured and, if so, its share of the best measured throughput (the
issue 14 target: >= 97%); and the pick among the measured tiles only (the rank-check view). Rows of
several ablations of one shape are pooled; a tile measured twice keeps its higher figure.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ABLATIONS = Path(__file__).resolve().parent.parent / "data" / "measurements" / "ablations.csv"


def measured_shapes(
    path: Path = ABLATIONS,
) -> dict[tuple[str, int, int, int, int], dict[tuple[int, int], float]]:
    """(arch, M, N, K, groups) -> {(BLOCK_M, BLOCK_N): best measured TFLOPS} for gemm_fp8_deepgemm rows."""
    shapes: dict[tuple[str, int, int, int, int], dict[tuple[int, int], float]] = defaultdict(dict)
    with path.open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["schedule"] != "gemm_fp8_deepgemm" or row["unit"] != "TFLOPS":
                continue
            params = dict(p.split("=", 1) for p in row["params"].split(";") if "=" in p)
            key = (row["arch"], int(row["M"]), int(row["N"]), int(row["K"]), int(params.get("groups", 1)))
            tile = (int(params["BLOCK_M"]), int(params["BLOCK_N"]))
            shapes[key][tile] = max(shapes[key].get(tile, 0.0), float(row["value"]))
    return dict(shapes)


def _tile(overrides: dict[str, Any]) -> tuple[int, int]:
    return int(overrides.get("BM", overrides.get("BLOCK_M"))), int(
        overrides.get("BN", overrides.get("BLOCK_N"))
    )


def check_shape(arch: str, m: int, n: int, k: int, groups: int, tiles: dict[tuple[int, int], float],
                budget: int, measured_only: bool) -> dict[str, Any]:  # fmt: skip
    """Tune one shape; the pick and its measured share."""
    from gpusim.explore.spaces import Candidate, deepgemm_space
    from gpusim.explore.tune import tune

    problem: dict[str, Any] = {"M": m, "N": n, "K": k, "dtype": "fp8_e4m3"}
    if groups != 1:
        problem["groups"] = groups
    best_tile, best_tflops = max(tiles.items(), key=lambda kv: kv[1])
    out: dict[str, Any] = {"shape": f"{arch} {groups}x{m}x{n}x{k}" if groups != 1 else f"{arch} {m}x{n}x{k}",
                           "best_measured": f"{best_tile[0]}x{best_tile[1]}", "best_measured_tflops": best_tflops}  # fmt: skip
    views = {"measured_tiles": [c for c in deepgemm_space() if _tile(c.overrides) in tiles]}
    if not measured_only:
        views["full_space"] = deepgemm_space()
    for view, space in views.items():
        cands = [Candidate(c.schedule, c.params, c.origin) for c in space]
        result = tune("gemm_fp8_deepgemm", arch, problem, candidates=cands, budget=budget)
        try:
            best = result.best
        except Exception as exc:
            out[view] = {"error": str(exc)[:200]}
            continue
        pick = _tile(result.legal[best["point"]].overrides)
        measured = tiles.get(pick)
        out[view] = {"pick": f"{pick[0]}x{pick[1]}", "origin": result.origin(best), "predicted_us": best["time_us"],
                     "predicted_tflops": best["tflops"], "measured_tflops": measured,
                     "share_of_best": None if measured is None else round(measured / best_tflops, 4),
                     "legal": len(result.legal), "refused": len(result.refused), "predicted": len(result.ranked),
                     "mode": result.mode, "wall_s": round(result.wall_s, 1)}  # fmt: skip
    return out


def main() -> int:
    """Print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=160)
    parser.add_argument("--measured-only", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = []
    for (arch, m, n, k, groups), tiles in measured_shapes().items():
        res = check_shape(arch, m, n, k, groups, tiles, args.budget, args.measured_only)
        results.append(res)
        if not args.json:
            line = f"{res['shape']}: best measured {res['best_measured']} ({res['best_measured_tflops']:.0f} TFLOPS)"
            for view in ("measured_tiles", "full_space"):
                v = res.get(view)
                if v is None:
                    continue
                if "error" in v:
                    line += f"; {view}: {v['error']}"
                    continue
                share = (
                    "unmeasured" if v["share_of_best"] is None else f"{100 * v['share_of_best']:.1f}% of best"
                )
                line += (
                    f"; {view}: pick {v['origin']} ({v['predicted_tflops']:.0f} TFLOPS predicted, {share})"
                )
            print(line, flush=True)
    if args.json:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
