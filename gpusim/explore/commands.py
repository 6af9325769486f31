"""The ``gpusim sweep``, ``gpusim tune`` and ``gpusim rank-check`` commands (registered by cli.py)."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from gpusim.cli_guard import PLOT_SUFFIXES, check_output_path, refuse_overwriting_an_input, write_json
from gpusim.errors import InputError, quote
from gpusim.explore.cli_args import archs_option as _archs
from gpusim.explore.cli_args import parse_sets as _parse_sets

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
Datasheet = Annotated[
    bool, typer.Option("--datasheet", help="Datasheet costs instead of the shipped calibration.")
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
Sets = Annotated[list[str] | None, typer.Option("--set", "-s", help="KEY=VALUE fixed for every point.")]
Scheduler = Annotated[
    str | None,
    typer.Option("--scheduler", help="Dask scheduler address (tcp://HOST:8786); default: local processes."),
]
Jobs = Annotated[int, typer.Option("--jobs", "-j", help="Local processes (default: every core).")]


def _print_json(data: Any) -> None:
    write_json(data)


@contextmanager
def _progress(total: int, quiet: bool, what: str) -> Any:
    """A rich progress bar on stderr (none when quiet or not a terminal); yields an update function."""
    if quiet or not sys.stderr.isatty():
        yield lambda *_: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from gpusim.report.console import make_console

    with Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=make_console(stderr=True), transient=True) as bar:  # fmt: skip
        task = bar.add_task("", total=total)

        def update(row: dict[str, Any], status: Any) -> None:
            best = status.best
            text = f"refused {status.refused}"
            if best is not None:
                text += f", best {best['time_us']:,.2f} us (point {best['point']})"
            bar.update(task, completed=status.done, description=text)

        yield update


def _param_text(row: dict[str, Any], keys: list[str]) -> str:
    return ", ".join(f"{k}={row.get(k)}" for k in keys)


def register(app: typer.Typer) -> None:
    """Add the exploration commands to the ``gpusim`` app."""

    @app.command("sweep")
    def sweep_cmd(
        schedule: Annotated[str, typer.Argument(help="Schedule name or YAML path.")],
        arch: Annotated[str, typer.Option("--arch", "-a", help="Arch id, or several comma-separated.")] = "",
        grid: Annotated[
            list[str] | None,
            typer.Option(
                "--grid", "-g", help="KEY=v1,v2,... or KEY=lo..hi[:step] (inclusive); repeat per key."
            ),
        ] = None,
        problems: Annotated[
            str | None,
            typer.Option("--problems", help="CSV of problems (header M,N,K,dtype,...); one sweep each."),
        ] = None,
        sets: Sets = None,
        out: Annotated[
            str | None, typer.Option("--out", "-o", help="Write every point to results.parquet or .csv.")
        ] = None,
        resume: Annotated[
            bool,
            typer.Option("--resume", help="Reuse the points an earlier (interrupted) run of --out finished."),
        ] = False,
        top: Annotated[int, typer.Option("--top", help="Rows in the ranking table.")] = 10,
        plot: Annotated[
            str | None, typer.Option("--plot", help="Write a heatmap or Pareto PNG here.")
        ] = None,
        plot_kind: Annotated[
            str | None,
            typer.Option("--plot-kind", help="heatmap (two --grid keys), pareto-smem or pareto-regs."),
        ] = None,
        scheduler: Scheduler = None,
        jobs: Jobs = 0,
        datasheet: Datasheet = False,
        quiet: Quiet = False,
        as_json: JsonFlag = False,
    ) -> None:
        """Predict every point of a parameter grid (in parallel, locally or on a Dask cluster) and rank them."""
        from gpusim.explore.executors import make_executor
        from gpusim.explore.grid import enumerate_points, parse_axes, read_problems
        from gpusim.explore.sweep import run_sweep
        from gpusim.explore.table import output_format
        from gpusim.schedule.load import schedule_path

        schedule_path(schedule)  # an unknown schedule fails here, with the known names
        if out is not None:
            output_format(out)
            check_output_path(out, "--out", (".parquet", ".csv"))
            refuse_overwriting_an_input(out, "--out", {"--problems": problems})
        if resume and out is None:
            raise InputError("--resume needs --out (the file of the run to resume)")
        if top < 0:
            raise InputError(f"--top {top}: expected 0 or more rows")
        axes = parse_axes(grid or [])
        if plot_kind is not None and plot is None:
            raise InputError("--plot-kind chooses what --plot draws; add --plot FILE.png")
        if plot is not None:
            from gpusim.explore.plot import PLOT_KINDS

            check_output_path(plot, "--plot", PLOT_SUFFIXES)
            refuse_overwriting_an_input(plot, "--plot", {"--problems": problems})
            if plot_kind is not None and plot_kind not in PLOT_KINDS:
                raise InputError(
                    f"--plot-kind {quote(plot_kind, 40)}: expected one of {', '.join(PLOT_KINDS)}"
                )
            if plot_kind == "heatmap" and len(axes) < 2:
                raise InputError("--plot-kind heatmap needs two --grid parameters")
        rows_in = read_problems(problems) if problems else None
        archs = _archs(arch, _reference_arch(schedule))
        points = enumerate_points(schedule, archs, axes, _parse_sets(sets), rows_in)
        costs = "datasheet" if datasheet else "calibrated"
        executor = make_executor(scheduler, jobs or None)
        try:
            with _progress(len(points), quiet, f"sweep {schedule}") as update:
                result = run_sweep(points, costs, executor, out=out, resume=resume, on_row=update)
        finally:
            executor.close()
        swept = [a.key for a in axes]
        if plot is not None:
            from gpusim.explore.plot import plot_sweep

            plot_sweep(
                result.rows, swept, plot_kind, plot, f"{schedule} on {','.join(archs)} ({costs} costs)"
            )
        _report_sweep(result, swept, top, costs, as_json, out)

    from gpusim.explore.tune_command import register_tune

    register_tune(app)
    from gpusim.explore.rankcheck_command import register_rank_check

    register_rank_check(app)


def _reference_arch(schedule: str) -> str:
    from gpusim.schedule.load import read_spec

    return read_spec(schedule).reference_arch


def _report_sweep(
    result: Any, swept: list[str], top: int, costs: str, as_json: bool, out: str | None
) -> None:
    from gpusim.explore.table import rank_rows

    ranked = rank_rows(result.rows)
    status = result.status
    summary = {
        "points": status.total,
        "predicted": result.predicted,
        "reused": status.reused,
        "refused": status.refused,
        "failed": status.failed,
        "costs": costs,
        "executor": result.executor,
        "wall_s": round(result.wall_s, 2),
        "out": out,
    }
    if as_json:
        _print_json({"summary": summary, "ranking": ranked[:top],
                     "refused": [{"point": i, "reason": r} for i, r in result.refusals]})  # fmt: skip
        return
    from rich.table import Table

    from gpusim.report.console import make_console

    console = make_console()
    keys = swept or [k for k in ("M", "N", "K") if ranked and k in ranked[0]]
    table = Table(title=f"top {min(top, len(ranked))} of {len(ranked)} predicted points ({costs} costs)",
                  title_justify="left")  # fmt: skip
    for col in ("rank", "point", "arch", *keys, "time us", "TFLOPS", "smem KiB", "bottleneck"):
        table.add_column(col, justify="left" if col in ("arch", "bottleneck") else "right")
    for i, row in enumerate(ranked[:top], start=1):
        table.add_row(str(i), str(row["point"]), row["arch"], *(str(row.get(k)) for k in keys),
                      f"{row['time_us']:,.2f}", f"{row['tflops']:,.1f}",
                      f"{(row['smem_bytes_per_cta'] or 0) / 1024:.0f}", str(row.get("bottleneck") or "").split(":")[0])  # fmt: skip
    console.print(table)
    console.print(
        f"{status.total} points: {result.predicted} predicted, {status.reused} reused, {status.refused} refused, "
        f"{status.failed} failed; {result.executor}, {result.wall_s:.1f} s"
        + (f"; wrote {out}" if out else ""),
        highlight=False,
    )
    reasons: dict[str, int] = {}
    for _, reason in result.refusals:
        short = reason.split(": ", 1)[-1]
        reasons[short] = reasons.get(short, 0) + 1
    for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1])[:5]:
        console.print(f"refused ({count}): {reason}", highlight=False)
