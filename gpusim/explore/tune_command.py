"""``gpusim tune``: the fastest legal configuration of a kernel for one problem."""

from __future__ import annotations

from typing import Annotated, Any

import typer


def _deepgemm_reference(result: Any) -> dict[str, Any] | None:
    """DeepGEMM's own wave-heuristic pick among the legal candidates, and where it ranks in the prediction."""
    from gpusim.explore.deepgemm import deepgemm_cluster, deepgemm_pick

    if result.kernel != "gemm_fp8_deepgemm":
        return None
    from gpusim.arch import load_arch

    arch = load_arch(result.arch)
    p = result.problem
    m, n, groups = int(p.get("M", 4096)), int(p.get("N", 7168)), int(p.get("groups", 1))

    def blocks(c: Any) -> tuple[int, int]:
        o = c.overrides
        return int(o.get("BM", o.get("BLOCK_M"))), int(o.get("BN", o.get("BLOCK_N")))

    pick = deepgemm_pick(m, n, groups, arch.sm_count, dict.fromkeys(blocks(c) for c in result.legal))
    if pick is None:
        return None
    cluster = deepgemm_cluster(m, n, *pick)
    for row in result.ranked:
        c = result.legal[row["point"]].overrides
        if blocks(result.legal[row["point"]]) == pick and (c.get("CLUSTER_M"), c.get("CLUSTER_N")) == cluster:
            rank = result.ranked.index(row) + 1
            return {"block_m": pick[0], "block_n": pick[1], "cluster": f"{cluster[0]}x{cluster[1]}",
                    "predicted_time_us": row["time_us"], "predicted_rank": rank}  # fmt: skip
    return {
        "block_m": pick[0],
        "block_n": pick[1],
        "cluster": f"{cluster[0]}x{cluster[1]}",
        "predicted_rank": None,
    }


def register_tune(app: typer.Typer) -> None:
    """Add ``gpusim tune``."""

    @app.command("tune")
    def tune_cmd(
        kernel: Annotated[
            str, typer.Argument(help="auto:gemm, auto:attention, gemm_fp8_deepgemm or a schedule.")
        ],
        arch: Annotated[str, typer.Option("--arch", "-a", help="Arch id or alias.")] = "h100",
        sets: Annotated[
            list[str] | None, typer.Option("--set", "-s", help="KEY=VALUE problem value.")
        ] = None,
        budget: Annotated[
            int, typer.Option("--budget", help="Most predictions (larger spaces are sampled).")
        ] = 160,
        top: Annotated[int, typer.Option("--top", help="Rows in the table.")] = 10,
        out: Annotated[
            str | None, typer.Option("--out", "-o", help="Write every candidate to .parquet/.csv.")
        ] = None,
        scheduler: Annotated[str | None, typer.Option("--scheduler", help="Dask scheduler address.")] = None,
        jobs: Annotated[int, typer.Option("--jobs", "-j", help="Local processes (default: every core).")] = 0,
        datasheet: Annotated[bool, typer.Option("--datasheet", help="Datasheet costs.")] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    ) -> None:
        """Search a kernel's library candidate space (CUTLASS / DeepGEMM / FlashAttention tiles, stages,
        clusters) for the fastest legal configuration: exhaustive when small, optuna-sampled when large."""
        from gpusim.cli_guard import check_output_path, write_json
        from gpusim.errors import InputError, quote
        from gpusim.explore.cli_args import archs_option as _archs
        from gpusim.explore.cli_args import parse_sets as _parse_sets
        from gpusim.explore.executors import make_executor
        from gpusim.explore.table import write_results
        from gpusim.explore.tune import tune

        if budget < 1:
            raise InputError(f"--budget {budget}: expected at least 1")
        if top < 0:
            raise InputError(f"--top {top}: expected 0 or more rows")
        if out is not None:
            from gpusim.explore.table import output_format

            output_format(out)
            check_output_path(out, "--out", (".parquet", ".csv"))
        arch_ids = _archs(arch, "h100")
        if len(arch_ids) > 1:
            raise InputError(f"--arch '{quote(arch)}': tune searches one arch; run it once per arch")
        arch_id = arch_ids[0]
        costs = "datasheet" if datasheet else "calibrated"
        executor = make_executor(scheduler, jobs or None)
        try:
            result = tune(kernel, arch_id, _parse_sets(sets), costs=costs, executor=executor, budget=budget)
        finally:
            executor.close()
        if out:
            write_results(result.rows, out)
        best = result.best
        reference = _deepgemm_reference(result)
        ranked = result.ranked
        if as_json:
            doc = {"kernel": kernel, "arch": result.arch, "problem": result.problem, "costs": costs,
                   "mode": result.mode, "candidates": result.candidates, "legal": len(result.legal),
                   "refused": len(result.refused), "predicted": len(ranked),
                   "best": {**best, "origin": result.origin(best)}, "deepgemm_heuristic": reference,
                   "ranking": [{**r, "origin": result.origin(r)} for r in ranked[:top]]}  # fmt: skip
            write_json(doc)
            return
        from rich.table import Table

        from gpusim.report.console import make_console

        console = make_console()
        problem = ", ".join(f"{k}={v}" for k, v in result.problem.items()) or "schedule defaults"
        table = Table(
            title=f"tune {kernel} on {result.arch} ({problem}; {costs} costs)", title_justify="left"
        )
        for col in ("rank", "schedule", "configuration", "time us", "TFLOPS"):
            table.add_column(col, justify="right" if col in ("rank", "time us", "TFLOPS") else "left")
        for i, row in enumerate(ranked[:top], start=1):
            table.add_row(
                str(i), row["schedule"], result.origin(row), f"{row['time_us']:,.2f}", f"{row['tflops']:,.1f}"
            )
        console.print(table)
        console.print(f"{result.candidates} candidates, {len(result.refused)} refused by the checks, "
                      f"{len(ranked)} predicted ({result.mode}); {result.wall_s:.1f} s", highlight=False)  # fmt: skip
        if reference is not None:
            where = (
                f"predicted rank {reference['predicted_rank']}"
                if reference["predicted_rank"]
                else "not predicted"
            )
            console.print(f"DeepGEMM's own heuristic picks {reference['block_m']}x{reference['block_n']}, cluster "
                          f"{reference['cluster']} ({where})", highlight=False)  # fmt: skip
