"""The ``gpusim`` command line. Every user error is one line on stderr and exit status 2."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from gpusim.cli_guard import PLOT_SUFFIXES, TRACE_SUFFIXES, YAML_SUFFIXES, check_output_path, run_guarded
from gpusim.cli_guard import write_json as _print_json
from gpusim.errors import InputError

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
    datasheet: Annotated[
        bool, typer.Option("--datasheet", help="Datasheet costs instead of the shipped calibration.")
    ] = False,
    trace: Annotated[
        str | None, typer.Option("--trace", help="Write a Chrome/Perfetto trace JSON here.")
    ] = None,
    plot: Annotated[
        str | None, typer.Option("--plot", help="Write a timeline PNG (Gantt of one SM group + HBM GB/s).")
    ] = None,
    sm: Annotated[
        int | None, typer.Option("--sm", help="SM group to plot (default: the busiest); see the trace.")
    ] = None,
    window: Annotated[
        str | None,
        typer.Option("--window", help="Plot window START_US:END_US (default: ~3 tile periods mid-kernel)."),
    ] = None,
) -> None:
    """Simulate a schedule on an arch: time, TFLOPS, bandwidth, utilization per unit and the bottleneck."""
    from gpusim.arch import load_arch
    from gpusim.autotune import is_auto, predict_auto
    from gpusim.report.console import make_console
    from gpusim.report.summary import prediction_tables, summarize
    from gpusim.schedule.load import _read_spec as read_spec
    from gpusim.schedule.load import load_schedule, parse_override, schedule_path

    check_output_path(plot, "--plot", PLOT_SUFFIXES)
    check_output_path(trace, "--trace", TRACE_SUFFIXES)
    overrides = dict(parse_override(s) for s in sets or [])
    if (sm is not None or window is not None) and plot is None:
        raise InputError("--sm and --window choose what --plot draws; add --plot FILE.png")
    if is_auto(schedule):
        if trace is not None or plot is not None:
            raise InputError(
                "--trace and --plot need a named schedule (run auto first, then predict its choice)"
            )
        from gpusim.report.attribution import attribute_choice

        auto_arch = load_arch(arch or "h100", calibrated=not datasheet)
        prediction = attribute_choice(predict_auto(schedule, auto_arch, overrides), auto_arch, overrides)
    else:
        arch_obj = load_arch(
            arch or read_spec(schedule_path(schedule)).reference_arch, calibrated=not datasheet
        )
        sched = load_schedule(schedule, arch_obj, overrides)
        from gpusim.sim.engine import simulate

        run = simulate(sched, arch_obj, record=True)
        prediction = summarize(run)
        if plot is not None:
            from gpusim.report.plot_timeline import plot_timeline
            from gpusim.report.timeline import check_sm, parse_window

            sm_index = check_sm(run, sm) if sm is not None else None
            window_ns = parse_window(window, run.kernel_ns) if window is not None else None
            plot_timeline(run, plot, sm_index, window_ns, verdict=prediction.verdict)
        if trace is not None:
            from gpusim.report.trace import write_trace

            write_trace(run, trace)
    from gpusim.calibrate.intervals import prediction_interval

    interval = prediction_interval(prediction.arch, schedule, prediction.time_us, prediction.costs)
    if as_json:
        _print_json({**prediction.as_dict(), "interval": interval})
        return
    console = make_console()
    for table in prediction_tables(prediction):
        console.print(table)
    console.print(interval["text"])


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


@app.command("compare")
def compare_cmd(
    schedules: Annotated[list[str], typer.Argument(help="One or more schedule names (or auto:gemm).")],
    arch: Annotated[
        str, typer.Option("--arch", "-a", help="Arch id, or several comma-separated (v100,a100,h100,b200).")
    ] = "",
    sets: Annotated[
        list[str] | None, typer.Option("--set", "-s", help="KEY=VALUE override applied to every variant.")
    ] = None,
    vs: Annotated[
        list[str] | None,
        typer.Option("--vs", help="An alternative KEY=VALUE[,KEY=VALUE] set; each --vs adds a variant."),
    ] = None,
    as_json: JsonFlag = False,
    plot: Annotated[str | None, typer.Option("--plot", help="Write a grouped bar chart PNG here.")] = None,
) -> None:
    """Run variants side by side (schedules, --vs parameter sets, or comma-separated archs): time,
    TFLOPS, utilizations and the verdict of each."""
    from gpusim.report.compare import build_variants, compare, compare_rows, compare_table
    from gpusim.report.console import make_console

    check_output_path(plot, "--plot", PLOT_SUFFIXES)
    archs = [a.strip() for a in arch.split(",") if a.strip()]
    variants = build_variants(schedules, archs, sets or [], vs or [])
    preds = compare(variants)
    if plot is not None:
        from gpusim.report.plot_compare import plot_compare

        plot_compare(variants, preds, plot)
    if as_json:
        _print_json(compare_rows(variants, preds))
        return
    make_console().print(compare_table(variants, preds))


@app.command("roofline")
def roofline_cmd(
    schedules: Annotated[
        list[str] | None,
        typer.Argument(help="Schedules to place (default: every built-in schedule legal here)."),
    ] = None,
    arch: Annotated[str, typer.Option("--arch", "-a", help="Arch id, alias or YAML path.")] = "h100",
    sets: Annotated[
        list[str] | None, typer.Option("--set", "-s", help="KEY=VALUE problem or parameter override.")
    ] = None,
    plot: Annotated[str | None, typer.Option("--plot", help="Write the roofline PNG here.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """The arch's roofs (HBM, L2, tensor peak per dtype) and each predicted kernel by arithmetic intensity."""
    from gpusim.arch import load_arch
    from gpusim.report.roofline import predict_points, roofs
    from gpusim.schedule.load import builtin_schedule_names, parse_override

    check_output_path(plot, "--plot", PLOT_SUFFIXES)
    arch_obj = load_arch(arch)
    overrides = dict(parse_override(s) for s in sets or [])
    names = list(schedules or builtin_schedule_names())
    points, skipped = predict_points(arch_obj, names, overrides)
    if schedules and not points:
        raise InputError("roofline: none of the schedules could be placed: " + "; ".join(skipped))
    r = roofs(arch_obj)
    if plot is not None:
        from gpusim.report.plot_roofline import plot_roofline

        plot_roofline(r, points, plot)
    if as_json:
        _print_json({"roofs": r.as_dict(), "points": [p.as_dict() for p in points], "skipped": skipped})
        return
    from rich.table import Table

    from gpusim.report.console import make_console

    table = Table(
        title=f"roofline on {arch_obj.id}: HBM {r.hbm_bytes_per_s / 1e12:.2f} TB/s", title_justify="left"
    )
    for col in ("schedule", "dtype", "FLOP/byte (HBM)", "TFLOPS", "roof TFLOPS", "of roof"):
        table.add_column(col, justify="left" if col in ("schedule", "dtype") else "right")
    for p in points:
        table.add_row(p.label, p.dtype, f"{p.intensity_flop_per_byte:,.1f}", f"{p.tflops:,.1f}",
                      f"{p.bound_tflops:,.1f}", f"{p.tflops / p.bound_tflops:.0%}")  # fmt: skip
    console = make_console()
    console.print(table)
    for line in skipped:
        console.print(f"not placed: {line}", highlight=False)


FilesArg = Annotated[list[str], typer.Argument(help="Measurement CSV files (data/measurements/*.csv).")]


@app.command("validate")
def validate_cmd(
    files: FilesArg,
    arch: Annotated[str | None, typer.Option("--arch", "-a", help="Only rows of this arch.")] = None,
    datasheet: Annotated[bool, typer.Option("--datasheet", help="Datasheet costs for every arch.")] = False,
    calibrated: Annotated[
        bool, typer.Option("--calibrated", help="Shipped calibrated costs where they exist (the default).")
    ] = False,
    row_timeout: Annotated[
        float,
        typer.Option(
            "--row-timeout", help="Skip a row whose prediction takes longer (seconds; 0: no limit)."
        ),
    ] = 20.0,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Processes (default: CPU count).")] = 0,
    plot: Annotated[
        str | None, typer.Option("--plot", help="Also write a predicted-vs-measured plot (PNG) here.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Predict every measured row and report the error per arch and schedule family."""
    from gpusim.calibrate.report import validate_tables
    from gpusim.calibrate.validate import run_validate
    from gpusim.report.console import make_console

    check_output_path(plot or None, "--plot", PLOT_SUFFIXES)
    if datasheet and calibrated:
        raise InputError("--datasheet and --calibrated exclude each other")
    results, summary = run_validate(
        files,
        costs="datasheet" if datasheet else "calibrated",
        arch_filter=arch,
        jobs=jobs or None,
        row_timeout_s=row_timeout or None,
    )
    if plot:
        from gpusim.calibrate.plot import plot_predicted_vs_measured

        plot_predicted_vs_measured(results, plot, f"gpusim: predicted vs measured ({summary['costs']} costs)")
    if as_json:
        _print_json({"rows": [r.as_dict() for r in results], "summary": summary})
        return
    console = make_console()
    for table in validate_tables(results, summary):
        console.print(table)


@app.command("calibrate")
def calibrate_cmd(
    files: FilesArg,
    arch: Annotated[str, typer.Option("--arch", "-a", help="Arch id to calibrate.")],
    fit: Annotated[
        str | None,
        typer.Option("--fit", help="Comma-separated parameters to fit (default: what the rows identify)."),
    ] = None,
    out: Annotated[
        str | None,
        typer.Option("--out", help="Write the overlay here (default: archs/calibrated/<id>.yaml)."),
    ] = None,
    max_rows: Annotated[
        int, typer.Option("--max-rows", help="Fit on at most this many rows (spread evenly).")
    ] = 14,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report only; write nothing.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Fit the arch's calibration block to measured rows (least squares on log error, bounded)."""
    from pathlib import Path

    from gpusim.arch import load_arch
    from gpusim.calibrate.fit import calibrate
    from gpusim.calibrate.measurements import read_measurements
    from gpusim.calibrate.overlay import overlay_path, write_overlay
    from gpusim.calibrate.params import parse_fit_names
    from gpusim.calibrate.report import calibrate_text

    if not dry_run:
        check_output_path(out, "--out", YAML_SUFFIXES)
    if max_rows < 1:
        raise InputError(f"--max-rows {max_rows}: expected at least 1")
    base = load_arch(arch)
    result = calibrate(read_measurements(list(files)), base, parse_fit_names(fit, base), max_rows=max_rows)
    target = Path(out) if out else overlay_path(base.id)
    if not dry_run:
        write_overlay(target, base.id, result["calibration"])
        result["written"] = str(target)
    if as_json:
        _print_json(result)
        return
    sys.stdout.write(calibrate_text(result) + "\n")


@app.command("measure")
def measure_cmd(
    out: Annotated[str, typer.Option("--out", help="Measurement CSV to write.")] = "measured_local.csv",
    quick: Annotated[bool, typer.Option("--quick", help="A smaller set (for a smoke test).")] = False,
) -> None:
    """Time a standard set on the local NVIDIA GPU (torch.mm GEMMs, SDPA attention, a copy kernel)."""
    from gpusim.calibrate.measure import run_measure

    n = run_measure(out, quick=quick)
    sys.stdout.write(f"wrote {n} rows to {out}\n")


def main() -> None:
    """Entry point: run the app; every failure is one line on stderr with a documented exit status."""
    run_guarded(app)


if __name__ == "__main__":
    main()
