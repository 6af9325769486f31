"""The ``gpusim`` command line. Every user error is one line on stderr and exit status 2."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from gpusim.errors import GpusimError, InputError

app = typer.Typer(
    name="gpusim",
    help="Resource-model simulator for GPU kernel schedules (Volta to Blackwell).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
archs_app = typer.Typer(help="List the built-in architectures, or show one in full.", no_args_is_help=False)
app.add_typer(archs_app, name="archs")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


@archs_app.callback(invoke_without_command=True)
def archs_list(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """One table of every built-in arch: SMs, clocks, HBM, L2, dense peaks, ridge point, budgets."""
    if ctx.invoked_subcommand is not None:
        return
    from gpusim.arch import all_archs
    from gpusim.report.arch_table import arch_summary, archs_table
    from gpusim.report.console import make_console

    archs = all_archs()
    if as_json:
        _print_json([arch_summary(a) for a in archs])
        return
    make_console().print(archs_table(archs))


@archs_app.command("show")
def archs_show(
    arch_id: Annotated[str, typer.Argument(help="Arch id, alias (h100_sxm, sm_90) or path to a YAML file.")],
    as_json: JsonFlag = False,
) -> None:
    """One arch in full, with derived peaks, ridge points and every source."""
    from gpusim.arch import load_arch
    from gpusim.report.arch_table import arch_detail, arch_detail_tables
    from gpusim.report.console import make_console

    arch = load_arch(arch_id)
    if as_json:
        _print_json(arch_detail(arch))
        return
    console = make_console()
    for table in arch_detail_tables(arch):
        console.print(table)


@app.command("predict")
def predict(
    schedule: Annotated[
        str, typer.Argument(help="Schedule name (see `gpusim schedules`) or path to a YAML file.")
    ],
    arch: Annotated[str, typer.Option("--arch", "-a", help="Arch id, alias or YAML path.")] = "",
    sets: Annotated[
        list[str] | None, typer.Option("--set", "-s", help="KEY=VALUE problem or parameter override.")
    ] = None,
    as_json: JsonFlag = False,
    trace: Annotated[
        str | None, typer.Option("--trace", help="Write a Chrome/Perfetto trace JSON here.")
    ] = None,
) -> None:
    """Simulate a schedule on an arch: time, TFLOPS, bandwidth, utilization per unit and the bottleneck."""
    from gpusim.arch import load_arch
    from gpusim.autotune import is_auto, predict_auto
    from gpusim.report.console import make_console
    from gpusim.report.summary import prediction_tables, summarize
    from gpusim.schedule.load import _read_spec as read_spec
    from gpusim.schedule.load import load_schedule, parse_override, schedule_path

    overrides = dict(parse_override(s) for s in sets or [])
    if is_auto(schedule):
        if trace is not None:
            raise InputError("--trace needs a named schedule (run auto first, then predict its choice)")
        prediction = predict_auto(schedule, load_arch(arch or "h100"), overrides)
    else:
        arch_obj = load_arch(arch or read_spec(schedule_path(schedule)).reference_arch)
        sched = load_schedule(schedule, arch_obj, overrides)
        from gpusim.sim.engine import simulate

        run = simulate(sched, arch_obj, record=trace is not None)
        prediction = summarize(run)
        if trace is not None:
            from gpusim.report.trace import write_trace

            write_trace(run, trace)
    if as_json:
        _print_json(prediction.as_dict())
        return
    console = make_console()
    for table in prediction_tables(prediction):
        console.print(table)


@app.command("schedules")
def schedules_list(as_json: JsonFlag = False) -> None:
    """List the built-in schedules with their reference arch and description."""
    from rich.table import Table

    from gpusim.report.console import make_console
    from gpusim.schedule.load import _read_spec as read_spec
    from gpusim.schedule.load import builtin_schedule_names, schedule_path

    specs = [read_spec(schedule_path(name)) for name in builtin_schedule_names()]
    if as_json:
        _print_json(
            [
                {"schedule": s.schedule, "reference_arch": s.reference_arch, "description": s.description}
                for s in specs
            ]
        )
        return
    table = Table(title="gpusim schedules")
    for col in ("schedule", "reference arch", "description"):
        table.add_column(col)
    for s in specs:
        table.add_row(s.schedule, s.reference_arch, " ".join(s.description.split()))
    make_console().print(table)


def main() -> None:
    """Entry point: run the app, turning gpusim errors into one line and exit status 2."""
    try:
        app()
    except GpusimError as exc:
        sys.stderr.write(f"gpusim: error: {exc}\n")
        sys.exit(2)
    except KeyboardInterrupt:
        sys.stderr.write("gpusim: interrupted\n")
        sys.exit(130)


if __name__ == "__main__":
    main()
